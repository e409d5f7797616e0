/**
 * The README's browser snippets, as written, in Chromium: the script-tag quick start, the npm
 * and lean quick starts (bundled with esbuild from the built package), the preload hint and adopt mode.
 * The site serves the README's layout: /static/blackbox-capture.umd.js, its messages file,
 * /static/vendor/loader.js (the loader of this project: the emulator's or the real 5.2.2), the
 * proxy at /iojs and an endpoint at /device-risk.
 */
import { expect, test } from './support/test.js';
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { decodeBlackbox } from '../src/emulator/index.js';
import { snippet } from '../test/support/readme.js';
import { loaderOptions } from './support/loader.js';
import { CMP_STUB } from './support/cmp.js';
import { startSite, type Site } from './support/site.js';

let site: Site;
test.beforeEach(async () => {
  site = await startSite(loaderOptions());
});
test.afterEach(async () => {
  await site.close();
});

const doc = (body: string) => `<!doctype html><html><head><meta charset="utf-8"></head><body>${body}</body></html>`;
/** The snippet `name` bundled by esbuild from the built package, as an app's bundler meets it. */
async function bundled(name: string): Promise<string> {
  const result = await build({
    stdin: { contents: snippet(name).code, loader: 'ts', resolveDir: fileURLToPath(new URL('..', import.meta.url)) },
    bundle: true,
    format: 'esm',
    target: 'es2022',
    write: false,
    splitting: false,
  });
  return result.outputFiles[0]!.text;
}
const complete = (blackbox: unknown) =>
  expect(decodeBlackbox(String(blackbox))?.sources.sort()).toEqual(['fp_dyn', 'fp_static', 'tp']);

test("the script-tag quick start ('quick-start-script-tag'): the field fills, the final value is posted once", async ({
  page,
}) => {
  const logs: string[] = [];
  page.on('console', (m) => logs.push(m.text()));
  await page.goto(site.page('/checkout.html', doc(snippet('quick-start-script-tag').code)));
  await expect.poll(() => site.deliveries.length).toBe(1);
  const { blackbox } = site.deliveries[0]!.body as { blackbox: string };
  complete(blackbox);
  await expect(page.locator('#blackbox')).toHaveValue(blackbox);
  await expect.poll(() => logs).toContain(`final blackbox ${blackbox.length}`);
});

test("the npm quick start ('quick-start-npm'), bundled by esbuild from the package", async ({ page }) => {
  site.file('/app.js', await bundled('quick-start-npm'), 'text/javascript');
  await page.goto(
    site.page('/npm.html', doc('<input type="hidden" id="blackbox"><script type="module" src="/app.js"></script>')),
  );
  await expect.poll(() => site.deliveries.length).toBe(1);
  const { blackbox } = site.deliveries[0]!.body as { blackbox: string };
  complete(blackbox);
  await expect(page.locator('#blackbox')).toHaveValue(blackbox);
});

test("the lean quick start ('quick-start-lean'), bundled by esbuild from the package: the final blackbox", async ({
  page,
}) => {
  site.file('/lean.js', await bundled('quick-start-lean'), 'text/javascript');
  await page.goto(
    site.page('/lean.html', doc('<input type="hidden" id="blackbox"><script type="module" src="/lean.js"></script>')),
  );
  await expect(page.locator('#blackbox')).not.toHaveValue('');
  complete(await page.locator('#blackbox').inputValue());
});

for (const name of ['preload-hint', 'adopt-mode']) {
  test(`the integration without an extra round trip: '${name}'`, async ({ page }) => {
    const requested: string[] = [];
    page.on('request', (request) => requested.push(new URL(request.url()).pathname));
    await page.goto(site.page(`/${name}.html`, doc(`<input type="hidden" id="blackbox">${snippet(name).code}`)));
    const blackbox = await page.evaluate(
      () => (window as unknown as { BlackboxCapture: { ready: Promise<string> } }).BlackboxCapture.ready,
    );
    complete(blackbox);
    await expect(page.locator('#blackbox')).toHaveValue(blackbox);
    expect(requested.filter((path) => path === '/static/vendor/loader.js')).toHaveLength(1);
  });
}

test("consent from a TCF v2 CMP ('consent-tcf'), bundled by esbuild: nothing before the choice, then the capture", async ({
  page,
}) => {
  site.file('/consent.js', await bundled('consent-tcf'), 'text/javascript');
  await page.goto(
    site.page(
      '/consent.html',
      doc(`${CMP_STUB}<input type="hidden" id="blackbox"><script type="module" src="/consent.js"></script>`),
    ),
  );
  await page.waitForTimeout(300);
  expect(await page.evaluate(() => (window as any).IGLOO)).toBeUndefined();
  expect(await page.locator('script[src$="loader.js"]').count()).toBe(0);
  await page.evaluate(() => (window as any).choose(true));
  await expect.poll(() => site.deliveries.length).toBe(1);
  complete((site.deliveries[0]!.body as { blackbox: string }).blackbox);
});

test("the form quick start ('quick-start-element'): a submit made at once posts the final blackbox and its outcome", async ({
  page,
}) => {
  await page.goto(site.page('/element.html', doc(snippet('quick-start-element').code)));
  await page.getByRole('button', { name: 'Pay' }).click();
  await expect.poll(() => site.forms.length).toBe(1);
  complete(site.forms[0]!.blackbox);
  expect(site.forms[0]!['blackbox-outcome']).toBe('complete');
});
