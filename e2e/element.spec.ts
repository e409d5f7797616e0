/**
 * <blackbox-capture> (blackbox-capture/element) in Chromium with each loader: a plain HTML
 * form with no page code posts the final blackbox under the element's name, holds a submit
 * until the capture ends or max-wait-ms has passed, and shows its state through :state().
 */
import { expect, test } from './support/test.js';
import { decodeBlackbox } from '../src/emulator/index.js';
import { loaderOptions } from './support/loader.js';
import { startSite, type Site } from './support/site.js';

/** The capture's time limit where a test shows that max-wait-ms, not the limit, ends the hold. */
const LIMIT_MS = 60_000;

let site: Site;
test.beforeEach(async () => {
  site = await startSite(loaderOptions());
});
test.afterEach(async () => {
  await site.close();
});

const form = (attributes: string, extraHead = '') => `<!doctype html><html><head><meta charset="utf-8">${extraHead}
  <script type="module" src="/dist/element.js"></script>
  <style>blackbox-capture:state(complete) + button { outline: 3px solid green; }</style></head>
  <body><form method="post" action="/form">
    <input name="order" value="o-1">
    <blackbox-capture name="blackbox" loader-url="${site.loaderUrl}" ${attributes}></blackbox-capture>
    <button id="pay">Pay</button>
  </form></body></html>`;

test('max-wait-ms bounds the hold: a capture still running goes with what there is, outcome timeout-partial', async ({
  page,
}) => {
  site.override(/\/iojs\//, 200, '<!doctype html><html><body>SPA</body></html>', 'text/html');
  await page.goto(site.page('/slow.html', form(`max-wait-ms="400" timeout-ms="${LIMIT_MS}"`)));
  await expect(page.locator('blackbox-capture')).toHaveCount(1);
  // Submitted by the page itself as the first value arrives: a click from here comes a round trip
  // later, which on a busy machine can outlast the degraded grace, and the capture would be over.
  const clicked = Date.now();
  await page.evaluate(
    () =>
      new Promise<void>((resolve) => {
        const submitOnValue = () => {
          if (!(document.querySelector('blackbox-capture') as any)?.value) return setTimeout(submitOnValue, 5);
          (document.querySelector('#pay') as HTMLButtonElement).click();
          resolve();
        };
        submitOnValue();
      }),
  );
  await expect(page.locator('#posted')).toBeVisible();
  expect(Date.now() - clicked).toBeLessThan(LIMIT_MS / 4); // max-wait-ms, not the capture's time limit
  expect(site.forms[0]!['blackbox-outcome']).toBe('timeout-partial');
  expect(decodeBlackbox(site.forms[0]!.blackbox!)?.sources).toEqual(['tp']);
});

test('a submit after completion is not held; a degraded capture posts its outcome', async ({ page }) => {
  site.override(/\/iojs\//, 404, 'not found', 'text/plain');
  await page.goto(site.page('/degraded.html', form('')));
  await expect(page.locator('blackbox-capture:state(degraded)')).toHaveCount(1);
  await page.locator('#pay').click();
  await expect(page.locator('#posted')).toBeVisible();
  expect(site.forms[0]!['blackbox-outcome']).toBe('degraded-first-party');
});

test('a failed capture shows :state(failed) and the form still posts, with the outcome', async ({ page }) => {
  site.emulator.faults.fail('loader', { status: 404 });
  await page.goto(site.page('/failed.html', form('')));
  await expect(page.locator('blackbox-capture:state(failed)')).toHaveCount(1);
  await page.locator('#pay').click();
  await expect(page.locator('#posted')).toBeVisible();
  expect(site.forms[0]!['blackbox-outcome']).toBe('loader_failed');
  expect(site.forms[0]!.blackbox).toBeUndefined();
});

test('two copies of the element module: registered once, one loader run', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(site.page('/twice.html', form('', '<script type="module" src="/dist/element.js?copy=2"></script>')));
  await expect(page.locator('blackbox-capture:state(complete)')).toHaveCount(1);
  expect(errors).toEqual([]);
  expect(await page.locator(`script[src="${site.loaderUrl}"]`).count()).toBe(1);
});

test('under a strict CSP the nonce attribute reaches the loader tag, though the browser hides the attribute itself', async ({
  page,
}) => {
  const violations: string[] = [];
  page.on('console', (m) => /Content Security Policy/i.test(m.text()) && violations.push(m.text()));
  const csp = "script-src 'nonce-r4nd0m' 'strict-dynamic'; object-src 'none'; base-uri 'none'";
  const html = form('nonce="r4nd0m"').replace(
    '<script type="module" src="/dist/element.js">',
    '<script type="module" nonce="r4nd0m" src="/dist/element.js">',
  );
  await page.goto(site.page('/csp.html', html, { 'content-security-policy': csp }));
  await expect(page.locator('blackbox-capture:state(complete)')).toHaveCount(1);
  // Nonce hiding: what the page's scripts see of the attribute is empty, the property keeps it.
  expect(
    await page.locator('blackbox-capture').evaluate((e: HTMLElement) => [e.getAttribute('nonce'), e.nonce]),
  ).toEqual(['', 'r4nd0m']);
  expect(await page.locator(`script[src="${site.loaderUrl}"]`).evaluate((s: HTMLScriptElement) => s.nonce)).toBe(
    'r4nd0m',
  );
  expect(violations).toEqual([]);
});

test('checkout-id with reload="false": another checkout in the page run is blackbox_used and never posted; a full load gives it its own', async ({
  page,
}) => {
  const checkout = (id: string) =>
    `<form method="post" action="/form"><blackbox-capture name="blackbox" loader-url="${site.loaderUrl}" post-url="/device-risk" checkout-id="${id}" reload="false"></blackbox-capture></form>`;
  const page1 = `<!doctype html><html><head><meta charset="utf-8"><script type="module" src="/dist/element.js"></script></head><body>${checkout('A')}</body></html>`;
  await page.goto(site.page('/checkout-a.html', page1));
  await expect(page.locator('blackbox-capture:state(complete)')).toHaveCount(1);
  await expect.poll(() => site.deliveries.length).toBe(1);
  const first = site.deliveries[0]!.body as { blackbox: string; capturedAt: number };
  expect(first.capturedAt).toBeLessThanOrEqual(Date.now());
  // A navigation without a full load (as Turbo, htmx or a router make it): checkout B replaces A.
  const told = await page.evaluate(
    (html) =>
      new Promise<{ code: string; message: string }>((resolve) => {
        document.addEventListener(
          'blackboxerror',
          (e) => {
            const { code, message } = (e as CustomEvent<Error & { code: string }>).detail;
            resolve({ code, message });
          },
          { once: true },
        );
        document.body.innerHTML = html;
      }),
    checkout('B'),
  );
  expect(told.code).toBe('blackbox_used');
  expect(told.message).toMatch(/went to checkout "A".*checkout "B".*fully/);
  await expect(page.locator('blackbox-capture:state(failed)')).toHaveCount(1);
  expect(await page.evaluate(() => document.querySelector('blackbox-capture')!.value)).toBe('');
  // Checkout A rendered again keeps its blackbox, posted once.
  await page.evaluate((html) => (document.body.innerHTML = html), checkout('A'));
  await expect(page.locator('blackbox-capture:state(complete)')).toHaveCount(1);
  expect(await page.evaluate(() => document.querySelector('blackbox-capture')!.value)).toBe(first.blackbox);
  // A full load of checkout B: a page run, and a blackbox, of its own.
  await page.goto(site.page('/checkout-b.html', page1.replace(checkout('A'), checkout('B'))));
  await expect(page.locator('blackbox-capture:state(complete)')).toHaveCount(1);
  await expect.poll(() => site.deliveries.length).toBe(2);
  const second = site.deliveries[1]!.body as { blackbox: string; capturedAt: number };
  expect(second.blackbox).not.toBe(first.blackbox);
  expect(second.capturedAt).toBeGreaterThan(first.capturedAt);
});

test('checkout-id: another checkout in the page run reloads its URL, once, and gets its own blackbox; two in one page end blackbox_used', async ({
  page,
}) => {
  const checkout = (id: string) =>
    `<form method="post" action="/form"><blackbox-capture name="blackbox" loader-url="${site.loaderUrl}" post-url="/device-risk" checkout-id="${id}"></blackbox-capture></form>`;
  const shell = (body: string) =>
    `<!doctype html><html><head><meta charset="utf-8"><script type="module" src="/dist/element.js"></script></head><body>${body}</body></html>`;
  const pageB = site.page('/reload-checkout-b.html', shell(checkout('B')));
  await page.goto(site.page('/reload-checkout-a.html', shell(checkout('A'))));
  await expect(page.locator('blackbox-capture:state(complete)')).toHaveCount(1);
  await expect.poll(() => site.deliveries.length).toBe(1);
  const first = (site.deliveries[0]!.body as { blackbox: string }).blackbox;
  // A router's navigation: checkout B's URL, then its page, in the same page run.
  await page.evaluate(() => ((window as { run?: string }).run = 'A'));
  const reloaded = page.waitForEvent('load');
  await page.evaluate(
    ([url, html]) => {
      history.pushState(null, '', url);
      document.body.innerHTML = html;
    },
    [new URL(pageB).pathname, checkout('B')] as const,
  );
  await reloaded;
  expect(await page.evaluate(() => (window as { run?: string }).run ?? 'new')).toBe('new');
  expect(page.url()).toBe(pageB);
  await expect(page.locator('blackbox-capture:state(complete)')).toHaveCount(1);
  await expect.poll(() => site.deliveries.length).toBe(2);
  expect((site.deliveries[1]!.body as { blackbox: string }).blackbox).not.toBe(first);
  // Two checkouts in one page: no reload separates them; one reload, then blackbox_used.
  const loads: string[] = [];
  page.on('framenavigated', (frame) => frame === page.mainFrame() && loads.push(frame.url()));
  await page.goto(site.page('/reload-two-checkouts.html', shell(checkout('C') + checkout('D'))));
  await expect(page.locator('blackbox-capture:state(failed)')).toHaveCount(1, { timeout: 15_000 });
  await expect(page.locator('blackbox-capture:state(complete)')).toHaveCount(1);
  expect(loads).toHaveLength(2); // the page, and the package's one reload
  expect(await page.locator('blackbox-capture:state(failed)').getAttribute('checkout-id')).toBe('D');
});
