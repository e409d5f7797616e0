/**
 * End to end against the running demo (server kit in front of the emulator), in
 * Chromium: each test on a page reset to a fresh context's state (support/test.ts), each
 * worker with its own demo.
 */
import { type Page } from '@playwright/test';
import { expect, test as base } from './support/test.js';
import { decodeBlackbox } from '../src/emulator/index.js';
import { startDemo, type Demo } from '../demo/app.js';
import { configFromEnvironment } from '../demo/config.js';
import { loaderOptions } from './support/loader.js';

/** A long time limit for the tests of how fast a failure ends a capture: "well before it" (a quarter) holds on a busy machine. */
const LIMIT_MS = 60_000;

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
/**
 * The page as it looks, kept with the run's results: evidence, not an assertion. A starved
 * Chromium sometimes answers "Unable to capture screenshot": tried three times, then noted on
 * the test (its assertions decide it, not a picture).
 */
async function shot(page: Page, name: string) {
  for (let attempt = 1; ; attempt++) {
    try {
      await page.screenshot({ path: test.info().outputPath(`${name}.png`), fullPage: true });
      return;
    } catch (error) {
      if (attempt === 3) {
        test.info().annotations.push({ type: 'screenshot', description: `${name} not captured: ${String(error)}` });
        return;
      }
      await page.waitForTimeout(500);
    }
  }
}
async function playground(page: Page, demo: Demo, query = '') {
  // Not the load event: that waits for every script the loader adds, however slow a test makes them.
  await page.goto(`${demo.url}/playground${query}`, { waitUntil: 'domcontentloaded' });
  await page.waitForFunction(() => (window as any).capture !== undefined);
  return page.evaluate(() => (window as any).capture) as Promise<{
    blackbox?: string;
    code?: string;
    message?: string;
  }>;
}
const transactionWith = (demo: Demo, blackbox: string) =>
  emulatorOf(demo)
    .inspect.transactions()
    .filter((t) => t.blackboxes.includes(blackbox));

test('index page', async ({ page, demo, csp }) => {
  const response = await page.goto(`${demo.url}/`);
  expect(response!.headers()['content-security-policy']).toMatch(/'nonce-[^']+' 'strict-dynamic'/);
  await expect(page.getByRole('link', { name: 'Playground' }).first()).toBeVisible();
  await shot(page, 'index');
  void csp;
});

test('checkout page: the hidden field fills, the form post reaches PROCESSED with that blackbox', async ({
  page,
  demo,
  csp,
}) => {
  await page.goto(`${demo.url}/checkout`);
  await page.waitForFunction(() => (window as any).IGLOO?.getBlackbox?.().finished === true);
  const blackbox = await page.locator('#blackbox').inputValue();
  expect(decodeBlackbox(blackbox)?.sources.sort()).toEqual(['fp_dyn', 'fp_static', 'tp']);
  expect(emulatorOf(demo).inspect.requests('loader')).toBe(1); // the preload hint and the tag share one request
  await expect(page.locator('#capture-state')).toHaveAttribute('data-state', 'complete');
  await shot(page, 'checkout');
  await page.click('#pay');
  await expect(page.locator('#result')).toContainText('"status": "PROCESSED"');
  await expect(page.locator('#outcome')).toContainText('complete');
  await shot(page, 'checkout-result');
  const [tx] = transactionWith(demo, blackbox);
  expect(tx).toMatchObject({ status: 'PROCESSED', blackboxes: [blackbox] });
  void csp;
});

test('checkout page with <blackbox-capture>: a submit made at once is held, the post reaches PROCESSED, the label follows :state()', async ({
  page,
  demo,
  csp,
}) => {
  await page.goto(`${demo.url}/checkout-element`);
  await page.click('#pay'); // at once: the element holds the submit until the capture has ended
  await expect(page.locator('#result')).toContainText('"status": "PROCESSED"');
  await expect(page.locator('#outcome')).toContainText('complete');
  await page.goto(`${demo.url}/checkout-element`);
  await expect(page.locator('blackbox-capture:state(complete)')).toHaveCount(1);
  const label = await page.locator('#capture-state').evaluate((e) => getComputedStyle(e, '::after').content);
  expect(label).toBe('"Device check done"');
  await shot(page, 'checkout-element');
  void csp;
});

test('checkout page with <blackbox-capture>, JavaScript off: the label says the check needs it', async ({
  browser,
  demo,
}) => {
  const context = await browser.newContext({ javaScriptEnabled: false });
  try {
    const page = await context.newPage();
    await page.goto(`${demo.url}/checkout-element`);
    expect(await page.locator('#capture-state').evaluate((e) => getComputedStyle(e, '::after').content)).toBe(
      '"Device check needs JavaScript"',
    );
  } finally {
    await context.close();
  }
});

test("checkout page in adopt mode: the page's own loader tag, one loader request, PROCESSED", async ({
  page,
  demo,
  csp,
}) => {
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

test('SPA page: the capture survives client-side navigation, the loader is injected once, PROCESSED', async ({
  page,
  demo,
  csp,
}) => {
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
  expect(decodeBlackbox(added[0]!.blackboxes[0]!)?.embedded.fp_dyn?.ua).toBe(
    await page.evaluate(() => navigator.userAgent),
  );
  expect(emulatorOf(demo).inspect.requests('upload')).toBe(1);
  void csp;
});

test('playground: a custom global name works end to end', async ({ page, demo, csp }) => {
  const result = await playground(page, demo, '?globalName=ACME_RISK');
  expect(result.code).toBeUndefined();
  expect(
    await page.evaluate(() => [
      (window as any).io_global_object_name,
      typeof (window as any).ACME_RISK?.loader,
      typeof (window as any).IGLOO,
    ]),
  ).toEqual(['ACME_RISK', 'object', 'undefined']);
  await expect(page.locator('#transaction')).toContainText('PROCESSED');
  expect(transactionWith(demo, result.blackbox!)).toHaveLength(1);
  // The trace list has room for its numbers past 10 (and 100): the marker of "100." fits its indent.
  const [indent, marker] = await page.evaluate(() => {
    const list = document.getElementById('trace')!;
    const probe = document.createElement('span');
    probe.style.font = getComputedStyle(list).font;
    probe.textContent = '100. ';
    document.body.append(probe);
    const width = probe.getBoundingClientRect().width;
    probe.remove();
    return [parseFloat(getComputedStyle(list).paddingLeft), width];
  });
  expect(indent).toBeGreaterThanOrEqual(marker);
  await shot(page, 'playground');
  void csp;
});

test('third-party origin blocked: completes through the first-party proxy; the record shows first-party sources', async ({
  page,
  demo,
  csp,
}) => {
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
  test(`first-party proxy broken (${proxy}) and third party blocked: collection_failed, quickly`, async ({
    page,
    demo,
    csp,
  }) => {
    const started = Date.now();
    const result = await playground(page, demo, `?proxy=${proxy}&blockTp=1&timeoutMs=${LIMIT_MS}`);
    expect(result.code).toBe('collection_failed');
    expect(result.message).toMatch(/reverse proxy at "\/broken-(404|html)\/iojs"/);
    expect(Date.now() - started).toBeLessThan(LIMIT_MS / 4);
    await expect(page.locator('#outcome')).toContainText('collection_failed');
    // No blackbox, no transaction: the outcome alone is reported, nothing is followed.
    const statusReads: string[] = [];
    page.on('request', (request) => request.url().includes('/demo/') && statusReads.push(request.url()));
    await expect(page.locator('#delivery')).toContainText('the outcome was reported: HTTP 202');
    await expect(page.locator('#transaction')).toContainText('none: no blackbox was sent');
    await expect(page.locator('#answer')).toContainText('No answer: without a blackbox');
    await page.waitForTimeout(1200);
    expect(statusReads).toEqual([]);
    await expect(page.locator('#transaction')).not.toContainText('undefined');
    await shot(page, `playground-proxy-${proxy}`);
    void csp;
  });
}

test('first-party proxy broken (404) alone: the third party still completes, and the outcome says what is missing', async ({
  page,
  demo,
  csp,
}) => {
  const result = await playground(page, demo, '?proxy=404');
  expect(result.code).toBeUndefined();
  expect(decodeBlackbox(result.blackbox!)?.sources).toEqual(['tp']);
  await expect(page.locator('#outcome')).toContainText('degraded-first-party: fp_static_wdp failed');
  void csp;
});

test("first-party proxy answering HTML alone: the loader never completes; after the grace, the third party's blackbox, degraded-first-party", async ({
  page,
  demo,
  csp,
}) => {
  const started = Date.now();
  const result = await playground(page, demo, `?proxy=html&timeoutMs=${LIMIT_MS}`);
  expect(result.code).toBeUndefined();
  expect(decodeBlackbox(result.blackbox!)?.sources).toEqual(['tp']);
  expect(Date.now() - started).toBeLessThan(LIMIT_MS / 4); // the grace, not the time limit
  await expect(page.locator('#outcome')).toContainText('degraded-first-party: fp_static_wdp, fp_dyn_wdp failed');
  void csp;
});

test('first-party proxy answering HTML, grace as long as the time limit: timeout names the cause and keeps the partial', async ({
  page,
  demo,
  csp,
}) => {
  const result = await playground(page, demo, '?proxy=html&timeoutMs=2000&degradedGraceMs=600000');
  expect(result.code).toBe('timeout');
  expect(result.message).toMatch(
    /first-party static_wdp\.js, first-party dyn_wdp\.js.*reverse proxy at "\/broken-html\/iojs"/,
  );
  expect(decodeBlackbox(result.blackbox!)?.sources).toEqual(['tp']);
  await expect(page.locator('#outcome')).toContainText('outcome timeout-partial');
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

test('the integrator endpoint failing with 503 twice, then recovering: delivered exactly once', async ({
  page,
  demo,
  csp,
}) => {
  emulatorOf(demo).faults.fail('upload', { times: 2, status: 503 });
  const before = emulatorOf(demo).inspect.transactions().length;
  const result = await playground(page, demo);
  expect(result.code).toBeUndefined();
  await expect(page.locator('#delivery')).toHaveText(/^delivered \(HTTP 200\) after 3 attempts, \d+ ms$/);
  await expect(page.locator('#transaction')).toContainText('PROCESSED');
  expect(emulatorOf(demo).inspect.transactions().length - before).toBe(1);
  expect(emulatorOf(demo).inspect.requests('accountCreate')).toBe(1);
  expect(transactionWith(demo, result.blackbox!)[0]!.status).toBe('PROCESSED');
  void csp;
});

test('checkout: a submit before the capture is complete waits for it, then sends the final value with its outcome', async ({
  page,
  demo,
  csp,
}) => {
  const states: string[] = [];
  await page.exposeFunction('recordState', (state: string) => states.push(state));
  await page.addInitScript(() => {
    document.addEventListener('DOMContentLoaded', () => {
      const target = document.getElementById('capture-state')!;
      (window as any).recordState(target.dataset.state);
      new MutationObserver(() => (window as any).recordState(target.dataset.state)).observe(target, {
        attributes: true,
      });
    });
  });
  await page.goto(`${demo.url}/checkout`);
  await page.click('#pay'); // at once: the capture is still collecting
  await expect(page.locator('#result')).toContainText('"status": "PROCESSED"');
  await expect(page.locator('#outcome')).toContainText('complete');
  expect(states[0]).toBe('collecting');
  // The value that went was the final one: the emulator's record has every source.
  const [tx] = emulatorOf(demo).inspect.transactions().slice(-1);
  expect(decodeBlackbox(tx!.blackboxes[0]!)?.sources.sort()).toEqual(['fp_dyn', 'fp_static', 'tp']);
  void csp;
});

test('checkout: the third party blocked shows the capture as degraded, naming what failed', async ({
  page,
  demo,
  csp,
}) => {
  await page.route(`${emulatorOf(demo).thirdPartyUrl}/**`, (route) => route.abort('blockedbyclient'));
  await page.goto(`${demo.url}/checkout`);
  await expect(page.locator('#capture-state')).toHaveAttribute('data-state', 'degraded');
  await expect(page.locator('#capture-state')).toContainText('io_wdp failed');
  await shot(page, 'checkout-degraded');
  void csp;
});

test('checkout with JavaScript off: the result page shows the missing blackbox as an error', async ({
  browser,
  demo,
}) => {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  try {
    await page.goto(`${demo.url}/checkout`);
    await expect(page.locator('#capture-state')).toHaveAttribute('data-state', 'no-script');
    await page.click('#pay');
    await expect(page.locator('.result')).toHaveAttribute('data-state', 'error');
    await expect(page.locator('h1')).toHaveText('The device check could not run');
    await expect(page.locator('#result')).toContainText('No blackbox arrived');
    await expect(page.locator('#outcome')).toContainText('no-script');
    await expect(page.locator('#result')).toHaveCSS('color', 'rgb(180, 35, 24)'); // --bad, once the stylesheet is in
    await shot(page, 'checkout-no-javascript');
  } finally {
    await context.close();
  }
});

// Every page at a desktop and a phone width: nothing wider than the window.
for (const width of [1280, 390]) {
  test(`layout at ${width} px: no page overflows, labels stay with their inputs`, async ({ page, demo, csp }) => {
    await page.setViewportSize({ width, height: 900 });
    for (const path of [
      '/',
      '/checkout',
      '/checkout-adopt',
      '/checkout-element',
      '/spa',
      '/playground',
      '/playground?proxy=404',
    ]) {
      await page.goto(demo.url + path);
      await page.waitForLoadState('load');
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `${path} at ${width} px`).toBeLessThanOrEqual(0);
      // A label and its control on one line; the header's links unbroken.
      const broken = await page.evaluate(() =>
        [...document.querySelectorAll('label, header nav a')]
          .filter((el) => {
            const rects = [...el.getClientRects()];
            const lines = new Set(
              [...el.querySelectorAll('*'), el].flatMap((node) =>
                [...node.getClientRects()].map((r) => Math.round(r.top / 4)),
              ),
            );
            return rects.length > 1 || (el.tagName === 'LABEL' && lines.size > 2);
          })
          .map((el) => el.textContent.trim().slice(0, 30)),
      );
      expect(broken, `${path} at ${width} px`).toEqual([]);
      // Nothing sticks out of its card.
      const outside = await page.evaluate(() =>
        [...document.querySelectorAll('.card *')]
          .filter((el) => el.getBoundingClientRect().right > el.closest('.card')!.getBoundingClientRect().right + 1)
          .map((el) => `${el.tagName.toLowerCase()}#${el.id}`),
      );
      expect(outside, `${path} at ${width} px`).toEqual([]);
    }
    await page.goto(`${demo.url}/playground`);
    await page.waitForFunction(() => (window as any).capture !== undefined);
    await shot(page, `playground-${width}`);
    void csp;
  });
}

// The README's screenshots. Every run compares the pages with committed baselines (the parts
// that change from run to run masked), so that a layout change fails the run;
// `npx playwright test --update-snapshots` writes the baselines and, in the same run, the
// README's images in demo/screenshots/ with nothing masked. So the images cannot go stale.
test('README screenshots: the playground and the checkout', async ({ page, demo, csp }) => {
  test.skip(test.info().project.name !== 'emulated-loader', 'one set of screenshots');
  // Only a run with --update-snapshots ('all' or 'changed') writes the README's images.
  const updating = ['all', 'changed'].includes(test.info().config.updateSnapshots);
  await page.setViewportSize({ width: 1280, height: 900 });
  await playground(page, demo);
  await expect(page.locator('#transaction')).toContainText('PROCESSED');
  const changing = [
    page.locator('#timings td'),
    page.locator('#bars'),
    page.locator('#bb'),
    page.locator('#trace'),
    page.locator('#delivery'),
    page.locator('#transaction'),
    page.locator('#outcome'),
    page.locator('#update-summary'),
  ];
  if (updating) await page.screenshot({ path: 'demo/screenshots/playground.png', fullPage: true });
  await expect(page).toHaveScreenshot('playground.png', { fullPage: true, mask: changing, maxDiffPixelRatio: 0.02 });
  await page.goto(`${demo.url}/checkout`);
  await expect(page.locator('#capture-state')).toHaveAttribute('data-state', 'complete');
  if (updating) await page.screenshot({ path: 'demo/screenshots/checkout.png', fullPage: true });
  await expect(page).toHaveScreenshot('checkout.png', { fullPage: true, maxDiffPixelRatio: 0.02 });
  // The decision panel of the result page, a high-risk device.
  emulatorOf(demo).decide('next', {
    type: 'REJECTED',
    label: 'HIGH_RISK',
    alerts: ['Device Risk Global', 'IP Mismatch'],
    score: 96,
  });
  await page.click('#pay');
  await expect(page.locator('#decision .decision')).toHaveAttribute('data-decision', 'REJECTED');
  const ids = [page.locator('#result'), page.locator('#decision tr:last-child td')];
  if (updating) await page.screenshot({ path: 'demo/screenshots/decision.png', fullPage: true });
  await expect(page).toHaveScreenshot('decision.png', { fullPage: true, mask: ids, maxDiffPixelRatio: 0.02 });
  void csp;
});

// The Device Risk answer, as the demo's server sees it: each forced outcome end to end.
for (const [type, label, alert] of [
  ['PASSED', 'OK', 'none'],
  ['WARNING', 'SUSPICIOUS', 'IP Mismatch'],
  ['REJECTED', 'HIGH_RISK', 'Device Risk Global'],
] as const) {
  test(`checkout to a shown decision: ${type}`, async ({ page, demo, csp }) => {
    await page.goto(`${demo.url}/checkout`);
    await expect(page.locator('#capture-state')).toHaveAttribute('data-state', 'complete');
    emulatorOf(demo).decide('next', { type, label, alerts: alert === 'none' ? [] : [alert], score: 50 });
    await page.click('#pay');
    const panel = page.locator('#decision .decision');
    await expect(panel).toHaveAttribute('data-decision', type);
    await expect(panel).toHaveAttribute('data-via', 'callback');
    await expect(panel).toContainText(label);
    await expect(panel).toContainText(alert);
    await expect(panel).toContainText('a real shop never sends this to the browser');
    await shot(page, `decision-${type}`);
    void csp;
  });
}

test('playground: the decision switch forces the next outcome, and the panel shows it', async ({ page, demo, csp }) => {
  await playground(page, demo, '?decide=REJECTED');
  await expect(page.locator('#answer .decision')).toHaveAttribute('data-decision', 'REJECTED');
  await expect(page.locator('#answer')).toContainText('HIGH_RISK');
  await shot(page, 'playground-decision-rejected');
  void csp;
});

test('without a forced outcome the decision follows the blackbox: third party blocked is WARNING', async ({
  page,
  demo,
  csp,
}) => {
  await page.route(`${emulatorOf(demo).thirdPartyUrl}/**`, (route) => route.abort('blockedbyclient'));
  await page.goto(`${demo.url}/checkout`);
  await expect(page.locator('#capture-state')).toHaveAttribute('data-state', 'degraded');
  await page.click('#pay');
  await expect(page.locator('#decision .decision')).toHaveAttribute('data-decision', 'WARNING');
  await expect(page.locator('#decision')).toContainText('Third-party collection missing');
  void csp;
});

test('playground: diagnose() reports every check of the page, and names a broken proxy', async ({
  page,
  demo,
  csp,
}) => {
  await playground(page, demo);
  await page.getByRole('button', { name: 'Run diagnose()' }).click();
  await expect(page.locator('#diagnosis tr')).toHaveCount(11);
  await expect(page.locator('#diagnosis')).not.toContainText(/^fail/m);
  expect(await page.locator('#diagnosis td.bad').count()).toBe(0);
  await playground(page, demo, '?proxy=html');
  await page.getByRole('button', { name: 'Run diagnose()' }).click();
  await expect(page.locator('#diagnosis')).toContainText('static_script');
  await expect(page.locator('#diagnosis td.bad').first()).toBeVisible();
  await expect(page.locator('#diagnosis')).toContainText('answered HTML');
  // The dynamic script served by a cache (an Age header): dyn_not_cached fails, and only it.
  await playground(page, demo, '?proxy=cache');
  await page.getByRole('button', { name: 'Run diagnose()' }).click();
  await expect(page.locator('#diagnosis tr')).toHaveCount(11);
  const failing = await page
    .locator('#diagnosis tr')
    .evaluateAll((rows) =>
      (rows as HTMLTableRowElement[])
        .filter((r) => r.cells[0]!.textContent !== 'pass')
        .map((r) => r.cells[1]!.textContent),
    );
  expect(failing).toEqual(['dyn_not_cached']);
  void csp;
});
