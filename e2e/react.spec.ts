/**
 * blackbox-capture/react in Chromium with each loader: a React 19 StrictMode app built by
 * Vite from the package, whose hook fills a controlled input that a form posts.
 */
import { expect, test } from './support/test.js';
import { decodeBlackbox } from '../src/emulator/index.js';
import { loaderOptions } from './support/loader.js';
import { buildReactApp, type ReactApp } from './support/react-app.js';
import { startSite, type Site } from './support/site.js';

let site: Site;
let built: ReactApp;

test.beforeAll(() => {
  built = buildReactApp();
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
