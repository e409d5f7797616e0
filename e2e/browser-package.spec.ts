/**
 * The built browser files (dist/index.js and the UMD file) in Chromium, against
 * the emulated vendor scripts served from 127.0.0.1.
 */
import { expect, test } from './support/test.js';
import { decodeBlackbox } from '../src/emulator/scripts/routes.js';
import { loaderOptions } from './support/loader.js';
import { startSite, type Site } from './support/site.js';

/**
 * The capture's time limit in the tests of how fast a failure ends it: long, so that "well
 * before the time limit" (under a quarter of it) holds on a busy machine and still fails
 * should a capture wait for the limit.
 */
const LIMIT_MS = 60_000;

let site: Site;
test.beforeEach(async () => {
  site = await startSite(loaderOptions());
});
test.afterEach(async () => {
  await site.close();
});

const doc = (head: string, body = '') =>
  `<!doctype html><html><head><meta charset="utf-8">${head}</head><body>${body}</body></html>`;

/** A module script that runs captureBlackbox from the ESM build and stores the outcome. */
const esmCapture = (options: string, nonce = '') => `
<script type="module"${nonce ? ` nonce="${nonce}"` : ''}>
  import { captureBlackbox } from '/dist/index.js';
  window.outcome = captureBlackbox(${options}).then(
    (blackbox) => ({ blackbox }),
    (error) => ({ code: error.code, message: error.message, blackbox: error.blackbox }),
  );
</script>`;

async function outcome(page: import('@playwright/test').Page) {
  await page.waitForFunction(() => (window as any).outcome !== undefined);
  return page.evaluate(() => (window as any).outcome) as Promise<{
    blackbox?: string;
    code?: string;
    message?: string;
  }>;
}

/** The page's listeners of a script tag's capture: its blackbox or its error becomes the outcome. */
const TAG_EVENTS = `<script>document.addEventListener('blackbox', (e) => { window.outcome = { blackbox: e.detail }; });
  document.addEventListener('blackboxerror', (e) => { window.outcome = { code: e.detail.code, message: e.detail.message }; });</script>`;

/** The tag's capture ended with the final blackbox of every source. */
async function expectTagCaptured(page: import('@playwright/test').Page) {
  const { blackbox, code, message } = await outcome(page);
  expect(code, message).toBeUndefined();
  expect(decodeBlackbox(blackbox!)?.sources).toHaveLength(3);
}

test('UMD build: the API on window.BlackboxCapture with a custom global name', async ({ page }) => {
  const url = site.page(
    '/umd-api.html',
    doc(`<script src="/dist/blackbox-capture.umd.js"></script>
      <script>window.outcome = BlackboxCapture.captureBlackbox({ loaderUrl: ${JSON.stringify(site.loaderUrl)}, globalName: 'ACME_DEVICE' })
        .then((blackbox) => ({ blackbox }), (e) => ({ code: e.code }));</script>`),
  );
  await page.goto(url);
  const { blackbox } = await outcome(page);
  expect(decodeBlackbox(blackbox!)?.sources).toHaveLength(3);
  expect(
    await page.evaluate(() => [
      (window as any).io_global_object_name,
      (window as any).ACME_DEVICE.loader.loaderVer,
      typeof (window as any).IGLOO,
    ]),
  ).toEqual(['ACME_DEVICE', '5.2.2', 'undefined']);
});

test('real HTML in place of the first-party scripts, third party blocked: collection_failed quickly', async ({
  page,
}) => {
  site.override(/\/iojs\//, 200, '<!doctype html><html><body>SPA</body></html>', 'text/html');
  await page.route(`${site.emulator.thirdPartyUrl}/**`, (route) => route.abort('blockedbyclient'));
  const url = site.page(
    '/html-fallback.html',
    doc(esmCapture(`{ loaderUrl: ${JSON.stringify(site.loaderUrl)}, timeoutMs: ${LIMIT_MS} }`)),
  );
  const started = Date.now();
  await page.goto(url);
  const result = await outcome(page);
  expect(result.code).toBe('collection_failed');
  expect(result.message).toMatch(/reverse proxy at "\/iojs"/);
  expect(Date.now() - started).toBeLessThan(LIMIT_MS / 4);
});

test('loader 404: loader_failed naming the URL', async ({ page }) => {
  site.emulator.faults.fail('loader', { status: 404 });
  await page.goto(site.page('/404.html', doc(esmCapture(`{ loaderUrl: ${JSON.stringify(site.loaderUrl)} }`))));
  const result = await outcome(page);
  expect(result.code).toBe('loader_failed');
  expect(result.message).toContain(site.loaderUrl);
});

test('CSP without strict-dynamic and a wrong nonce: the loader is refused, loader_failed', async ({ page }) => {
  const csp = "script-src 'nonce-r4nd0m'";
  await page.goto(
    site.page(
      '/csp-wrong.html',
      doc(esmCapture(`{ loaderUrl: ${JSON.stringify(site.loaderUrl)}, nonce: 'wrong' }`, 'r4nd0m')),
      { 'content-security-policy': csp },
    ),
  );
  expect((await outcome(page)).code).toBe('loader_failed');
});

test('adopt mode: the UMD tag with data-inject="false" followed by the page\'s own loader tag', async ({ page }) => {
  const url = site.page(
    '/adopt.html',
    doc(
      `<script src="/dist/blackbox-capture.umd.js" data-loader-url="${site.loaderUrl}" data-inject="false" data-field="bb"></script>
         <script src="${site.loaderUrl}"></script>
         ${TAG_EVENTS}`,
      '<input id="bb">',
    ),
  );
  await page.goto(url);
  await expectTagCaptured(page);
  expect(await page.locator('script[src$="/loader.js"]').count()).toBe(1);
  expect(site.emulator.inspect.requests('loader')).toBe(1);
});

test('UMD build on a page with an AMD loader (RequireJS, as on Magento): the tag starts its capture all the same', async ({
  page,
}) => {
  // Any AMD loader: a define() with its amd flag. RequireJS refuses a plain tag's anonymous
  // define() ("mismatched anonymous define() module"), so a file that hands itself to it never runs.
  const url = site.page(
    '/umd-amd.html',
    doc(
      `<script>window.defined = []; window.define = (...args) => window.defined.push(args); window.define.amd = {};</script>
         <script src="/dist/blackbox-capture.umd.js" data-loader-url="${site.loaderUrl}" data-field="bb"></script>
         ${TAG_EVENTS}`,
      '<input id="bb">',
    ),
  );
  await page.goto(url);
  await expectTagCaptured(page);
  expect(
    await page.evaluate(() => [
      typeof (window as any).BlackboxCapture?.captureBlackbox,
      (window as any).defined.length,
    ]),
  ).toEqual(['function', 0]);
});

test('UMD build under a strict CSP: a failure imports the messages beside the file, with the tag nonce', async ({
  page,
}) => {
  const violations: string[] = [];
  page.on('console', (m) => /Content Security Policy/i.test(m.text()) && violations.push(m.text()));
  site.emulator.faults.fail('loader', { status: 404 });
  const csp = "script-src 'nonce-r4nd0m' 'strict-dynamic'; object-src 'none'; base-uri 'none'";
  const head = `<script nonce="r4nd0m" src="/dist/blackbox-capture.umd.js"></script>
    <script nonce="r4nd0m">window.outcome = BlackboxCapture.captureBlackbox({ loaderUrl: ${JSON.stringify(site.loaderUrl)} })
      .then((blackbox) => ({ blackbox }), (e) => ({ code: e.code, message: e.message }));</script>`;
  await page.goto(site.page('/umd-csp.html', doc(head), { 'content-security-policy': csp }));
  const result = await outcome(page);
  expect(result.code).toBe('loader_failed');
  expect(result.message).toBe(
    `[blackbox-capture] The loader ${site.loaderUrl} failed to load (404, network, CSP or blocker).`,
  );
  expect(violations).toEqual([]);
});

test('UMD build deployed without its messages file: the error keeps its code, a short message names it', async ({
  page,
}) => {
  site.emulator.faults.fail('loader', { status: 404 });
  await page.route('**/browser-messages.js', (route) => route.fulfill({ status: 404, body: 'not found' }));
  const head = `<script src="/dist/blackbox-capture.umd.js"></script>
    <script>window.outcome = BlackboxCapture.captureBlackbox({ loaderUrl: ${JSON.stringify(site.loaderUrl)} })
      .then((blackbox) => ({ blackbox }), (e) => ({ code: e.code, message: e.message }));</script>`;
  await page.goto(site.page('/umd-alone.html', doc(head)));
  expect(await outcome(page)).toEqual({ code: 'loader_failed', message: '[blackbox-capture] loader_failed' });
});

// collection_failed follows the loader's chains: with the real loader, a failed script ends its
// list (nothing after it is requested), so waiting for every flag would wait for ever.
const chainCases: Array<
  [string, Record<string, unknown>, Array<'proxy404' | 'proxyHtml' | 'tpBlocked' | RegExp>, string[]]
> = [
  ['proxy 404 and third party blocked', {}, ['proxy404', 'tpBlocked'], ['fp_static_wdp', 'io_wdp']],
  [
    'HTML fallback in place of the proxy and third party blocked',
    {},
    ['proxyHtml', 'tpBlocked'],
    ['fp_static_wdp', 'io_wdp'],
  ],
  [
    'tp_split: its static blocked, proxy 404',
    { tp_split: true },
    ['proxy404', /static_wdp\.js/],
    ['fp_static_wdp', 'io_static_wdp'],
  ],
  [
    'tp_resource custom.js blocked, proxy 404',
    { tp_resource: 'custom.js' },
    ['proxy404', 'tpBlocked'],
    ['fp_static_wdp', 'io_custom'],
  ],
  [
    'fp_static_override_uri 404, third party blocked',
    { fp_static_override_uri: '/static/override_wdp.js' },
    ['tpBlocked', /override_wdp\.js/],
    ['io_wdp', 'fp_override_wdp'],
  ],
];
for (const [name, vendor, breaks, scripts] of chainCases) {
  test(`${name}: collection_failed long before the time limit, naming ${scripts.join(' and ')}`, async ({ page }) => {
    for (const fault of breaks) {
      if (fault === 'proxy404') site.override(/\/iojs\//, 404, 'not found', 'text/plain');
      else if (fault === 'proxyHtml')
        site.override(/\/iojs\//, 200, '<!doctype html><html><body>SPA</body></html>', 'text/html');
      else if (fault === 'tpBlocked')
        await page.route(`${site.emulator.thirdPartyUrl}/**`, (route) => route.abort('blockedbyclient'));
      else {
        await page.route(fault, (route) => route.fulfill({ status: 404, body: 'not found' }));
        site.override(fault, 404, 'not found', 'text/plain');
      }
    }
    const options = JSON.stringify({ loaderUrl: site.loaderUrl, timeoutMs: LIMIT_MS, vendor });
    const url = site.page(
      '/chains.html',
      doc(`<script type="module">
        import { captureBlackbox } from '/dist/index.js';
        const started = performance.now();
        window.outcome = captureBlackbox(${options}).then(
          (blackbox) => ({ blackbox }),
          (error) => ({ code: error.code, scripts: error.scripts, ms: performance.now() - started }),
        );
      </script>`),
    );
    await page.goto(url);
    const result = (await outcome(page)) as { code?: string; scripts?: string[]; ms?: number };
    expect(result.code).toBe('collection_failed');
    for (const script of scripts) expect(result.scripts).toContain(script);
    expect(result.ms).toBeLessThan(LIMIT_MS / 4);
  });
}

// Capture outcomes with each loader (the real loader 5.2.2 in its project): a broken proxy
// ends after the grace with the third party's blackbox, instead of the time limit.
const outcomeCases: Array<[string, 'proxy404' | 'proxyHtml' | 'tpBlocked' | 'none', string, string[]]> = [
  ['nothing broken', 'none', 'complete', []],
  ['proxy answering 404', 'proxy404', 'degraded-first-party', ['fp_static_wdp']],
  // An HTML page looks loaded to the loader: the chain goes on, and both first-party scripts fail to parse.
  [
    'proxy answering HTML (the loader itself never completes)',
    'proxyHtml',
    'degraded-first-party',
    ['fp_static_wdp', 'fp_dyn_wdp'],
  ],
  ['third party blocked', 'tpBlocked', 'degraded-third-party', ['io_wdp']],
];
for (const [name, fault, kind, scripts] of outcomeCases) {
  test(`outcome, ${name}: resolves ${kind}, well before the time limit`, async ({ page }) => {
    if (fault === 'proxy404') site.override(/\/iojs\//, 404, 'not found', 'text/plain');
    if (fault === 'proxyHtml')
      site.override(/\/iojs\//, 200, '<!doctype html><html><body>SPA</body></html>', 'text/html');
    if (fault === 'tpBlocked')
      await page.route(`${site.emulator.thirdPartyUrl}/**`, (route) => route.abort('blockedbyclient'));
    const options = `{ loaderUrl: ${JSON.stringify(site.loaderUrl)}, timeoutMs: ${LIMIT_MS}, degradedGraceMs: 500, onOutcome: (o) => (window.told = o) }`;
    const url = site.page(
      '/outcome.html',
      doc(`<script type="module">
        import { captureBlackbox } from '/dist/index.js';
        const started = performance.now();
        window.outcome = captureBlackbox(${options}).then(
          (blackbox) => ({ blackbox, ms: performance.now() - started, told: window.told }),
          (error) => ({ code: error.code, ms: performance.now() - started, told: window.told }),
        );
      </script>`),
    );
    await page.goto(url);
    const result = (await outcome(page)) as {
      blackbox?: string;
      code?: string;
      ms: number;
      told: { outcome: string; scripts: string[]; durationMs: number };
    };
    expect(result.code).toBeUndefined();
    expect(result.blackbox).toBeTruthy();
    expect(result.told).toEqual({ outcome: kind, scripts, durationMs: expect.any(Number) });
    expect(result.ms).toBeLessThan(LIMIT_MS / 4);
  });
}
