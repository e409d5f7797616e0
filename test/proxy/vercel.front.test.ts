// The shipped Vercel recipe (proxy/vercel/middleware.ts, Routing Middleware) bundled as
// Vercel bundles it (esbuild, the `edge-light` export condition) and run in Vercel's Edge
// Runtime as the npm package edge-runtime reproduces it in Node (its VM, its fetch), behind a
// stand-in for Vercel's edge that writes x-real-ip. Not tested on Vercel itself: its routing
// and path normalisation, the matcher, its limits and its network.
import { mkdtempSync, rmSync, symlinkSync, writeFileSync, copyFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { EdgeRuntime, createHandler } from 'edge-runtime';
import { afterAll, beforeAll } from 'vitest';
import { frontConformance } from '../support/front-conformance.js';
import { listening, recipe, type RunningFront } from '../support/fronts.js';
import { ROOT } from '../support/tarball.js';

let dir: string;
let bundle: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'bbc-vercel-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(ROOT, join(dir, 'node_modules', 'blackbox-capture'));
  copyFileSync(recipe('vercel/middleware.ts'), join(dir, 'middleware.ts'));
  // How the Edge Runtime hands a request to middleware: a fetch event.
  writeFileSync(
    join(dir, 'entry.ts'),
    `import middleware from './middleware.ts';
addEventListener('fetch', (event: any) => event.respondWith(middleware(event.request)));
`,
  );
  const built = await build({
    entryPoints: [join(dir, 'entry.ts')],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    conditions: ['edge-light'],
    target: 'es2022',
    write: false,
    logLevel: 'silent',
  });
  bundle = built.outputFiles[0]!.text;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function startVercel(collectorUrl: string): Promise<RunningFront> {
  const runtime = new EdgeRuntime({
    initialCode: bundle,
    extend: (context) => Object.assign(context, { process: { env: { BBC_UPSTREAM: collectorUrl } } }),
  });
  const { handler } = createHandler({ runtime });
  return listening((req, res) => {
    req.headers['x-real-ip'] = req.socket.remoteAddress; // what Vercel's edge writes
    void handler(req, res);
  });
}

frontConformance('Vercel with proxy/vercel/middleware.ts (edge-runtime)', startVercel, {
  vendorCookies: 'namespaced',
  hostilePaths: 'refused',
});
