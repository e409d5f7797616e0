/**
 * End to end against the running demo (server kit in front of the emulator), in
 * Chromium: each test in a fresh browser context, each worker with its own demo.
 */
import { expect, test as base, type Page } from '@playwright/test';
import { decodeBlackbox } from '../src/emulator/index.js';
import { startDemo, type Demo } from '../demo/app.js';
import { configFromEnvironment } from '../demo/config.js';
import { loaderOptions } from './support/loader.js';

const test = base.extend<{ csp: string[] }, { demo: Demo }>({
  demo: [
    async ({}, use) => {
      const demo = await startDemo(
        { ...configFromEnvironment({}), port: 0 },
        { delays: { fp_static: [20], fp_dyn: [40, 80], tp: [30, 60] }, clientMaxAttempts: 1, ...loaderOptions() },
      );
      await use(demo);
      await demo.close();
    },
    { scope: 'worker' },
  ],
  // Every page runs under a strict CSP; any violation fails the test.
  csp: async ({ page }, use) => {
    const violations: string[] = [];
    page.on('console', (m) => /Content Security Policy|Trusted Type/i.test(m.text()) && violations.push(m.text()));
    await use(violations);
    expect(violations).toEqual([]);
  },
});

test.beforeEach(({ demo }) => {
  demo.emulator!.faults.clear();
  demo.emulator!.inspect.reset();
});

const emulatorOf = (demo: Demo) => demo.emulator!;
async function shot(page: Page, name: string) {
  await page.screenshot({ path: test.info().outputPath(`${name}.png`), fullPage: true });
}
async function playground(page: Page, demo: Demo, query = '') {
  await page.goto(`${demo.url}/playground${query}`);
  await page.waitForFunction(() => (window as any).capture !== undefined);
  return page.evaluate(() => (window as any).capture) as Promise<{ blackbox?: string; code?: string; message?: string }>;
}
const transactionWith = (demo: Demo, blackbox: string) => emulatorOf(demo).inspect.transactions().filter((t) => t.blackboxes.includes(blackbox));

test('index page', async ({ page, demo, csp }) => {
  const response = await page.goto(`${demo.url}/`);
  expect(response!.headers()['content-security-policy']).toMatch(/'nonce-[^']+' 'strict-dynamic'/);
  await expect(page.getByRole('link', { name: 'Playground' }).first()).toBeVisible();
  await shot(page, 'index');
  void csp;
});

test('checkout page: the hidden field fills, the form post reaches PROCESSED with that blackbox', async ({ page, demo, csp }) => {
  await page.goto(`${demo.url}/checkout`);
  await page.waitForFunction(() => (window as any).IGLOO?.getBlackbox?.().finished === true);
  const blackbox = await page.locator('#blackbox').inputValue();
  expect(decodeBlackbox(blackbox)?.sources.sort()).toEqual(['fp_dyn', 'fp_static', 'tp']);
  expect(emulatorOf(demo).inspect.requests('loader')).toBe(1); // the preload hint and the tag share one request
  await shot(page, 'checkout');
  await page.click('#pay');
  await expect(page.locator('#result')).toContainText('"status": "PROCESSED"');
  await shot(page, 'checkout-result');
  const [tx] = transactionWith(demo, blackbox);
  expect(tx).toMatchObject({ status: 'PROCESSED', blackboxes: [blackbox] });
  void csp;
});

test('checkout page in adopt mode: the page\'s own loader tag, one loader request, PROCESSED', async ({ page, demo, csp }) => {
  await page.goto(`${demo.url}/checkout-adopt`);
  await page.waitForFunction(() => (window as any).IGLOO?.getBlackbox?.().finished === true);
  const blackbox = await page.locator('#blackbox').inputValue();
  await page.click('#pay');
  await expect(page.locator('#result')).toContainText('"status": "PROCESSED"');
  expect(emulatorOf(demo).inspect.requests('loader')).toBe(1);
  expect(transactionWith(demo, blackbox)).toHaveLength(1);
  await shot(page, 'checkout-adopt');
  void csp;
});

test('SPA page: the capture survives client-side navigation, the loader is injected once, PROCESSED', async ({ page, demo, csp }) => {
  const before = emulatorOf(demo).inspect.transactions().length;
  await page.goto(`${demo.url}/spa`);
  await page.click('text=Go to checkout');
  await expect(page.locator('#device-check')).toHaveText('delivered, PROCESSED');
  await shot(page, 'spa-checkout');
  await page.click('text=Back to cart');
  await page.click('text=Go to checkout');
  await page.click('text=Place order');
  await expect(page.locator('#device-check')).toHaveText('delivered, PROCESSED');
  await page.goBack();
  await expect(page.locator('#loader-tags')).toHaveText('1');
  expect(emulatorOf(demo).inspect.requests('loader')).toBe(1);
  // Delivered exactly once, with the page's own blackbox (the dynamic script saw this browser).
  const added = emulatorOf(demo).inspect.transactions().slice(before);
  expect(added).toHaveLength(1);
  expect(added[0]!.status).toBe('PROCESSED');
  expect(decodeBlackbox(added[0]!.blackboxes[0]!)?.embedded.fp_dyn?.ua).toBe(await page.evaluate(() => navigator.userAgent));
  expect(emulatorOf(demo).inspect.requests('upload')).toBe(1);
  void csp;
});

test('playground: a custom global name works end to end', async ({ page, demo, csp }) => {
  const result = await playground(page, demo, '?globalName=ACME_RISK');
  expect(result.code).toBeUndefined();
  expect(await page.evaluate(() => [(window as any).io_global_object_name, typeof (window as any).ACME_RISK?.loader, typeof (window as any).IGLOO])).toEqual(['ACME_RISK', 'object', 'undefined']);
  await expect(page.locator('#transaction')).toContainText('PROCESSED');
  expect(transactionWith(demo, result.blackbox!)).toHaveLength(1);
  await shot(page, 'playground');
  void csp;
});

test('third-party origin blocked: completes through the first-party proxy; the record shows first-party sources', async ({ page, demo, csp }) => {
  await page.route(`${emulatorOf(demo).thirdPartyUrl}/**`, (route) => route.abort('blockedbyclient'));
  const result = await playground(page, demo);
  expect(result.code).toBeUndefined();
  await expect(page.locator('#transaction')).toContainText('PROCESSED');
  const [tx] = transactionWith(demo, result.blackbox!);
  expect(decodeBlackbox(tx!.blackboxes[0]!)?.sources.sort()).toEqual(['fp_dyn', 'fp_static']);
  await shot(page, 'playground-third-party-blocked');
  void csp;
});

for (const proxy of ['404', 'html']) {
  test(`first-party proxy broken (${proxy}) and third party blocked: collection_failed, quickly`, async ({ page, demo, csp }) => {
    const started = Date.now();
    const result = await playground(page, demo, `?proxy=${proxy}&blockTp=1`);
    expect(result.code).toBe('collection_failed');
    expect(result.message).toMatch(/reverse proxy at "\/broken-(404|html)\/iojs"/);
    expect(Date.now() - started).toBeLessThan(5000);
    await expect(page.locator('#outcome')).toContainText('collection_failed');
    await shot(page, `playground-proxy-${proxy}`);
    void csp;
  });
}

test('first-party proxy broken (404) alone: the third party still completes, and the blackbox says so', async ({ page, demo, csp }) => {
  const result = await playground(page, demo, '?proxy=404');
  expect(result.code).toBeUndefined();
  expect(decodeBlackbox(result.blackbox!)?.sources).toEqual(['tp']);
  void csp;
});

test('first-party proxy answering HTML alone: the loader never completes; timeout names the cause and keeps the partial', async ({ page, demo, csp }) => {
  const result = await playground(page, demo, '?proxy=html&timeoutMs=2000');
  expect(result.code).toBe('timeout');
  expect(result.message).toMatch(/first-party static_wdp\.js, first-party dyn_wdp\.js.*reverse proxy at "\/broken-html\/iojs"/);
  expect(decodeBlackbox(result.blackbox!)?.sources).toEqual(['tp']);
  void csp;
});

test('loader 404: loader_failed', async ({ page, demo, csp }) => {
  emulatorOf(demo).faults.fail('loader', { status: 404 });
  const result = await playground(page, demo);
  expect(result.code).toBe('loader_failed');
  expect(result.message).toContain(emulatorOf(demo).loaderUrl);
  void csp;
});

test('a capture that never completes: timeout, with the partial blackbox', async ({ page, demo, csp }) => {
  emulatorOf(demo).faults.latency('thirdParty', 4000);
  emulatorOf(demo).faults.latency('collector', 4000);
  const result = await playground(page, demo, '?timeoutMs=1500');
  expect(result.code).toBe('timeout');
  emulatorOf(demo).faults.clear();
  void csp;
});

test('the integrator endpoint failing with 503 twice, then recovering: delivered exactly once', async ({ page, demo, csp }) => {
  emulatorOf(demo).faults.fail('upload', { times: 2, status: 503 });
  const before = emulatorOf(demo).inspect.transactions().length;
  const result = await playground(page, demo);
  expect(result.code).toBeUndefined();
  await expect(page.locator('#delivery')).toHaveText(/attempts: 503 in \d+ ms, 503 in \d+ ms, 200 in \d+ ms/);
  await expect(page.locator('#transaction')).toContainText('PROCESSED');
  expect(emulatorOf(demo).inspect.transactions().length - before).toBe(1);
  expect(emulatorOf(demo).inspect.requests('accountCreate')).toBe(1);
  expect(transactionWith(demo, result.blackbox!)[0]!.status).toBe('PROCESSED');
  void csp;
});
