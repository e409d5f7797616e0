// The shipped Netlify recipe (proxy/netlify/iojs.ts, an Edge Function) in Deno 2, the runtime
// Netlify's Edge Functions run on (the binary of the runtimes step, from the npm registry),
// served by Deno.serve with the context Netlify gives it: the peer's address as `context.ip`,
// the environment as `Netlify.env`. Not tested on Netlify itself: its routing and path
// normalisation, the `config.path` declaration, its bundler and its limits.
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe } from 'vitest';
import { ensureRuntimes } from '../support/runtimes.mjs';
import { frontConformance } from '../support/front-conformance.js';
import { recipe, type RunningFront } from '../support/fronts.js';
import { ROOT } from '../support/tarball.js';

const { available, missing } = await ensureRuntimes({ names: ['deno'] });
const deno = available[0];
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bbc-netlify-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(ROOT, join(dir, 'node_modules', 'blackbox-capture'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  copyFileSync(recipe('netlify/iojs.ts'), join(dir, 'iojs.ts'));
  writeFileSync(
    join(dir, 'serve.ts'),
    `import handler from './iojs.ts';
(globalThis as any).Netlify = { env: { get: (name: string) => Deno.env.get(name) } };
Deno.serve(
  { hostname: '127.0.0.1', port: 0, onListen: ({ port }) => console.log(\`listening on \${port}\`) },
  (request, info) => handler(request, { ip: info.remoteAddr.hostname }),
);
`,
  );
});
afterAll(() => dir && rmSync(dir, { recursive: true, force: true }));

async function startNetlify(collectorUrl: string): Promise<RunningFront> {
  const child = spawn(deno!.path, ['run', '--allow-net', '--allow-env', '--allow-read', 'serve.ts'], {
    cwd: dir,
    env: { ...process.env, BBC_UPSTREAM: collectorUrl, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const port = await new Promise<string>((resolve, reject) => {
    let output = '';
    const read = (chunk: Buffer) => {
      output += String(chunk);
      const listening = /listening on (\d+)/.exec(output);
      if (listening) resolve(listening[1]!);
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('exit', (code) => reject(new Error(`deno exited ${code}:\n${output}`)));
  });
  return {
    origin: `http://127.0.0.1:${port}`,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

if (deno)
  frontConformance('Netlify with proxy/netlify/iojs.ts (Deno)', startNetlify, {
    vendorCookies: 'namespaced',
    hostilePaths: 'refused',
  });
else describe.skip(`deno: ${missing[0]?.reason}`, () => {});
