// The server kit and the emulator in every supported runtime, from the packed tarball as
// npm users install it: runtimes/checks.mjs in Node 22, 24 and 26, Deno 2 and Bun 1 (the
// binaries from the npm registry, test/support/runtimes.mjs), and the docs' Deno.serve and
// Bun.serve snippets, and the Express one under Deno and Bun, run as written against the emulator.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startEmulator, type Emulator } from '../src/emulator/index.js';
import { ensureRuntimes, type Runtime } from '../test/support/runtimes.mjs';
import { fileOf, snippet } from '../test/support/readme.js';
import { checkedTransaction } from '../test/support/accepted.js';
import { haveRedis, startRedisServer, type RedisServer } from '../test/support/redis.js';
import { installPackedTarball, ROOT } from '../test/support/tarball.js';
import { BLACKBOX } from '../test/support/emulated-kit.mjs';

/** Packages the checks and snippets import beside the kit, as an app has them installed. */
const APP_PACKAGES = ['redis', '@redis', 'ioredis', 'express'];

const { available, missing } = await ensureRuntimes();
const runtime = (name: string) => available.find((r) => r.name === name);

let dir: string;
let redis: RedisServer | undefined;
beforeAll(async () => {
  ({ dir } = installPackedTarball('bbc-runtimes-'));
  // An app's package.json: Deno resolves bare imports from node_modules beside one.
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'runtimes-app', private: true, type: 'module' }));
  for (const name of APP_PACKAGES) symlinkSync(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name));
  // At their paths in the repo: checks.mjs imports the kit's assembly from test/support.
  for (const file of ['runtimes/checks.mjs', 'runtimes/store-contract.mjs', 'test/support/emulated-kit.mjs']) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    copyFileSync(join(ROOT, file), join(dir, file));
  }
  copyFileSync(join(ROOT, 'runtimes', 'snippet-setup.mjs'), join(dir, 'snippet-setup.mjs'));
  if (haveRedis) redis = await startRedisServer();
});
afterAll(async () => {
  await redis?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** How each runtime runs a file: Deno with the permissions given, all of them by default. */
const argsFor = (r: Runtime, file: string, denoPermissions = ['-A']) =>
  r.name === 'deno' ? ['run', ...denoPermissions, file] : [file];

/** A child that is killed when the test ends, and its output so far. */
function start(r: Runtime & { path: string }, args: string[], env: Record<string, string> = {}) {
  const child = spawn(r.path, args, { cwd: dir, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const output = { text: '' };
  child.stdout!.on('data', (chunk) => (output.text += chunk));
  child.stderr!.on('data', (chunk) => (output.text += chunk));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal!)),
  );
  return { child, output, exited };
}
const stop = (child: ChildProcess) => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL');

describe.concurrent('runtimes/checks.mjs: the handlers, the Store contract and the emulator', () => {
  for (const { name, reason } of missing) it.skip(`${name}: not installed (${reason})`, () => {});
  for (const r of available)
    it(`${r.name} (${r.package}@${r.version})`, async ({ expect }) => {
      const { child, output, exited } = start(
        r,
        argsFor(r, 'runtimes/checks.mjs'),
        redis ? { REDIS_URL: redis.url } : {},
      );
      // The program has its own time limit (100 s); this one only guards against a hung runtime.
      const timer = setTimeout(() => stop(child), 150_000);
      const code = await exited;
      clearTimeout(timer);
      const closing = /^runtime checks in (.+): (\d+) passed, (\d+) failed$/m.exec(output.text);
      expect(closing, output.text).not.toBeNull();
      expect([code, closing![3]], output.text).toEqual([0, '0']);
      // Every check ran: 20 with a redis-server, 12 without (its 8 are skipped and say so).
      expect(Number(closing![2])).toBe(redis ? 20 : 12);
    });
});

describe('the blackbox-capture-emulator command under Deno', () => {
  // Deno starts to listen for a signal a moment after it is asked to: a supervisor that stops
  // the emulator as soon as it has read the addresses must still get a clean stop (exit 0).
  it.skipIf(!runtime('deno'))(
    'stops with 0 on a SIGTERM sent the moment its addresses are printed',
    async ({ expect }) => {
      const deno = runtime('deno')!;
      const cli = join(dir, 'node_modules', 'blackbox-capture', 'dist', 'emulator-cli.js');
      const codes: Array<number | string> = [];
      for (let attempt = 0; attempt < 5; attempt++) {
        const { child, output, exited } = start(deno, argsFor(deno, cli));
        // Killed from the same event that delivers the last line of the addresses, as a supervisor would.
        child.stdout!.on('data', () => output.text.trim().endsWith('}') && child.kill('SIGTERM'));
        const timer = setTimeout(() => stop(child), 60_000);
        codes.push(await exited);
        clearTimeout(timer);
      }
      expect(codes).toEqual([0, 0, 0, 0, 0]);
    },
  );
});

describe.concurrent('the docs server snippets, as written, in their runtimes against the emulator', () => {
  /**
   * Writes the snippets as they are, TypeScript files importing each other by `.js` names
   * (Bun maps them to the `.ts` files, Deno with --sloppy-imports), and an entry that
   * supplies the reader's parts, then runs the last; answers the entry.
   */
  function write(folder: string, names: string[]): string {
    let server = '';
    for (const name of names) {
      const block = snippet(name);
      server = fileOf(block);
      const file = join(dir, 'snippets', folder, server);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, block.code);
    }
    const entry = join(dir, 'snippets', folder, 'entry.mjs');
    writeFileSync(
      entry,
      `import { announce } from '../../snippet-setup.mjs';\nimport { server } from './${server.replace(/\.ts$/, '.js')}';\nawait announce(server);\n`,
    );
    return entry;
  }

  /** The Deno permissions a snippet's first line names (`deno run --allow-net … server.ts`). */
  const denoPermissions = (name: string) => {
    const command = /deno run ((?:--[\w-]+ )*)server\.ts/.exec(snippet(name).code);
    if (!command) throw new Error(`snippet "${name}" does not say how deno runs it`);
    return command[1]!.trim().split(' ');
  };

  const cases: Array<[string, string, string[], boolean]> = [
    // [runtime, snippet, its files, has a callback route]
    ['deno', 'server-deno', ['server-setup', 'server-callbacks', 'server-deno'], true],
    ['bun', 'server-bun', ['server-setup', 'server-callbacks', 'server-bun'], true],
    ['deno', 'server-express', ['server-setup', 'server-express'], false],
    ['bun', 'server-express', ['server-setup', 'server-express'], false],
  ];
  it.for(cases)('%s: %s', async ([name, snippetName, files, hasCallbacks], { expect }) => {
    const r = runtime(name);
    if (!r) return void expect(missing.map((m) => m.name)).toContain(name); // skipped and named above
    let origin = '';
    const emulator: Emulator = await startEmulator({
      accountRequestsPerSecond: 0,
      // The set-up file's callbackUrl is the shop's public address: here, the snippet's server.
      // The service's callback names its own retrieval host, which the snippet routes here.
      fetch: (input, init) =>
        fetch((input instanceof Request ? input.url : input.toString()).replace('https://shop.example', origin), {
          ...init,
          body:
            typeof init?.body === 'string'
              ? init.body.replaceAll(
                  new RegExp(`${new URL(emulator.baseUrl).origin}|${new URL(emulator.retrievalUrl).origin}`, 'g'),
                  'https://retrieval.emea-1.jumio.ai',
                )
              : init?.body,
        }),
    });
    const entry = write(`${name}-${snippetName}`, files);
    // Deno: the flags the Deno snippet names, for the Express one too (its TypeScript imports need --sloppy-imports).
    const permissions = name === 'deno' ? denoPermissions('server-deno') : undefined;
    const { child, output, exited } = start(r, argsFor(r, entry, permissions), {
      CLIENT_ID: emulator.clientId,
      CLIENT_SECRET: emulator.clientSecret,
      WORKFLOW_KEY: '10011',
      PORT: '0',
      // The endpoint's default queue: a data directory of each case's own (the cases run at once).
      BLACKBOX_CAPTURE_DATA_DIR: join(dir, `data-${name}-${snippetName}`),
      CALLBACK_SOURCES: '127.0.0.0/8,::1',
      SNIPPET_ROUTES: JSON.stringify({
        'https://auth.emea-1.jumio.ai': new URL(emulator.tokenUrl).origin,
        'https://account.emea-1.jumio.ai': emulator.accountUrl,
        'https://api.emea-1.jumio.ai': emulator.apiUrl,
        'https://retrieval.emea-1.jumio.ai': emulator.retrievalUrl,
        'https://first.iovation.com': emulator.collectorUrl,
      }),
    });
    try {
      const port = await Promise.race([
        expect
          .poll(() => /^listening (\d+)$/m.exec(output.text)?.[1], { timeout: 60_000 })
          .toBeDefined()
          .then(() => /^listening (\d+)$/m.exec(output.text)![1]),
        exited.then((code) => Promise.reject(new Error(`exited (${code}) before listening:\n${output.text}`))),
      ]);
      origin = `http://127.0.0.1:${port}`;
      const post = (cookie?: string) =>
        fetch(`${origin}/device-risk`, {
          method: 'POST',
          headers: {
            origin: 'https://shop.example',
            'content-type': 'application/json',
            'idempotency-key': `runtimes-${Math.random()}`,
            ...(cookie ? { cookie } : {}),
          },
          body: JSON.stringify({ blackbox: BLACKBOX }),
          signal: AbortSignal.timeout(30_000),
        });
      const before = emulator.inspect.transactions().length;
      const answer = await post('session=ok');
      const text = await answer.text();
      // Accepted at once (the default), checked in the background.
      expect([answer.status, output.text], text).toEqual([202, output.text]);
      const { workflowExecutionId } = await checkedTransaction(emulator, before);
      expect(emulator.inspect.transaction(workflowExecutionId)).toMatchObject({
        blackboxes: [BLACKBOX],
        customerInternalReference: 'order-1',
        userReference: 'user-1',
      });
      expect((await post()).status).toBe(401);

      const script = await fetch(`${origin}/iojs/general5/SUB/static_wdp.js`, { signal: AbortSignal.timeout(30_000) });
      expect(script.status).toBe(200);
      expect(await script.text()).toContain('emulated collection script: fp_static');
      // The caller's address, as the runtime gave it to the snippet, reached the collector.
      expect(output.text).toContain(
        `collector ${JSON.stringify({ url: '/general5/SUB/static_wdp.js', forwardedFor: '127.0.0.1' })}`,
      );

      if (hasCallbacks) {
        await expect
          .poll(() => emulator.inspect.callbacks().find((c) => c.delivered)?.status, {
            timeout: 30_000,
            message: `callbacks: ${JSON.stringify(emulator.inspect.callbacks())}\n${output.text}`,
          })
          .toBe(200);
        await expect
          .poll(() => output.text, { timeout: 30_000 })
          .toMatch(new RegExp(`^decided .*${workflowExecutionId}.*PROCESSED`, 'm'));
      }
    } finally {
      stop(child);
      await emulator.close();
    }
  });
});
