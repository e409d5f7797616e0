/**
 * blackbox-capture/react in Chromium with each loader: a React 19 StrictMode app built by
 * Vite from the package, whose hook fills a controlled input that a form posts.
 */
import { expect, test } from './support/test.js';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeBlackbox } from '../src/emulator/index.js';
import { snippet } from '../test/support/readme.js';
import { loaderOptions } from './support/loader.js';
import { startSite, type Site } from './support/site.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
let site: Site;
let built: { html: string; hydrateHtml: string; serverHtml: string; assets: Map<string, string> };

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

test.beforeAll(() => {
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
  built = {
    html: readFileSync(join(dir, 'out', 'index.html'), 'utf8'),
    hydrateHtml: readFileSync(join(dir, 'out', 'hydrate.html'), 'utf8'),
    serverHtml: server.stdout,
    assets,
  };
});
test.beforeEach(async () => {
  site = await startSite(loaderOptions());
});
test.afterEach(async () => {
  await site.close();
});

test("the README's hook ('react-hook') in a React 19 StrictMode app built by Vite: one loader, the hook fills a controlled input, the form posts the final blackbox", async ({
  page,
}) => {
  const problems: string[] = [];
  // React's warnings and errors, and any failed request but the browser's own favicon probe.
  page.on(
    'console',
    (m) =>
      (m.type() === 'error' || m.type() === 'warning') &&
      !/Failed to load resource/.test(m.text()) &&
      problems.push(m.text()),
  );
  page.on(
    'response',
    (r) => r.status() >= 400 && !r.url().endsWith('/favicon.ico') && problems.push(`${r.status()} ${r.url()}`),
  );
  page.on('pageerror', (e) => problems.push(e.message));
  for (const [name, code] of built.assets)
    site.file(`/app/assets/${name}`, code, name.endsWith('.css') ? 'text/css' : 'text/javascript');
  await page.goto(site.page('/app/', built.html));
  const pay = page.getByRole('button', { name: 'Pay' });
  await expect(pay).toBeEnabled({ timeout: 10_000 });
  const value = await page.locator('input[name=blackbox]').inputValue();
  expect(decodeBlackbox(value)?.sources.sort()).toEqual(['fp_dyn', 'fp_static', 'tp']);
  expect(await page.locator('script[src$="/static/vendor/loader.js"]').count()).toBe(1);
  await pay.click();
  await expect.poll(() => site.forms.length).toBe(1);
  expect(site.forms[0]).toEqual({ blackbox: value, 'blackbox-outcome': 'complete' });
  expect(problems).toEqual([]);
});

test('hydrated over its server rendering: no mismatch, then the capture as in the client-only app', async ({
  page,
}) => {
  const problems: string[] = [];
  page.on(
    'console',
    (m) =>
      (m.type() === 'error' || m.type() === 'warning') &&
      !/Failed to load resource/.test(m.text()) &&
      problems.push(m.text()),
  );
  page.on('pageerror', (e) => problems.push(e.message));
  for (const [name, code] of built.assets)
    site.file(`/app/assets/${name}`, code, name.endsWith('.css') ? 'text/css' : 'text/javascript');
  expect(built.serverHtml).toContain('name="blackbox"');
  await page.goto(site.page('/app/hydrate.html', built.hydrateHtml.replace('<!--ssr-->', built.serverHtml)));
  const pay = page.getByRole('button', { name: 'Pay' });
  await expect(pay).toBeEnabled({ timeout: 10_000 });
  expect(decodeBlackbox(await page.locator('input[name=blackbox]').inputValue())?.sources).toHaveLength(3);
  expect(problems).toEqual([]);
});
