#!/usr/bin/env -S node --
/**
 * `blackbox-capture doctor <page URL>`: checks a checkout page's integration from the
 * outside (see doctor.ts) and prints pass, warn and fail lines with their fixes. Exits 1 on
 * a fail (for a deploy pipeline), 2 on bad usage.
 */
import { DEFAULT_URI_HOOK } from '../shared/constants.js';
import { formatReport, runDoctor, type DoctorOptions } from './doctor.js';
import { resolveAll } from './resolve.js';

const USAGE = `usage: blackbox-capture doctor <page URL> [--json] [--prefix ${DEFAULT_URI_HOOK}] [--version general5]
                                [--loader-url <url>] [--third-party-host <origin>] [--collector-url <url>]
                                [--cookie-prefix bbc_]
       blackbox-capture serve [--env-file <path>]...  (the gateway: docs/gateway.md)

Fetches the page and the first-party scripts behind it, and checks the proxy (404 from an
unstripped prefix or from a prefix stripped too early, HTML from a fallback page, a cached
dyn_wdp.js, cookies dropped, vendor cookies set outside the prefix or the bbc_ namespace;
with the emulator's collector as --collector-url, the shop's cookies, Authorization, the
client's claimed address or the shop's Host reaching the collector), the Content-Security-Policy, the loader URL, a second loader tag
and the endpoint the page posts to. Reads the <blackbox-capture> element, the script tag's
data attributes, or --loader-url for a page whose bundle imports the package. Exits 1 when a
check fails.`;

function fail(message: string): never {
  console.error(`blackbox-capture: ${message}`);
  console.error(USAGE);
  process.exit(2);
}

const FLAGS: Record<string, keyof DoctorOptions> = {
  '--prefix': 'prefix',
  '--version': 'version',
  '--loader-url': 'loaderUrl',
  '--third-party-host': 'thirdPartyHost',
  '--collector-url': 'collectorUrl',
  '--cookie-prefix': 'cookiePrefix',
};

const [command, ...argv] = process.argv.slice(2);
if (command === '--help' || command === '-h' || command === undefined) {
  console.log(USAGE);
  process.exit(command === undefined ? 2 : 0);
}
if (command === 'serve') {
  // The gateway (src/gateway/): its own module, loaded only for it.
  const { serve } = await import('../gateway/cli.js');
  await serve(argv);
} else if (command !== 'doctor') fail(`unknown command ${command}`);
else await doctor(argv);

async function doctor(args: string[]): Promise<void> {
  let url: string | undefined;
  let asJson = false;
  // Names are resolved, so that a page cannot send the doctor to a private address (doctor.ts).
  const options: DoctorOptions = { lookup: resolveAll };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--help' || arg === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else if (arg === '--json') asJson = true;
    else if (FLAGS[arg]) {
      const value = args[++i];
      if (!value) fail(`${arg} needs a value`);
      (options as Record<string, string>)[FLAGS[arg]] = value;
    } else if (arg.startsWith('-')) fail(`unknown option ${arg}`);
    else if (url === undefined) url = arg;
    else fail(`unexpected argument ${arg}`);
  }
  if (!url || !/^https?:\/\//.test(url)) fail('doctor needs the http(s) URL of a checkout page');
  const report = await runDoctor(url, options);
  console.log(asJson ? JSON.stringify(report, null, 2) : formatReport(report));
  process.exit(report.ok ? 0 : 1);
}
