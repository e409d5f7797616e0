// The docs' Nuxt snippets, as written, in a hand-written Nuxt 4 app on the packed tarball:
// `nuxt build`, then the built server (`node .output/server/index.mjs`) and `nuxt dev`, with
// the emulator as the service; docs/frameworks.md's page in Chromium, behind the shop of the
// other framework tests (test/support/framework-site.ts). Nuxt is not a devDependency (some 570 packages): it is
// installed from its committed lockfile into the user cache once per lockfile, and the test is skipped,
// named, when the registry cannot be reached (with CI set, that fails it). The proxy's route
// is the h3 test's (test/docs/readme-frameworks.test.ts): here its upstream would be the vendor's
// real host.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { checkedTransaction } from '../support/accepted.js';
import { callbackBodyOf } from '../support/callback-body.js';
import { postFrom } from '../support/http.js';
import { freePort } from '../support/processes.mjs';
import { fileOf, snippet } from '../support/readme.js';
import {
  consoleProblems,
  forwardTo,
  launchChromium,
  payWhileCollecting,
  reportRemovals,
  startFrameworkSite,
  submitListened,
} from '../support/framework-site.js';
import { cachedInstall, SITES } from '../support/cached-install.js';
import { BLACKBOX } from '../support/emulated-kit.mjs';

/** Nuxt's packages (test/package/sites/nuxt), kept between runs outside the clone; the app beside them. */
const toolchain = cachedInstall(join(SITES, 'nuxt'));
const { dir: CACHE, app: APP, installed: haveNuxt, write } = toolchain;
const NUXT_VERSION = toolchain.versions.nuxt;
const SERVICE_ADDRESS = '127.0.0.2';

let emulator: Emulator;

beforeAll(async () => {
  if (!haveNuxt) return;
  emulator = await startEmulator({ accountRequestsPerSecond: 0 });
  toolchain.clearApp();
  write('package.json', JSON.stringify({ name: 'shop', private: true, type: 'module' }));
  write(
    'nuxt.config.ts',
    "export default defineNuxtConfig({ compatibilityDate: '2026-11-01', telemetry: false, devtools: { enabled: false } });\n",
  );
  write('app/app.vue', '<template><div>shop<NuxtPage /></div></template>\n');
  write('app/pages/checkout.vue', snippet('nuxt-checkout').code);
  write('server/lib/device-risk.ts', snippet('server-setup').code);
  write('server/lib/callbacks.ts', snippet('server-callbacks').code);
  for (const name of ['server-nuxt-caller', 'server-nuxt', 'server-nuxt-callback', 'server-nuxt-proxy'])
    write(fileOf(snippet(name)), snippet(name).code);
  // The snippets' "yours", declared for the type check and defined by the preload below.
  write(
    'server/lib/yours.d.ts',
    'declare function sessionUser(request: Request): Promise<{ orderId: string; id: string } | null>;\n' +
      'declare function decideOrder(...args: unknown[]): Promise<void>;\n',
  );
  // The service's EU hosts to the emulator, as the other snippet tests route them.
  write(
    'preload.mjs',
    `const routes = JSON.parse(process.env.EMULATOR_ROUTES);
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const url = new URL(input instanceof Request ? input.url : input);
  const to = routes[url.origin];
  if (!to) return realFetch(input, init);
  const headers = new Headers(init?.headers);
  headers.set('x-forwarded-host', url.host);
  return realFetch(new URL(url.pathname + url.search, to), { ...init, headers });
};
globalThis.sessionUser = async (request) =>
  /session=ok/.test(request.headers.get('cookie') ?? '') ? { orderId: 'order-nuxt', id: 'user-nuxt' } : null;
globalThis.decideOrder = async (...args) => console.log('decided ' + JSON.stringify(args));
`,
  );
  // The package as npm users get it, beside Nuxt's packages.
  toolchain.installPackage();
  // Nuxt's output is nothing to wait for: the build is done when the command exits 0.
  const build = spawn(process.execPath, [NUXT, 'build'], {
    cwd: APP,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: appEnv(),
  });
  let output = '';
  build.stdout.on('data', (chunk) => (output += chunk));
  build.stderr.on('data', (chunk) => (output += chunk));
  const code = await new Promise((resolve) => build.once('exit', resolve));
  if (code !== 0) throw new Error(`nuxt build exited ${String(code)}:\n${output}`);
}, 600_000);

/** Every server started, stopped at the end even when a test timed out before its own `finally`. */
const stops: Array<() => Promise<void>> = [];

afterAll(async () => {
  for (const stop of stops) await stop();
  await emulator?.close();
  toolchain.clearApp();
});

/**
 * This environment without the test runner's marks: under `VITEST` or `NODE_ENV=test`, Nuxt's
 * logger (which carries the server's console under nuxt dev) prints nothing.
 */
function appEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NUXT_TELEMETRY_DISABLED: '1', NO_COLOR: '1' };
  for (const name of Object.keys(env)) if (/^(VITEST|TEST$|NODE_ENV$)/.test(name)) delete env[name];
  return env;
}

const NUXT = join(CACHE, 'node_modules', 'nuxt', 'bin', 'nuxt.mjs');

/**
 * Starts a process in the app (Nuxt's command, or the built server) serving on `port`;
 * resolves once the endpoint answers (a POST without an Origin: 403), whatever it prints.
 */
async function run(
  args: string[],
  port: number,
  env: NodeJS.ProcessEnv,
): Promise<{ output: () => string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, args[0]!.endsWith('.mjs') ? args : [NUXT, ...args], {
    cwd: APP,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...appEnv(), ...env },
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(-child.pid!, 'SIGTERM');
    await exited;
  };
  stops.push(stop);
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited ${child.exitCode}:\n${output}`);
    if (Date.now() - started > 180_000) {
      await stop();
      throw new Error(`${args.join(' ')} did not serve the endpoint in 180 s:\n${output}`);
    }
    const answer = await post(port, '/device-risk', '{}', {}).catch(() => undefined);
    if (answer?.status === 403) return { output: () => output, stop };
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** A POST to the app's server from a chosen loopback address. */
const post = (port: number, path: string, body: string, headers: Record<string, string>, localAddress?: string) =>
  postFrom(`http://127.0.0.1:${port}`, path, body, headers, localAddress, 60_000);

/** The server's environment: the emulator's credentials, the service's callback address. */
const serverEnv = (port: number): NodeJS.ProcessEnv => ({
  NODE_OPTIONS: `--import=${join(APP, 'preload.mjs')}`,
  EMULATOR_ROUTES: JSON.stringify({
    'https://auth.emea-1.jumio.ai': new URL(emulator.tokenUrl).origin,
    'https://account.emea-1.jumio.ai': emulator.accountUrl,
    'https://api.emea-1.jumio.ai': emulator.apiUrl,
    'https://retrieval.emea-1.jumio.ai': emulator.retrievalUrl,
  }),
  CLIENT_ID: emulator.clientId,
  CLIENT_SECRET: emulator.clientSecret,
  WORKFLOW_KEY: '10011',
  CALLBACK_SOURCES: SERVICE_ADDRESS,
  HOST: '127.0.0.1',
  PORT: String(port),
});

/** A capture through the endpoint; its callback from another address with a forged header, then from the service's. */
async function captureAndCallBack(port: number) {
  const before = emulator.inspect.transactions().length;
  const capture = await post(port, '/device-risk', JSON.stringify({ blackbox: BLACKBOX }), {
    origin: 'https://shop.example',
    cookie: 'session=ok',
    'content-type': 'application/json',
  });
  // Accepted at once (the default), checked in the background.
  expect([capture.status, capture.status === 202 ? '' : capture.text]).toEqual([202, '']);
  const { accountId, workflowExecutionId } = await checkedTransaction(emulator, before);
  expect(emulator.inspect.transaction(workflowExecutionId!)).toMatchObject({
    blackboxes: [BLACKBOX],
    customerInternalReference: 'order-nuxt',
  });
  const body = callbackBodyOf(
    { accountId: accountId!, workflowExecutionId: workflowExecutionId! },
    'https://retrieval.emea-1.jumio.ai',
    '10011',
  );
  const json = { 'content-type': 'application/json' };
  const forged = await post(port, '/device-risk/callback', body, { ...json, 'x-forwarded-for': SERVICE_ADDRESS });
  const service = await post(port, '/device-risk/callback', body, json, SERVICE_ADDRESS);
  return { workflowExecutionId: workflowExecutionId!, forged: forged.status, service: service.status };
}

const decided = (output: string, id: string) =>
  output.includes(`decided ${JSON.stringify([id, 'PROCESSED', { type: 'NOT_EXECUTED', label: 'TECHNICAL_ERROR' }])}`);

/**
 * Waits for the shop's `decideOrder` line. A retrieval the busy emulator answers late is retried
 * with the kit's back-off (1 s, doubling), so the wait is generous; on failure the server's
 * output is the message, the only account of what the kit did.
 */
async function decisionIn(output: () => string, id: string) {
  try {
    await expect.poll(() => decided(output(), id), { timeout: 90_000, interval: 250 }).toBe(true);
  } catch (error) {
    throw new Error(`no decision for ${id} in 90 s; the server printed:\n${output().slice(-4000)}`, { cause: error });
  }
}

describe.skipIf(!haveNuxt)(`the Nuxt snippets in a Nuxt ${NUXT_VERSION} app`, () => {
  it('built (node .output/server/index.mjs): a capture, the callback from the socket, a forged header refused', async () => {
    const port = await freePort();
    const server = await run(['.output/server/index.mjs'], port, serverEnv(port));
    try {
      const { workflowExecutionId, forged, service } = await captureAndCallBack(port);
      expect([forged, service]).toEqual([403, 200]);
      await decisionIn(server.output, workflowExecutionId);
      expect(server.output()).toMatch(/callback was refused with 403 source_not_allowed.*127\.0\.0\.1/);
    } finally {
      await server.stop();
    }
  });

  it("nuxt dev: the service's callback is taken (X-Forwarded-For, written by nuxt dev's proxy)", async () => {
    const port = await freePort();
    const dev = await run(['dev', '--port', String(port), '--host', '127.0.0.1'], port, serverEnv(port));
    try {
      const { workflowExecutionId, service } = await captureAndCallBack(port);
      // The forged one is taken too: nuxt dev passes a client's header on, as the docs say.
      expect(service).toBe(200);
      await decisionIn(dev.output, workflowExecutionId);
    } finally {
      await dev.stop();
    }
  });

  it("'nuxt-checkout': rendered on the server, hydrated without a warning; a submit at once posts the final blackbox", async () => {
    const port = await freePort();
    const shop = await startFrameworkSite(forwardTo(`http://127.0.0.1:${port}`));
    const server = await run(['.output/server/index.mjs'], port, serverEnv(port));
    const browser = await launchChromium();
    try {
      // The server rendered the tag with its attributes; importing the entry there threw nothing.
      const html = await fetch(`${shop.origin}/checkout?cart=cart-nuxt`).then((answer) => answer.text());
      expect(html).toMatch(
        /<blackbox-capture name="blackbox" loader-url="\/static\/vendor\/loader.js"[^>]*checkout-id="cart-nuxt"/,
      );
      const page = await browser.newPage();
      const problems = consoleProblems(page);
      await reportRemovals(page);
      await page.goto(`${shop.origin}/checkout?cart=cart-nuxt`);
      await submitListened(page);
      await page.waitForFunction(() => 'ready' in document.querySelector('blackbox-capture')!);
      const order = await payWhileCollecting(page, shop, 'blackbox-outcome');
      expect(order.order).toBe('o-1');
      // v-model through <BlackboxCapture>: the hint went once the blackbox came.
      expect(await page.getByText('Checking your device…').count()).toBe(0);
      await expect.poll(() => shop.posts.map((post) => post.checkout)).toEqual(['cart-nuxt']);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
      await server.stop();
      await shop.close();
    }
  });
});
