#!/usr/bin/env -S node --
/**
 * The package's command, `blackbox-capture` (dist/cli.js, package.json's bin): `doctor`
 * (src/doctor/cli.ts), `serve` and `serve healthcheck` (src/gateway/cli.ts, loaded only for
 * them), `--version` (the package's). No command, or an unknown one: the usage on stderr, exit 2.
 * The `--` of the #! line ends node's own options: Node 26 otherwise takes `--env-file` after the
 * script's name for its own, and exits 9 on a file it cannot read.
 */
import { readFileSync } from 'node:fs';

const USAGE = `usage: blackbox-capture doctor <page URL> [options]  (checks a checkout page's integration)
       blackbox-capture serve [--env-file <path>]...  (the gateway: docs/gateway.md)
       blackbox-capture serve healthcheck [--url <url>] [--timeout <seconds>]  (docs/deploy.md)
       blackbox-capture --version

blackbox-capture doctor --help and blackbox-capture serve --help say more.`;

/** The package's version, from the package.json beside dist/ (or src/). */
const version = () =>
  (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const [command, ...argv] = process.argv.slice(2);
if (command === '--help' || command === '-h') console.log(USAGE);
else if (command === '--version' || command === '-v') console.log(version());
else if (command === 'serve') {
  const { serve } = await import('./gateway/cli.js');
  await serve(argv);
} else if (command === 'doctor') {
  const { doctor } = await import('./doctor/cli.js');
  await doctor(argv);
} else {
  console.error(
    command === undefined ? 'blackbox-capture: no command given' : `blackbox-capture: unknown command ${command}`,
  );
  console.error(USAGE);
  process.exit(2);
}
