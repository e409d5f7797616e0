#!/usr/bin/env node
/**
 * `blackbox-capture-emulator`: starts the emulator and prints its addresses and
 * credentials, for integrators' own CI and manual testing; or, with `conformance`,
 * checks a loader file against the behaviour of loader 5.2.2. Ports come from the OS
 * unless EMULATOR_PORT_BASE is set: then the loader on base, the collector on base+1, the
 * third party on base+2, the token on base+3, the account host (BASE_URL, ACCOUNT_URL) on
 * base+4, retrieval on base+5 and the API host (API_URL) on base+6.
 */
import { readFileSync } from 'node:fs';
import { startEmulator } from './index.js';
import { runConformance, type ConformancePage } from './conformance.js';
import { lineSafe, parseLimits, parsePortBase } from './cli-env.js';

const USAGE = `usage: blackbox-capture-emulator [--help] [--version]
       blackbox-capture-emulator conformance <loader.js> [--reference <loader.js>] [--chromium <path>]

Without a command: starts the emulator and prints what an app needs (its addresses, client id
and client secret) as JSON, or with --env as environment variables (LOADER_URL, COLLECTOR_URL,
TOKEN_URL, BASE_URL and ACCOUNT_URL (the account host), API_URL (upload and finalize),
RETRIEVAL_URL, CLIENT_ID, CLIENT_SECRET); stops on SIGINT or SIGTERM.
Environment: EMULATOR_PORT_BASE (fixed ports: base to base+6), EMULATOR_CLIENT_ID,
EMULATOR_CLIENT_SECRET, EMULATOR_LIMITS (on: the service's documented rate limits, the
default; off: none).

conformance: runs the conformance table in Chromium with <loader.js> and with the emulator's
loader (the behaviour of loader 5.2.2), or --reference, and lists the cases that differ; exits 1
when any does. Needs the package playwright-core and a Chromium (--chromium, CHROMIUM_PATH, or
/usr/bin/chromium).`;

function version(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

function fail(message: string, code = 2): never {
  console.error(`blackbox-capture-emulator: ${message}`);
  if (code === 2) console.error(USAGE.split('\n\n')[0]);
  process.exit(code);
}

async function conformance(args: string[]): Promise<void> {
  let loader: string | undefined;
  let reference: string | undefined;
  let chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--reference' || arg === '--chromium') {
      const value = args[++i];
      if (!value) fail(`${arg} needs a value`);
      if (arg === '--reference') reference = value;
      else chromium = value;
    } else if (arg.startsWith('-')) fail(`unknown option ${arg}`);
    else if (loader === undefined) loader = arg;
    else fail(`unexpected argument ${arg}`);
  }
  if (!loader) fail('conformance needs a loader file');
  const read = (file: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return fail(`cannot read ${file}`, 1);
    }
  };
  const candidate = read(loader);
  const referenceSource = reference === undefined ? undefined : read(reference);
  let playwright: {
    chromium: { launch(options: object): Promise<{ newPage(): Promise<ConformancePage>; close(): Promise<void> }> };
  };
  try {
    // An optional peer: `as string` keeps tsc from requiring its types.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    playwright = (await import('playwright-core' as string)) as typeof playwright;
  } catch {
    return fail('conformance needs the package playwright-core: npm install --save-dev playwright-core', 1);
  }
  const browser = await playwright.chromium.launch({
    executablePath: chromium,
    args: [
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-gpu',
      '--no-first-run',
    ],
  });
  try {
    const results = await runConformance(await browser.newPage(), candidate, referenceSource);
    for (const { testCase, equal, reference: expected, candidate: actual } of results) {
      console.log(`${equal ? 'same   ' : 'DIFFERS'} ${testCase.name}`);
      if (!equal) {
        for (const key of Object.keys(expected) as Array<keyof typeof expected>) {
          if (JSON.stringify(expected[key]) !== JSON.stringify(actual[key])) {
            console.log(
              `  ${key}:\n    reference: ${JSON.stringify(expected[key])}\n    ${loader}: ${JSON.stringify(actual[key])}`,
            );
          }
        }
      }
    }
    const differing = results.filter((r) => !r.equal).length;
    console.log(`${results.length - differing} passed, ${differing} failed`);
    process.exitCode = differing ? 1 : 0;
  } finally {
    await browser.close();
  }
}

function serve(args: string[]): void {
  const asEnv = args[0] === '--env';
  if (args.length > (asEnv ? 1 : 0)) fail(`unknown option ${args[asEnv ? 1 : 0]}`);
  let base: number | undefined;
  if (process.env.EMULATOR_PORT_BASE) {
    const parsed = parsePortBase(process.env.EMULATOR_PORT_BASE);
    if ('error' in parsed) fail(parsed.error);
    base = parsed.base;
  }
  const limits = parseLimits(process.env.EMULATOR_LIMITS);
  if ('error' in limits) fail(limits.error);
  for (const name of ['EMULATOR_CLIENT_ID', 'EMULATOR_CLIENT_SECRET']) {
    const refused = lineSafe(name, process.env[name] ?? '');
    if (refused) fail(refused);
  }
  const ports =
    base === undefined
      ? undefined
      : {
          loader: base,
          collector: base + 1,
          thirdParty: base + 2,
          auth: base + 3,
          // The account host where the one API host was, and the API host added last: the
          // ports of BASE_URL and RETRIEVAL_URL stay what they were.
          account: base + 4,
          retrieval: base + 5,
          api: base + 6,
        };
  startEmulator({
    limits: limits.limits,
    ...(ports ? { ports } : {}),
    ...(process.env.EMULATOR_CLIENT_ID ? { clientId: process.env.EMULATOR_CLIENT_ID } : {}),
    ...(process.env.EMULATOR_CLIENT_SECRET ? { clientSecret: process.env.EMULATOR_CLIENT_SECRET } : {}),
  }).then(
    (emulator) => {
      // One list: each field of the JSON output and, where it has one, its variable of --env.
      const printed: Array<[field: string, variable: string | undefined, value: string]> = [
        ['loaderUrl', 'LOADER_URL', emulator.loaderUrl],
        ['collectorUrl', 'COLLECTOR_URL', emulator.collectorUrl],
        ['thirdPartyUrl', undefined, emulator.thirdPartyUrl],
        ['tokenUrl', 'TOKEN_URL', emulator.tokenUrl],
        ['baseUrl', 'BASE_URL', emulator.baseUrl],
        ['accountUrl', 'ACCOUNT_URL', emulator.accountUrl],
        ['apiUrl', 'API_URL', emulator.apiUrl],
        ['retrievalUrl', 'RETRIEVAL_URL', emulator.retrievalUrl],
        ['clientId', 'CLIENT_ID', emulator.clientId],
        ['clientSecret', 'CLIENT_SECRET', emulator.clientSecret],
      ];
      const variables = printed.flatMap(([, name, value]) => (name ? [[name, value] as const] : []));
      // Each variable one line: a value that would break one is refused, not printed.
      for (const [name, value] of variables) {
        const refused = lineSafe(name, value);
        if (refused) return void emulator.close().then(() => fail(refused, 1));
      }
      // Listening for the signals before printing: whoever reads the addresses may stop it at
      // once, and Deno starts to listen for a signal only a moment after it is asked to.
      const stop = () => void emulator.close().then(() => process.exit(0));
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      // The secret is the emulator's own test credential, printed so that the server kit can be pointed at it.
      console.log(
        asEnv
          ? variables.map(([name, value]) => `${name}=${value}`).join('\n')
          : JSON.stringify(Object.fromEntries(printed.map(([field, , value]) => [field, value])), null, 2),
      );
    },
    (error: Error) => fail(error.message, 1),
  );
}

const [command, ...rest] = process.argv.slice(2);
if (command === '--help' || command === '-h') console.log(USAGE);
else if (command === '--version' || command === '-v') console.log(version());
else if (command === 'conformance') conformance(rest).catch((error: Error) => fail(error.message, 1));
else if (command === undefined || command.startsWith('-')) serve(command === undefined ? [] : [command, ...rest]);
else fail(`unknown command ${command}`);
