/**
 * The emulated vendor scripts in Chromium, integrated the plain way the vendor
 * documents (a config script, then the loader tag): both collection paths, the
 * third-party origin blocked, and the first-party path failing.
 */
import { type Page } from '@playwright/test';
import { expect, test } from './support/test.js';
import { decodeBlackbox } from '../src/emulator/index.js';
import { loaderOptions } from './support/loader.js';
import { startSite, type Site } from './support/site.js';

let site: Site;
test.beforeEach(async () => {
  site = await startSite(loaderOptions());
});
test.afterEach(async () => {
  await site.close();
});

/** The vendor's documented integration: config object first, then the loader. */
const plainPage = (loaderUrl: string) => `<!doctype html><html><head><meta charset="utf-8">
<script>
  window.updates = [];
  window.IGLOO = window.IGLOO || {
    enable_flash: false,
    bb_callback: function (bb, complete) { window.updates.push([bb, complete]); },
    loader: { version: 'general5', uri_hook: '/iojs', subkey: 'DEMO' },
  };
</script>
<script src="${loaderUrl}"></script></head><body></body></html>`;

async function finalBlackbox(page: Page) {
  await page.waitForFunction(() => (window as any).updates.some(([, complete]: [string, boolean]) => complete));
  return page.evaluate(() => (window as any).updates as Array<[string, boolean]>);
}

test('both collection paths contribute; updates grow; one final call', async ({ page }) => {
  await page.goto(site.page('/plain.html', plainPage(site.loaderUrl)));
  const updates = await finalBlackbox(page);
  expect(updates.filter(([, c]) => c)).toHaveLength(1);
  const final = updates.at(-1)![0];
  expect(decodeBlackbox(final)?.sources.sort()).toEqual(['fp_dyn', 'fp_static', 'tp']);
  expect(decodeBlackbox(final)?.embedded.fp_dyn?.ua).toBe(await page.evaluate(() => navigator.userAgent));
  expect(site.emulator.inspect.requests('collector')).toBe(2);
  expect(site.emulator.inspect.requests('thirdParty')).toBe(1);
  expect(await page.evaluate(() => (window as any).IGLOO.getBlackbox().finished)).toBe(true);
});

test('third-party origin blocked: the first-party path still completes', async ({ page }) => {
  await page.route(`${site.emulator.thirdPartyUrl}/**`, (route) => route.abort('blockedbyclient'));
  await page.goto(site.page('/plain.html', plainPage(site.loaderUrl)));
  const final = (await finalBlackbox(page)).at(-1)![0];
  expect(decodeBlackbox(final)?.sources.sort()).toEqual(['fp_dyn', 'fp_static']);
  expect(await page.evaluate(() => (window as any).IGLOO.loader.io_wdp_load_failure)).toBe('true');
});

test('first-party path failing (prefix not stripped): static_wdp.js flagged, dyn_wdp.js never requested (an emulator bug: it requested both at once), the third party completes', async ({
  page,
}) => {
  site.override(/\/iojs\//, 404, 'not found', 'text/plain');
  const requested: string[] = [];
  page.on('request', (request) => requested.push(request.url()));
  await page.goto(site.page('/plain.html', plainPage(site.loaderUrl)));
  const final = (await finalBlackbox(page)).at(-1)![0];
  expect(decodeBlackbox(final)?.sources).toEqual(['tp']);
  expect(requested.filter((url) => url.includes('/iojs/')).map((url) => url.split('?')[0]!.split('/').pop())).toEqual([
    'static_wdp.js',
  ]);
  const flags = await page.evaluate(() => {
    const l = (window as any).IGLOO.loader;
    return [l.fp_static_wdp_load_failure, l.fp_dyn_wdp_load_failure];
  });
  expect(flags).toEqual(['true', undefined]);
});
