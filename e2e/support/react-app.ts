/**
 * A React 19 app as a user's project has it: the package, React and react-dom from
 * node_modules, the README's hook snippet ('react-hook') as its component rendered in
 * StrictMode (index.html) and hydrated over its server rendering (hydrate.html), built by
 * Vite. The browser tests of every engine serve the same build.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { snippet } from '../../test/support/readme.js';

export interface ReactApp {
  /** The client-only page, served at /app/. */
  html: string;
  /** The hydrating page; `<!--ssr-->` marks where the server rendering goes. */
  hydrateHtml: string;
  serverHtml: string;
  /** The built assets by file name, served at /app/assets/. */
  assets: Map<string, string>;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The README's hook snippet is the app's component, as written; main.jsx renders it in StrictMode. */
const MAIN = `
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { Checkout } from './checkout.jsx';

createRoot(document.getElementById('root')).render(<StrictMode><Checkout /></StrictMode>);
`;
/** The same component hydrated over its server rendering. */
const HYDRATE = `
import { StrictMode } from 'react';
import { hydrateRoot } from 'react-dom/client';
import { Checkout } from './checkout.jsx';

hydrateRoot(document.getElementById('root'), <StrictMode><Checkout /></StrictMode>);
`;

/** Builds the app (Vite, production) and the component's server rendering; a few seconds. */
export function buildReactApp(): ReactApp {
  // The app as a user's project has it: the package, React 19 and react-dom from node_modules.
  const dir = mkdtempSync(join(tmpdir(), 'bbc-react-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(ROOT, join(dir, 'node_modules', 'blackbox-capture'));
  for (const name of ['react', 'react-dom', 'scheduler'])
    symlinkSync(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'shop', private: true, type: 'module' }));
  writeFileSync(
    join(dir, 'index.html'),
    '<!doctype html><html><head><meta charset="utf-8"></head><body><div id="root"></div><script type="module" src="/main.jsx"></script></body></html>',
  );
  writeFileSync(join(dir, 'main.jsx'), MAIN);
  writeFileSync(
    join(dir, 'hydrate.html'),
    '<!doctype html><html><head><meta charset="utf-8"></head><body><div id="root"><!--ssr--></div><script type="module" src="/hydrate.jsx"></script></body></html>',
  );
  writeFileSync(join(dir, 'hydrate.jsx'), HYDRATE);
  writeFileSync(join(dir, 'checkout.jsx'), snippet('react-hook').code);
  writeFileSync(
    join(dir, 'vite.config.mjs'),
    `export default { base: '/app/', logLevel: 'error', build: { outDir: 'out', rollupOptions: { input: { main: 'index.html', hydrate: 'hydrate.html' } } } };`,
  );
  // The server's rendering of the component, as a React server would make it (Node, react-dom/server).
  const server = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { build } from ${JSON.stringify(join(ROOT, 'node_modules/esbuild/lib/main.js'))};
       const out = await build({ entryPoints: ['checkout.jsx'], bundle: true, format: 'esm', platform: 'node', jsx: 'automatic', external: ['react', 'react-dom', 'blackbox-capture'], write: false });
       const { writeFileSync } = await import('node:fs');
       writeFileSync('checkout.server.mjs', out.outputFiles[0].text);
       const { Checkout } = await import('./checkout.server.mjs');
       const { createElement: h, StrictMode } = await import('react');
       const { renderToString } = await import('react-dom/server');
       process.stdout.write(renderToString(h(StrictMode, null, h(Checkout))));`,
    ],
    { cwd: dir, encoding: 'utf8' },
  );
  if (server.status !== 0) throw new Error(`server rendering failed: ${server.stderr}`);
  const { NODE_ENV: _, ...env } = process.env;
  const result = spawnSync(process.execPath, [join(ROOT, 'node_modules/vite/bin/vite.js'), 'build'], {
    cwd: dir,
    env,
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`vite build failed: ${result.stderr}`);
  const assets = new Map(
    readdirSync(join(dir, 'out', 'assets')).map((f) => [f, readFileSync(join(dir, 'out', 'assets', f), 'utf8')]),
  );
  return {
    html: readFileSync(join(dir, 'out', 'index.html'), 'utf8'),
    hydrateHtml: readFileSync(join(dir, 'out', 'hydrate.html'), 'utf8'),
    serverHtml: server.stdout,
    assets,
  };
}
