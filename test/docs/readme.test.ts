// The README's server and emulator snippets, run as written: each framework's server file
// with the setup file beside it, against the emulator. The service's regional hosts and the
// vendor's first-party host are routed to the emulator by the fetch the snippets use.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { transformSync } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { checkedTransaction } from '../support/accepted.js';
import { callbackBodyOf } from '../support/callback-body.js';
import { brokenLinks, documents, fileOf, readmeBlocks, RUN_BY, slug, snippet } from '../support/readme.js';
import { routeFetchToEmulator, sessionUser, setSnippetEnv } from '../support/snippet-fetch.js';
import { connect, haveRedis, startRedisServer } from '../support/redis.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// Under the package root, so that `import 'blackbox-capture/server'` resolves to dist/ by the
// package's own exports map, as it does in an integrator's project.
const SCRATCH = join(ROOT, '.scratch', `readme-${process.pid}`);
const BLACKBOX = '0400' + 'nVQ+/abc'.repeat(150) + '==';

describe('every README snippet is run by a test', () => {
  it('every fenced block has a snippet marker, and every marker a test that names it', () => {
    const blocks = readmeBlocks();
    expect(blocks.filter((b) => !b.name).map((b) => `${b.file}:${b.line}`)).toEqual([]);
    for (const { name } of blocks) {
      expect(RUN_BY[name], `no test runs snippet "${name}"`).toBeDefined();
      expect(readFileSync(join(ROOT, RUN_BY[name]!), 'utf8'), `${RUN_BY[name]} does not run "${name}"`).toContain(
        `'${name}'`,
      );
    }
    expect(new Set(blocks.map((b) => b.name)).size).toBe(blocks.length);
  });
});

describe('the documents link where they say', () => {
  it('every relative link names a file that exists and a heading it has', () => {
    expect(brokenLinks(ROOT, documents())).toEqual([]);
  });

  it('finds a broken link: the anchor rule is not vacuous', () => {
    expect(slug('Emulator (`blackbox-capture/emulator`)')).toBe('emulator-blackbox-captureemulator');
    expect(slug('`<blackbox-capture>`: the form element')).toBe('blackbox-capture-the-form-element');
  });

  it('finds a broken link: a missing file, a missing heading, a file outside the root', () => {
    const root = mkdtempSync(join(tmpdir(), 'bbc-links-'));
    try {
      mkdirSync(join(root, 'docs'));
      writeFileSync(join(root, 'docs', 'a.md'), '# A heading\n\n[up](../README.md#top)\n');
      writeFileSync(
        join(root, 'README.md'),
        '# Top\n\n[ok](docs/a.md#a-heading) [gone](docs/b.md) [no heading](docs/a.md#b) [out](../x.md) [web](https://x.test/y.md)\n```\n[in code](nowhere.md)\n```\n',
      );
      expect(brokenLinks(root, ['README.md', 'docs/a.md'])).toEqual([
        'README.md: docs/b.md (no such file)',
        'README.md: docs/a.md#b (no such heading)',
        'README.md: ../x.md (no such file)',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('README server snippets, as written, against the emulator', () => {
  let emulator: Emulator;
  const realFetch = globalThis.fetch;
  /** What reached the vendor's first-party host through the proxy. */
  let routed: ReturnType<typeof routeFetchToEmulator>;

  beforeAll(async () => {
    // The kit loads before fetch is replaced, as in an app whose tests stub fetch: its proxy
    // then calls the stub (on Node it would use node:http, which the stub cannot see).
    await import('../../dist/server.js');
    emulator = await startEmulator({ accountRequestsPerSecond: 0 });
    routed = routeFetchToEmulator(emulator);
    setSnippetEnv(emulator);
    Object.assign(globalThis, { sessionUser });
  });
  afterAll(async () => {
    routed.restore();
    await emulator.close();
    rmSync(SCRATCH, { recursive: true, force: true });
  });

  /** Writes the setup file and the named snippets into a folder of their own, as JavaScript; imports the last. */
  async function load(folder: string, ...names: string[]): Promise<Record<string, any>> {
    const dir = join(SCRATCH, folder);
    let last = '';
    for (const name of ['server-setup', ...names]) {
      const block = snippet(name);
      const file = join(dir, fileOf(block).replace(/\.ts$/, '.js'));
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, transformSync(block.code, { loader: 'ts', format: 'esm', target: 'node20' }).code);
      last = file;
    }
    return import(pathToFileURL(last).href);
  }

  // Each checkout its own blackbox: the endpoint refuses one already used (src/server/endpoint/reuse.ts).
  let checkouts = 0;
  const blackboxOf = (n: number) => BLACKBOX.slice(0, 4) + n + BLACKBOX.slice(4);
  const checkout = (origin: string, blackbox: string) =>
    realFetch(`${origin}/device-risk`, {
      method: 'POST',
      headers: {
        origin: 'https://shop.example',
        cookie: 'session=ok',
        'content-type': 'application/json',
        'idempotency-key': `readme-${Math.random()}`,
      },
      body: JSON.stringify({ blackbox }),
    });

  async function exercise(origin: string) {
    const before = emulator.inspect.transactions().length;
    const blackbox = blackboxOf(++checkouts);
    const answer = await checkout(origin, blackbox);
    // Accepted at once (the default), checked in the background: the browser gets a reference only.
    expect([answer.status, answer.status === 202 ? '' : await answer.text()]).toEqual([202, '']);
    expect(await answer.json()).toEqual({ accepted: true, reference: expect.stringMatching(/^readme-/) });
    expect(await checkedTransaction(emulator, before)).toMatchObject({
      blackboxes: [blackbox],
      customerInternalReference: 'order-1',
      userReference: 'user-1',
    });
    const script = await realFetch(`${origin}/iojs/general5/SUB/static_wdp.js`);
    expect(script.status).toBe(200);
    expect(await script.text()).toContain('emulated collection script: fp_static');
    expect(routed.collectorRequests.at(-1)).toEqual({
      method: 'GET',
      url: '/general5/SUB/static_wdp.js',
      forwardedFor: '127.0.0.1',
      body: '',
    });
    const anonymous = await realFetch(`${origin}/device-risk`, {
      method: 'POST',
      headers: { origin: 'https://shop.example', 'content-type': 'application/json' },
      body: JSON.stringify({ blackbox: BLACKBOX }),
    });
    expect(anonymous.status).toBe(401);
  }

  const origin = (server: { address(): unknown }) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const listening = (server: { listening: boolean; once(event: 'listening', f: () => void): unknown }) =>
    server.listening ? Promise.resolve() : new Promise<void>((resolve) => server.once('listening', resolve));

  it.each([
    ["Node http ('server-node-http')", 'server-node-http'],
    ["Express 5 ('server-express'), with express.json() before the endpoint", 'server-express'],
    ["Hono on Node ('server-hono'), the client address from getConnInfo", 'server-hono'],
  ])('%s', async (_, name) => {
    const { server } = await load(name, name);
    await listening(server);
    try {
      await exercise(origin(server));
    } finally {
      server.closeAllConnections?.();
      server.close();
    }
  });

  it.skipIf(!haveRedis)(
    "two instances on one Redis ('server-fleet' with 'server-node-http'): one token, keys under the prefix",
    async () => {
      const redis = await startRedisServer();
      process.env.REDIS_URL = redis.url;
      process.env.CALLBACK_SOURCES = '127.0.0.0/8';
      const tokensBefore = emulator.inspect.requests('token');
      const servers = [
        (await load('fleet-a', 'server-fleet', 'server-node-http')).server,
        (await load('fleet-b', 'server-fleet', 'server-node-http')).server,
      ];
      const modules = await Promise.all(
        ['fleet-a', 'fleet-b'].map(
          async (folder) => await import(pathToFileURL(join(SCRATCH, folder, 'device-risk.js')).href),
        ),
      );
      const inspect = await connect(redis.url);
      try {
        for (const server of servers) {
          await listening(server);
          await exercise(origin(server));
        }
        expect(emulator.inspect.requests('token') - tokensBefore).toBeLessThanOrEqual(1);
        const keys = await inspect.keys('*');
        expect(keys.length).toBeGreaterThan(0);
        expect(keys.filter((key) => !key.startsWith('shop:'))).toEqual([]);
        expect(keys.some((key) => key.includes(':idempotency:'))).toBe(true);
      } finally {
        for (const server of servers) {
          server.closeAllConnections?.();
          server.close();
        }
        await inspect.close();
        for (const { deviceRisk, bullmq, redis } of modules) {
          await deviceRisk.close();
          await bullmq.quit();
          await redis.close();
        }
        await redis.stop();
      }
    },
  );
});

describe('README callback snippet, as written', () => {
  it("receives the emulator's callback and decides ('server-callbacks')", async () => {
    const emulator = await startEmulator({ accountRequestsPerSecond: 0 });
    // Route the EU hosts the setup file names to this emulator (as the server snippets do).
    const routed = routeFetchToEmulator(emulator);
    const decisions: unknown[] = [];
    Object.assign(globalThis, {
      decideOrder: async (...args: unknown[]) => void decisions.push(args),
      sessionUser: async () => null,
    });
    setSnippetEnv(emulator, { CALLBACK_SOURCES: '127.0.0.0/8,::1' });
    try {
      const dir = join(SCRATCH, 'callbacks');
      mkdirSync(dir, { recursive: true });
      for (const name of ['server-setup', 'server-callbacks']) {
        writeFileSync(
          join(dir, fileOf(snippet(name)).replace(/\.ts$/, '.js')),
          transformSync(snippet(name).code, { loader: 'ts', format: 'esm', target: 'node20' }).code,
        );
      }
      const { callbacks } = await import(pathToFileURL(join(dir, 'callbacks.js')).href);
      const { client } = await import(pathToFileURL(join(dir, 'device-risk.js')).href);
      const tx = await client.createAccount({
        customerInternalReference: 'order-7',
        workflowDefinition: { key: 10011 },
      });
      await client.uploadBlackbox(tx, BLACKBOX);
      await client.finalize(tx);
      const body = callbackBodyOf(tx, 'https://retrieval.emea-1.jumio.ai', '10011');
      const post = (clientAddress: string) =>
        callbacks(
          new Request('https://shop.example/device-risk/callback', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body,
          }),
          { clientAddress },
        );
      expect((await post('203.0.113.9')).status).toBe(403);
      expect((await post('127.0.0.1')).status).toBe(200);
      await callbacks.idle();
      expect(decisions).toEqual([
        [tx.workflowExecutionId, 'PROCESSED', { type: 'NOT_EXECUTED', label: 'TECHNICAL_ERROR' }],
      ]);
    } finally {
      routed.restore();
      await emulator.close();
    }
  });
});

describe('README emulator snippet, as written', () => {
  it("runs ('emulator')", async () => {
    const file = join(SCRATCH, 'emulator', 'emulator.js');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(
      file,
      transformSync(snippet('emulator').code, { loader: 'ts', format: 'esm', target: 'node20' }).code,
    );
    await expect(import(pathToFileURL(file).href)).resolves.toBeDefined();
  });
});

describe('README excerpts of shipped files', () => {
  it("every line of the nginx excerpt ('nginx-excerpt') is in the shipped files", () => {
    const shipped = ['iojs-http.conf', 'iojs-location.conf']
      .map((name) => readFileSync(join(ROOT, 'proxy/nginx', name), 'utf8'))
      .join('\n')
      .replace(/\s+/g, ' ');
    const lines = snippet('nginx-excerpt')
      .code.split('\n')
      .map((line) => line.replace(/#.*$/, '').trim())
      .filter((line) => line && line !== '}');
    // A line may join two statements of the file ("a; b;"): each must be there.
    const statements = lines
      .flatMap((line) => line.split(/(?<=;)\s+/))
      .map((statement) => statement.replace(/\s+/g, ' '));
    expect(statements.filter((statement) => !shipped.includes(statement))).toEqual([]);
  });

  it("the njs filter ('nginx-njs') is the shipped proxy/nginx/iojs.js, byte for byte", () => {
    expect(snippet('nginx-njs').code).toBe(readFileSync(join(ROOT, 'proxy/nginx/iojs.js'), 'utf8'));
  });

  it("every path of the layout ('layout') exists, and every folder of the server kit is in it", () => {
    // An indented line names a folder inside the last unindented one.
    let parent = '';
    const paths = snippet('layout')
      .code.split('\n')
      .filter((line) => line.trim())
      .map((line) => {
        const name = line.trim().split(/\s+/)[0]!;
        if (!line.startsWith(' ')) return (parent = name);
        return parent + name;
      });
    expect(paths.filter((path) => !existsSync(join(ROOT, path)))).toEqual([]);
    const serverFolders = readdirSync(join(ROOT, 'src/server'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `src/server/${entry.name}/`);
    expect(serverFolders.filter((folder) => !paths.includes(folder))).toEqual([]);
  });
});
