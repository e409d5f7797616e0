// The shipped Next.js recipe (proxy/nextjs/route.ts as app/iojs/[...path]/route.ts) in a
// Next.js 16 app built with `next build` and run by `next start` on the built package, behind
// a stand-in for Vercel's edge (it writes x-real-ip), in front of the emulator's collector.
import { spawn } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { freePort } from '../support/processes.mjs';
import { frontConformance } from '../support/front-conformance.js';
import { behindEdge, recipe, type RunningFront } from '../support/fronts.js';
import { ROOT } from '../support/tarball.js';

const NEXT = join(ROOT, 'node_modules', 'next', 'dist', 'bin', 'next');
// Inside the checkout, so that Next.js finds next and react as an app does.
const APP = join(ROOT, '.scratch', `nextjs-front-${process.pid}`);
const env = () => {
  const clean: NodeJS.ProcessEnv = { ...process.env, NEXT_TELEMETRY_DISABLED: '1' };
  delete clean.NODE_OPTIONS;
  return clean;
};

beforeAll(async () => {
  rmSync(APP, { recursive: true, force: true });
  const installed = join(APP, 'node_modules', 'blackbox-capture');
  mkdirSync(installed, { recursive: true });
  cpSync(join(ROOT, 'dist'), join(installed, 'dist'), { recursive: true });
  copyFileSync(join(ROOT, 'package.json'), join(installed, 'package.json'));
  writeFileSync(join(APP, 'package.json'), JSON.stringify({ name: 'shop', private: true }));
  // The recipe's types are checked by `npm run typecheck` (proxy/tsconfig.json): the build
  // skips its own check, and writes no cache for a next build that never comes.
  writeFileSync(
    join(APP, 'next.config.mjs'),
    'export default { typescript: { ignoreBuildErrors: true }, experimental: { turbopackFileSystemCacheForBuild: false } };\n',
  );
  // The app's own, as Next.js writes it: not the checkout's, whose paths point into src/.
  writeFileSync(
    join(APP, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2017',
        lib: ['dom', 'dom.iterable', 'esnext'],
        strict: true,
        noEmit: true,
        module: 'esnext',
        moduleResolution: 'bundler',
        isolatedModules: true,
        skipLibCheck: true,
        jsx: 'react-jsx',
      },
      include: ['**/*.ts'],
      exclude: ['node_modules'],
    }),
  );
  mkdirSync(join(APP, 'app', 'iojs', '[...path]'), { recursive: true });
  copyFileSync(recipe('nextjs/route.ts'), join(APP, 'app', 'iojs', '[...path]', 'route.ts'));
  await new Promise<void>((resolve, reject) => {
    const build = spawn(process.execPath, [NEXT, 'build'], { cwd: APP, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    build.stdout.on('data', (chunk) => (output += chunk));
    build.stderr.on('data', (chunk) => (output += chunk));
    build.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`next build exited ${code}:\n${output}`))));
  });
}, 240_000);
afterAll(() => rmSync(APP, { recursive: true, force: true }));

/** `next start` with the collector in BBC_UPSTREAM, behind the edge stand-in. */
async function startNext(collectorUrl: string): Promise<RunningFront> {
  const port = await freePort();
  const server = spawn(process.execPath, [NEXT, 'start', '-H', '127.0.0.1', '-p', String(port)], {
    cwd: APP,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...env(), BBC_UPSTREAM: collectorUrl },
  });
  const exited = new Promise((resolve) => server.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const read = (chunk: Buffer) => {
      output += String(chunk);
      if (/Ready in/.test(output)) resolve();
    };
    server.stdout!.on('data', read);
    server.stderr!.on('data', read);
    server.once('exit', (code) => reject(new Error(`next start exited ${code}:\n${output}`)));
  });
  return behindEdge({
    origin: `http://127.0.0.1:${port}`,
    stop: async () => {
      process.kill(-server.pid!, 'SIGTERM');
      await exited;
    },
  });
}

frontConformance('Next.js with proxy/nextjs/route.ts', startNext, {
  vendorCookies: 'namespaced',
  // Next.js merges repeated slashes by a redirect before any route runs (what is left can only
  // name a path of the collector); the route refuses every other hostile form itself.
  hostilePaths: 'contained',
  repeatedSlashes: 'redirected',
  // Next.js decodes the path before any route runs, and answers a broken escape 500 itself.
  brokenEscapes: 'framework-500',
});
