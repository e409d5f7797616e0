// The docs' Fastify and Nuxt/Nitro (h3) snippets, as written, on the built package against the
// emulator, over loopback sockets: a capture reaches the emulator as one transaction, a
// callback from an allowed address reaches onResult and one from another address with a
// forged X-Forwarded-For does not, the proxy serves a collector script (and POSTs a body as
// sent). The Nuxt routes run on h3's own app and Node listener, mounted where Nitro's file
// routing puts them, with `import.meta.dev` replaced as Nuxt's build replaces it.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { checkedTransaction } from '../support/accepted.js';
import { callbackBodyOf } from '../support/callback-body.js';
import { postFrom } from '../support/http.js';
import { fileOf, snippet } from '../support/readme.js';
import { routeFetchToEmulator, sessionUser, setSnippetEnv } from '../support/snippet-fetch.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// Under the package root, so that `blackbox-capture/server` resolves to dist/ by the
// package's own exports map, as in an integrator's project.
const SCRATCH = join(ROOT, '.scratch', `readme-frameworks-${process.pid}`);
const BLACKBOX = '0400' + 'nVQ+/abc'.repeat(150) + '==';
/** The service's callers in these tests; 127.0.0.1 is everyone else. */
const SERVICE_ADDRESS = '127.0.0.2';
/** The service's retrieval host, which the callbacks' hrefs name. */
const RETRIEVAL = 'https://retrieval.emea-1.jumio.ai';

let emulator: Emulator;
const realFetch = globalThis.fetch;
/** Fetch routed to the emulator, and what reached the vendor's first-party host through the proxy. */
let routed: ReturnType<typeof routeFetchToEmulator>;
const decisions: unknown[][] = [];
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  // The kit loads before fetch is replaced, so that its proxy calls the replacement.
  await import('../../dist/server.js');
  emulator = await startEmulator({ accountRequestsPerSecond: 0 });
  routed = routeFetchToEmulator(emulator);
  setSnippetEnv(emulator, { CALLBACK_SOURCES: SERVICE_ADDRESS });
  Object.assign(globalThis, {
    sessionUser,
    decideOrder: async (...args: unknown[]) => void decisions.push(args),
  });
});
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});
afterAll(async () => {
  routed.restore();
  await emulator.close();
  rmSync(SCRATCH, { recursive: true, force: true });
});

/** Writes snippets into `folder` at the paths their first lines name (`files` overrides). */
function write(folder: string, names: string[], files: Record<string, string> = {}): string {
  const dir = join(SCRATCH, folder);
  for (const name of names) {
    const file = join(dir, files[name] ?? fileOf(snippet(name)));
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, snippet(name).code);
  }
  return dir;
}

/**
 * Bundles an entry written for the test in `dir` (TypeScript that imports the snippets, as an
 * app's bundler meets them) as Node ESM, the packages left to Node, and imports it: one
 * instance of each module, as in the app.
 */
async function load(dir: string, entry: string, define: Record<string, string> = {}): Promise<Record<string, any>> {
  writeFileSync(join(dir, 'entry.ts'), entry);
  const outfile = join(dir, 'entry.bundle.mjs');
  await build({
    entryPoints: [join(dir, 'entry.ts')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    packages: 'external',
    define,
    logLevel: 'silent',
  });
  return import(pathToFileURL(outfile).href);
}

/**
 * The whole path through a server at `origin`: a capture, its callback from the service's
 * address and from another with a forged header, the collector's script through the proxy.
 */
async function exercise(origin: string, callbacks: { idle(): Promise<void> }) {
  const transactionsBefore = emulator.inspect.transactions().length;
  const capture = await postFrom(origin, '/device-risk', JSON.stringify({ blackbox: BLACKBOX }), {
    origin: 'https://shop.example',
    cookie: 'session=ok',
    'content-type': 'application/json',
    'idempotency-key': `frameworks-${Math.random()}`,
  });
  // Accepted at once (the default), checked in the background.
  expect([capture.status, capture.status === 202 ? '' : capture.text]).toEqual([202, '']);
  const { accountId, workflowExecutionId } = await checkedTransaction(emulator, transactionsBefore);
  expect(emulator.inspect.transactions().length - transactionsBefore).toBe(1);
  expect(emulator.inspect.transaction(workflowExecutionId)).toMatchObject({
    blackboxes: [BLACKBOX],
    customerInternalReference: 'order-1',
  });

  const body = callbackBodyOf({ accountId: accountId!, workflowExecutionId: workflowExecutionId! }, RETRIEVAL, '10011');
  const json = { 'content-type': 'application/json' };
  const warn = vi.spyOn(console, 'error').mockImplementation(() => {});
  try {
    const forged = await postFrom(origin, '/device-risk/callback', body, {
      ...json,
      'x-forwarded-for': SERVICE_ADDRESS,
    });
    expect(forged.status).toBe(403);
    expect(JSON.parse(forged.text)).toMatchObject({ error: { code: 'source_not_allowed' } });
    expect(warn.mock.calls.join('\n')).toMatch(/callback_refused/); // told to the server's log
  } finally {
    warn.mockRestore();
  }
  await callbacks.idle();
  expect(decisions.filter(([id]) => id === workflowExecutionId)).toEqual([]);
  const allowed = await postFrom(origin, '/device-risk/callback', body, json, SERVICE_ADDRESS);
  expect([allowed.status, allowed.text]).toEqual([200, expect.any(String)]);
  await callbacks.idle();
  expect(decisions.filter(([id]) => id === workflowExecutionId)).toEqual([
    [workflowExecutionId, 'PROCESSED', { type: 'NOT_EXECUTED', label: 'TECHNICAL_ERROR' }],
  ]);

  const script = await realFetch(`${origin}/iojs/general5/SUB/static_wdp.js`, {
    headers: { 'x-forwarded-for': '203.0.113.66' },
  });
  expect(script.status).toBe(200);
  expect(await script.text()).toContain('emulated collection script: fp_static');
  expect(routed.collectorRequests.at(-1)).toMatchObject({ method: 'GET', url: '/general5/SUB/static_wdp.js' });
  return routed.collectorRequests.at(-1)!;
}

describe("Fastify 5 ('server-fastify'), as written", () => {
  it('the endpoint, the callback route and the proxy (GET, and POST with its body as sent)', async () => {
    const dir = write('fastify', ['server-setup', 'server-callbacks', 'server-fastify']);
    const { app, callbacks } = await load(
      dir,
      "export { app } from './server.ts';\nexport { callbacks } from './callbacks.ts';\n",
    );
    closers.push(() => app.close());
    const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    // The client's own X-Forwarded-For never reaches the vendor: the socket's address does.
    expect((await exercise(origin, callbacks)).forwardedFor).toBe('127.0.0.1');
    const form = await realFetch(`${origin}/iojs/general5/SUB/report`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a=1&b=%20',
    });
    await form.arrayBuffer();
    expect(routed.collectorRequests.at(-1)).toMatchObject({
      method: 'POST',
      url: '/general5/SUB/report',
      body: 'a=1&b=%20',
    });
  });
});

/** The Nuxt snippets in an app's folders, on h3's app and Node listener, routed as Nitro routes them. */
async function nuxtApp(
  folder: string,
  dev: boolean,
): Promise<{ server: Server; callbacks: { idle(): Promise<void> } }> {
  const dir = write(
    'nuxt-' + folder,
    [
      'server-setup',
      'server-callbacks',
      'server-nuxt-caller',
      'server-nuxt',
      'server-nuxt-callback',
      'server-nuxt-proxy',
    ],
    {
      'server-setup': 'server/lib/device-risk.ts',
      'server-callbacks': 'server/lib/callbacks.ts',
    },
  );
  const entry = `
    import { createServer } from 'node:http';
    import { createApp, createRouter, toNodeListener } from 'h3';
    import endpoint from './server/routes/device-risk.post.ts';
    import callback from './server/routes/device-risk/callback.post.ts';
    import proxy from './server/routes/iojs/[...path].ts';
    export { callbacks } from './server/lib/callbacks.ts';
    const router = createRouter()
      .post('/device-risk', endpoint)
      .post('/device-risk/callback', callback)
      .use('/iojs/**', proxy);
    export const server = createServer(toNodeListener(createApp().use(router)));
  `;
  // Each app's endpoint keeps its default queue in a data directory of its own (one queue per directory).
  process.env.BLACKBOX_CAPTURE_DATA_DIR = join(SCRATCH, `data-${folder}`);
  // What Nuxt's build does with import.meta.dev: a constant, true under nuxt dev only.
  const { server, callbacks } = await load(dir, entry, { 'import.meta.dev': String(dev) });
  closers.push(() => closing(server));
  return { server, callbacks };
}

/** Closes `server` and its kept-alive connections. */
const closing = (server: Server) =>
  new Promise((resolve) => {
    server.closeAllConnections();
    server.close(resolve);
  });

const listen = (server: Server, where: number | string) =>
  new Promise<void>((resolve) =>
    typeof where === 'string' ? server.listen(where, resolve) : server.listen(0, '127.0.0.1', resolve),
  );

/**
 * A proxy in front of `target` (a port, or a Unix socket as nuxt dev's own proxy uses), which
 * sets X-Forwarded-For from the peer's address and what the client sent; its origin.
 */
async function frontProxy(
  target: { port: number } | { socketPath: string },
  forwardedFor: (peer: string, sent: string | undefined) => string,
): Promise<string> {
  const server = createServer((req, res) => {
    const peer = req.socket.remoteAddress!.replace(/^::ffff:/, '');
    const headers = {
      ...req.headers,
      'x-forwarded-for': forwardedFor(peer, req.headers['x-forwarded-for'] as string | undefined),
    };
    const upstream = httpRequest(
      { ...target, host: '127.0.0.1', path: req.url, method: req.method, headers, agent: false },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await listen(server, 0);
  closers.push(() => closing(server));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("Nuxt/Nitro on h3 ('server-nuxt-caller', 'server-nuxt', 'server-nuxt-callback', 'server-nuxt-proxy'), as written", () => {
  it('as built: the caller is the socket, a forged X-Forwarded-For is refused', async () => {
    delete process.env.BEHIND_PROXY;
    const { server, callbacks } = await nuxtApp('built', false);
    await listen(server, 0);
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    expect((await exercise(origin, callbacks)).forwardedFor).toBe('127.0.0.1');
  });

  it('BEHIND_PROXY=1 behind a proxy that overwrites X-Forwarded-For: the address that proxy saw', async () => {
    process.env.BEHIND_PROXY = '1';
    try {
      const { server, callbacks } = await nuxtApp('behind-proxy', false);
      await listen(server, 0);
      // nginx's proxy_set_header X-Forwarded-For $remote_addr: what the client sent is dropped.
      const front = await frontProxy({ port: (server.address() as AddressInfo).port }, (peer) => peer);
      expect((await exercise(front, callbacks)).forwardedFor).toBe('127.0.0.1');
    } finally {
      delete process.env.BEHIND_PROXY;
    }
  });

  it("under nuxt dev (a proxy of its own, on a Unix socket): refused without import.meta.dev, the caller's address with it", async () => {
    const answers: number[] = [];
    for (const dev of [false, true]) {
      const { server, callbacks } = await nuxtApp(`dev-${dev}`, dev);
      const socketPath = join(SCRATCH, `nitro-${dev}.sock`);
      await listen(server, socketPath);
      // nuxt dev's proxy writes X-Forwarded-For only when the client sent none.
      const front = await frontProxy({ socketPath }, (peer, sent) => sent ?? peer);
      const before = emulator.inspect.transactions().length;
      const capture = await postFrom(front, '/device-risk', JSON.stringify({ blackbox: BLACKBOX }), {
        origin: 'https://shop.example',
        cookie: 'session=ok',
        'content-type': 'application/json',
      });
      expect(capture.status).toBe(202);
      const { accountId, workflowExecutionId } = await checkedTransaction(emulator, before);
      const warn = vi.spyOn(console, 'error').mockImplementation(() => {});
      try {
        const json = { 'content-type': 'application/json' };
        const body = callbackBodyOf(
          { accountId: accountId!, workflowExecutionId: workflowExecutionId! },
          RETRIEVAL,
          '10011',
        );
        answers.push((await postFrom(front, '/device-risk/callback', body, json, SERVICE_ADDRESS)).status);
        await callbacks.idle();
      } finally {
        warn.mockRestore();
      }
      expect(decisions.filter(([id]) => id === workflowExecutionId).length).toBe(dev ? 1 : 0);
    }
    // Without it there is no address: the service's own callback is refused.
    expect(answers).toEqual([403, 200]);
  });
});
