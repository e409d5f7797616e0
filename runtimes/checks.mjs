// The server kit and the emulator, as an npm user installs them, checked in whichever runtime
// runs this file: Node 22, 24 and 26, Deno 2 (`deno run -A`) and Bun 1. Plain JavaScript with
// web APIs and the node: modules all three support, so that the same checks run everywhere
// (runtimes/runtimes.test.ts runs it in each, from the packed tarball). Environment:
// REDIS_URL, a redis-server for the Store contract on node-redis and ioredis (skipped, and
// said so, without one). It prints one line per check and a closing line:
// `runtime checks in <runtime>: <n> passed, <m> failed`.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as kit from 'blackbox-capture/server';
import { createRedisStore } from 'blackbox-capture/server/redis';
import { createFileQueue } from 'blackbox-capture/server/file-queue';
import { startEmulator } from 'blackbox-capture/emulator';
import { STORE_CONTRACT } from './store-contract.mjs';
import { BLACKBOX, emulatedClient, emulatedHandler, SHOP, UA } from '../test/support/emulated-kit.mjs';

const { createCallbackHandler, createFirstPartyProxy, createMemoryStore, toNodeHandler } = kit;

const RUNTIME = globalThis.Deno
  ? `Deno ${globalThis.Deno.version.deno}`
  : globalThis.Bun
    ? `Bun ${globalThis.Bun.version}`
    : `Node ${process.versions.node}`;
/** Every read of a check's own requests has a time limit; the whole run has one too. */
const READ_MS = 15_000;
const RUN_MS = 100_000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** Polls `probe` until it answers truthy, or fails naming what it waited for. */
async function until(what, probe, ms = READ_MS) {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
const timedFetch = (url, init = {}) => fetch(url, { ...init, signal: AbortSignal.timeout(READ_MS) });

const results = [];
async function check(name, body) {
  const started = Date.now();
  try {
    await body();
    results.push({ name, ok: true });
    console.log(`ok ${name} (${Date.now() - started} ms)`);
  } catch (error) {
    results.push({ name, ok: false });
    console.log(`FAIL ${name}: ${error?.stack ?? error}`);
  }
}
const skip = (name, reason) => console.log(`skip ${name}: ${reason}`);

const watchdog = setTimeout(() => {
  console.log(`runtime checks in ${RUNTIME}: timed out after ${RUN_MS} ms`);
  process.exit(1);
}, RUN_MS);

/**
 * A command run by this runtime, and how it ended: its exit code, or the signal that ended it.
 * Under Deno through Deno.Command: Deno's node:child_process reports the signal it sent as the
 * cause of an exit even when the child caught it and exited 0.
 */
function startCommand(file) {
  if (globalThis.Deno) {
    const process = new globalThis.Deno.Command(globalThis.Deno.execPath(), {
      args: ['run', '-A', file],
      stdin: 'null',
      stdout: 'piped',
      stderr: 'piped',
    }).spawn();
    const pump = (stream, into) =>
      stream.pipeTo(new WritableStream({ write: (chunk) => into(new TextDecoder().decode(chunk)) })).catch(() => {});
    let toStdout = () => {};
    let toStderr = () => {};
    void pump(process.stdout, (text) => toStdout(text));
    void pump(process.stderr, (text) => toStderr(text));
    return {
      exited: process.status.then(({ code, signal }) => signal ?? code),
      onStdout: (f) => (toStdout = f),
      onStderr: (f) => (toStderr = f),
      terminate: () => {
        try {
          process.kill('SIGTERM');
        } catch {
          // already gone
        }
      },
    };
  }
  const child = spawn(process.execPath, [file], { stdio: ['ignore', 'pipe', 'pipe'] });
  return {
    exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal))),
    onStdout: (f) => child.stdout.on('data', (chunk) => f(String(chunk))),
    onStderr: (f) => child.stderr.on('data', (chunk) => f(String(chunk))),
    terminate: () => child.kill('SIGTERM'),
  };
}

const closers = [];
let emulator;

await check('the emulator: startEmulator serves the loader and issues tokens', async () => {
  emulator = await startEmulator({ accountRequestsPerSecond: 0 });
  closers.push(() => emulator.close());
  const loader = await timedFetch(emulator.loaderUrl);
  assert.equal(loader.status, 200);
  assert.match(await loader.text(), /\S/);
  const token = await timedFetch(emulator.tokenUrl, {
    method: 'POST',
    headers: {
      authorization: `Basic ${btoa(`${emulator.clientId}:${emulator.clientSecret}`)}`,
      accept: 'application/json',
      'content-type': 'application/x-www-form-urlencoded',
      'user-agent': UA,
    },
    body: 'grant_type=client_credentials',
  });
  assert.equal(token.status, 200);
  assert.equal(typeof (await token.json()).access_token, 'string');
});

/** The kit on node:http (toNodeHandler, as Express mounts it): endpoint, callbacks, proxy. */
let site;
if (emulator) {
  const client = emulatedClient(kit, emulator, { retrievalBaseUrl: emulator.retrievalUrl });
  const decided = [];
  const refused = [];
  const callbacks = createCallbackHandler({
    client,
    allowedSources: ['127.0.0.0/8', '::1'],
    onResult: (result) => void decided.push(result),
    onError: (error) => void refused.push(error),
  });
  closers.push(() => callbacks.close());
  const iojs = createFirstPartyProxy({ prefix: '/iojs', collectorUrl: emulator.collectorUrl });
  let origin = '';
  const deviceRisk = emulatedHandler(kit, emulator, {
    client,
    workflowKey: '10011',
    resolveCustomer: async () => ({
      customerInternalReference: 'order-1',
      userReference: 'user-1',
      callbackUrl: `${origin}/device-risk/callback`,
    }),
    onError: (error) => void refused.push(error),
  });
  const [handleRisk, handleCallback, handleIojs] = [deviceRisk, callbacks, iojs].map((h) => toNodeHandler(h));
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/iojs/')) return handleIojs(req, res);
    if (req.url === '/device-risk') return handleRisk(req, res);
    if (req.url === '/device-risk/callback') return handleCallback(req, res);
    res.statusCode = 404;
    res.end();
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  closers.unshift(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(resolve);
      }),
  );
  origin = `http://127.0.0.1:${server.address().port}`;
  site = { origin, deviceRisk, iojs, decided, refused };
}

let workflowExecutionId;
await check('the endpoint (createDeviceRiskHandler on node:http): a capture posted makes a transaction', async () => {
  assert.ok(site, 'no emulator');
  const answer = await timedFetch(`${site.origin}/device-risk`, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': `runtimes-${Date.now()}` },
    body: JSON.stringify({ blackbox: BLACKBOX }),
  });
  const text = await answer.text();
  assert.equal(answer.status, 200, text);
  const body = JSON.parse(text);
  assert.equal(body.status, 'PROCESSED');
  assert.deepEqual(Object.keys(body).sort(), ['accountId', 'status', 'workflowExecutionId']);
  workflowExecutionId = body.workflowExecutionId;
  const transaction = emulator.inspect.transaction(workflowExecutionId);
  assert.deepEqual(transaction.blackboxes, [BLACKBOX]);
  assert.equal(transaction.customerInternalReference, 'order-1');
  const foreign = await timedFetch(`${site.origin}/device-risk`, {
    method: 'POST',
    headers: { origin: 'https://evil.example', 'content-type': 'application/json' },
    body: JSON.stringify({ blackbox: BLACKBOX }),
  });
  assert.equal(foreign.status, 403);
  await foreign.body?.cancel();
});

await check(
  'the default queue (no queue option): its SQLite file in dataDir, 0600, shared by two handlers',
  async () => {
    assert.ok(emulator, 'no emulator');
    const dataDir = mkdtempSync(join(tmpdir(), 'bbc-runtime-queue-'));
    const errors = [];
    const make = (order) =>
      emulatedHandler(kit, emulator, {
        answer: 'accepted',
        dataDir,
        resolveCustomer: () => ({ customerInternalReference: order }),
        onError: (error) => void errors.push(error),
      });
    const post = (key, blackbox = BLACKBOX) =>
      new Request(`${SHOP}/device-risk`, {
        method: 'POST',
        headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ blackbox }),
      });
    const first = make('order-queued');
    let second;
    try {
      const accepted = await first(post(`runtimes-queued-${Date.now()}`));
      assert.equal(accepted.status, 202, await accepted.clone().text());
      // In the file before the 202, through this runtime's node:sqlite; readable by its owner only.
      assert.equal(statSync(join(dataDir, 'blackbox-capture.sqlite')).mode & 0o777, 0o600);
      // A second handler on the directory (an overlapping deploy) shares the file: its keys too,
      // so the first checkout's blackbox is another checkout's there (blackbox_reused), and a
      // blackbox of its own is accepted.
      second = make('order-queued-second');
      const reused = await second(post(`runtimes-reused-${Date.now()}`));
      assert.equal(reused.status, 422, await reused.clone().text());
      const also = await second(post(`runtimes-second-${Date.now()}`, `0400AB${BLACKBOX.slice(4)}`));
      assert.equal(also.status, 202, await also.clone().text());
      for (const order of ['order-queued', 'order-queued-second'])
        await until(`${order} checked`, () =>
          emulator.inspect.transactions().some((t) => t.customerInternalReference === order && t.blackboxes.length > 0),
        );
      assert.deepEqual(
        errors.map((error) => error.code),
        ['blackbox_reused'],
      );
    } finally {
      await second?.close();
      await first.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
);

await check(
  'the file queue (blackbox-capture/server/file-queue): each job once across two queues; a damaged file named',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bbc-runtime-file-queue-'));
    const path = join(dir, 'queue.sqlite');
    const job = (key) => ({
      key,
      fingerprint: 'f',
      blackbox: 'bb',
      customer: { customerInternalReference: key },
      acceptedAt: 1,
    });
    const a = createFileQueue({ path });
    const b = createFileQueue({ path });
    try {
      for (let i = 0; i < 10; i++) assert.equal(await (i % 2 ? a : b).add(job(`k${i}`)), 'added');
      assert.equal(await a.add(job('k0')), 'present');
      assert.equal(await b.add({ ...job('k1'), fingerprint: 'other' }), 'conflict');
      const ran = [];
      const run = async (j) => {
        ran.push(j.key);
        return { done: true };
      };
      a.process(run);
      b.process(run);
      await until('every job run', () => ran.length >= 10);
      await Promise.all([a.idle(), b.idle()]);
      assert.deepEqual([...ran].sort(), Array.from({ length: 10 }, (_, i) => `k${i}`).sort());
      const damaged = join(dir, 'damaged.sqlite');
      writeFileSync(damaged, 'not a database '.repeat(100));
      assert.throws(
        () => createFileQueue({ path: damaged }),
        (error) => {
          assert.equal(error.code, 'invalid_configuration');
          assert.match(error.message, /damaged.*file is not a database/);
          return true;
        },
      );
    } finally {
      await Promise.all([a.close(), b.close()]);
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

await check("the callback handler: the emulator's callback reaches onResult with the details", async () => {
  assert.ok(workflowExecutionId, 'no transaction');
  const result = await until('onResult', () => site.decided.find((r) => r.workflowExecutionId === workflowExecutionId));
  assert.equal(result.status, 'PROCESSED');
  // The README's made-up blackbox has no collection sources: the emulator decides on none.
  assert.equal(typeof result.details?.decision?.type, 'string');
  assert.equal(emulator.inspect.callbacks().at(-1)?.delivered, true);
});

await check(
  'the first-party proxy (createFirstPartyProxy): the collector script, on node:http and as a fetch handler',
  async () => {
    assert.ok(site, 'no emulator');
    const before = emulator.inspect.requests('collector');
    const script = await timedFetch(`${site.origin}/iojs/general5/SUB/static_wdp.js`);
    assert.equal(script.status, 200);
    assert.match(await script.text(), /emulated collection script: fp_static/);
    assert.match(script.headers.get('content-security-policy') ?? '', /^sandbox\b/);
    const direct = await site.iojs(new Request(`${site.origin}/iojs/general5/SUB/static_wdp.js`), {
      clientAddress: '203.0.113.9',
    });
    assert.equal(direct.status, 200);
    assert.match(await direct.text(), /emulated collection script: fp_static/);
    assert.equal(emulator.inspect.requests('collector'), before + 2);
    const outside = await site.iojs(new Request(`${site.origin}/iojs/..%2F..%2Fsecret`), {
      clientAddress: '203.0.113.9',
    });
    assert.ok(outside.status >= 400 && outside.status < 500, `status ${outside.status}`);
    await outside.body?.cancel();
  },
);

await check('nothing was refused or failed on the server side', async () => {
  assert.deepEqual(
    site?.refused.map((e) => `${e?.code}: ${e?.message}`),
    [],
  );
});

for (const [name, body] of STORE_CONTRACT)
  await check(`the Store contract on memory: ${name}`, () => body(createMemoryStore()));

const REDIS_URL = process.env.REDIS_URL;
const clients = {
  'node-redis': async (prefix) => {
    const { createClient } = await import('redis');
    const client = createClient({ url: REDIS_URL, disableOfflineQueue: true, socket: { connectTimeout: READ_MS } });
    client.on('error', () => {});
    await client.connect();
    closers.push(() => client.close());
    return createRedisStore(client, { prefix });
  },
  ioredis: async (prefix) => {
    const { Redis } = await import('ioredis');
    const client = new Redis(REDIS_URL, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: READ_MS,
    });
    client.on('error', () => {});
    await client.connect();
    closers.push(() => client.quit());
    return createRedisStore(client, { prefix });
  },
};
let prefixes = 0;
for (const [clientName, make] of Object.entries(clients)) {
  for (const [name, body] of STORE_CONTRACT) {
    const label = `the Store contract on Redis through ${clientName}: ${name}`;
    if (!REDIS_URL) skip(label, 'REDIS_URL is not set (no redis-server)');
    else await check(label, async () => body(await make(`${clientName}-${process.pid}-${++prefixes}:`)));
  }
}

await check('the blackbox-capture-emulator command prints its addresses and stops on SIGTERM', async () => {
  const manifest = fileURLToPath(import.meta.resolve('blackbox-capture/package.json'));
  const { bin } = JSON.parse(readFileSync(manifest, 'utf8'));
  const command = new URL(bin['blackbox-capture-emulator'], `file://${manifest}`);
  const child = startCommand(fileURLToPath(command));
  const { exited } = child;
  let out = '';
  let err = '';
  child.onStdout((chunk) => (out += chunk));
  child.onStderr((chunk) => (err += chunk));
  try {
    await Promise.race([
      until('its addresses', () => out.includes('"retrievalUrl"') && out.trim().endsWith('}')),
      exited.then((code) => Promise.reject(new Error(`exited (${code}) before printing: ${err.trim()}`))),
    ]);
    const addresses = JSON.parse(out);
    assert.match(addresses.loaderUrl, /^http:\/\/127\.0\.0\.1:\d+\/loader\.js$/);
    assert.equal(addresses.clientId, 'emulator-client');
    const loader = await timedFetch(addresses.loaderUrl);
    assert.equal(loader.status, 200);
    await loader.body?.cancel();
  } finally {
    child.terminate();
  }
  assert.equal(await Promise.race([exited, sleep(READ_MS).then(() => 'still running')]), 0);
});

for (const close of closers)
  await Promise.race([
    Promise.resolve()
      .then(close)
      .catch(() => {}),
    sleep(5_000),
  ]);
clearTimeout(watchdog);
const failed = results.filter((r) => !r.ok).length;
console.log(`runtime checks in ${RUNTIME}: ${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
