/**
 * Loader conformance: what "behaves like loader 5.2.2" means. For every case of the
 * table, a page defines the config object, includes a loader, and records what the
 * loader did: the script URLs it appended, the failure flags it left on
 * `config.loader`, the keys it set there (`loaderMain`, `loaderVer`, the normalised
 * `tp_host`) and its trace messages. Two loaders conform when every case records
 * the same. The emulator's loader is checked against the vendor's real one in this
 * project's tests; an integrator checks a newer loader file of their own the same way
 * (`npx blackbox-capture-emulator conformance ./loader.js`).
 *
 * The runner drives a browser page through the few Playwright methods it needs, so the
 * emulator itself does not depend on Playwright.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { vendorAsset, type VendorAsset, type VendorSettings } from './scripts/routes.js';

export interface ConformanceCase {
  name: string;
  /** The config object the page defines before the loader; `$TP` in a string stands for the third-party origin. */
  config?: Record<string, unknown>;
  /** Sets `window.io_global_object_name` and defines the config under that name. */
  globalName?: string;
  /** Substrings of script URLs that answer 404 (a broken proxy, a blocked host). */
  fail?: string[];
  /** The loader tag twice (the run-once guard). */
  twice?: boolean;
}

const FLASH_OFF = { enable_flash: false };

/** The table. Every entry is one page; together they cover what 5.2.2 decides. */
export const CONFORMANCE_CASES: readonly ConformanceCase[] = [
  { name: 'no config object at all' },
  { name: 'the documented config', config: { ...FLASH_OFF, loader: { version: 'general5', subkey: 'SUB' } } },
  { name: 'a custom global name', globalName: 'SHOP_DEVICE_CFG', config: { loader: { version: 'general5' } } },
  { name: 'relative uri_hook', config: { loader: { version: 'general5', uri_hook: 'iojs' } } },
  {
    name: 'absolute uri_hook with a trailing slash',
    config: { loader: { version: 'early5', uri_hook: '/risk/iojs/' } },
  },
  {
    name: 'uri_hook missing, subkey with characters to encode',
    config: { loader: { version: 'general5', subkey: 'a/b c+d?é' } },
  },
  { name: 'version missing', config: { loader: { subkey: 'S' } } },
  { name: 'numeric version', config: { loader: { version: '5.2.2' } } },
  {
    name: 'numeric version with url_dots_to_dashes',
    config: { loader: { version: '5.2.2', url_dots_to_dashes: true } },
  },
  {
    name: 'url_dots_to_dashes as the string "false" (truthy to 5.2.2)',
    config: { loader: { version: '5.2.2', url_dots_to_dashes: 'false' } },
  },
  { name: 'tp false', config: { loader: { version: 'general5', tp: false } } },
  { name: 'fp_static false', config: { loader: { version: 'general5', fp_static: false } } },
  {
    name: 'fp_static false with fp_dyn true',
    config: { loader: { version: 'general5', fp_static: false, fp_dyn: true } },
  },
  { name: 'fp_dyn false', config: { loader: { version: 'general5', fp_dyn: false } } },
  { name: 'nothing to load', config: { loader: { version: 'general5', fp_static: '0', tp: '0' } } },
  { name: 'tp_split', config: { loader: { version: 'general5', tp_split: true, subkey: 'K' } } },
  {
    name: 'tp_split with tp_resource',
    config: { loader: { version: 'general5', tp_split: '1', tp_resource: 'other.js' } },
  },
  { name: 'tp_resource', config: { loader: { version: 'general5', tp_resource: 'custom.js' } } },
  { name: 'tp_host with trailing slashes', config: { loader: { version: 'general5', tp_host: '$TP///' } } },
  {
    name: 'fp_static_override_uri',
    config: { loader: { version: 'general5', fp_static_override_uri: '/static/override_wdp.js?v=1' } },
  },
  { name: 'top-level enable_flash true', config: { enable_flash: true, loader: { version: 'general5' } } },
  {
    name: 'fp.enable_flash set',
    config: { enable_flash: false, fp: { enable_flash: 'true' }, loader: { version: 'general5' } },
  },
  {
    name: 'io.enable_flash with fp.enable_flash',
    config: {
      enable_flash: true,
      fp: { enable_flash: '0' },
      io: { enable_flash: 'false' },
      loader: { version: 'general5' },
    },
  },
  {
    name: 'io.enable_flash alone (ignored)',
    config: { enable_flash: true, io: { enable_flash: false }, loader: { version: 'general5' } },
  },
  {
    name: 'booleans as strings',
    config: {
      loader: {
        version: 'general5',
        tp: 'true',
        fp_static: '1',
        fp_dyn: 'FALSE',
        tp_split: '0',
        enable_legacy_compatibility: 'true',
      },
    },
  },
  {
    name: 'a static script already on the page (staticVer)',
    config: { fp: { staticVer: '5.1.0' }, loader: { version: 'general5', url_dots_to_dashes: true } },
  },
  {
    name: 'scripts already run (staticMain, dynMain, io.staticMain)',
    config: {
      fp: { staticMain: true, dynMain: true },
      io: { staticMain: true },
      loader: { version: 'general5', enable_legacy_compatibility: true },
    },
  },
  { name: 'a second run of the loader', config: { loader: { version: 'general5' } }, twice: true },
  {
    name: 'first-party static_wdp.js 404',
    config: { loader: { version: 'general5' } },
    fail: ['/iojs/general5/static_wdp.js'],
  },
  {
    name: 'first-party dyn_wdp.js 404',
    config: { loader: { version: 'general5' } },
    fail: ['/iojs/general5/dyn_wdp.js'],
  },
  { name: 'third-party wdp.js 404', config: { loader: { version: 'general5' } }, fail: ['/general5/wdp.js'] },
  {
    name: 'tp_split: third-party static_wdp.js 404',
    config: { loader: { version: 'general5', tp_split: true, fp_static: false } },
    fail: ['static_wdp.js'],
  },
  {
    name: 'tp_split: third-party dyn_wdp.js 404',
    config: { loader: { version: 'general5', tp_split: true, fp_static: false } },
    fail: ['dyn_wdp.js'],
  },
  {
    name: 'fp_static_override_uri 404',
    config: { loader: { version: 'general5', fp_static_override_uri: '/static/override_wdp.js' } },
    fail: ['override_wdp.js'],
  },
  { name: 'every script 404', config: { loader: { version: 'general5', tp_split: true } }, fail: ['.js?'] },
];

/** What a loader did on one page, with the emulator's origins replaced by `{page}` and `{tp}`. */
export interface ConformanceRecord {
  /** Script URLs the loader appended, sorted (the two chains interleave by network timing). */
  scripts: string[];
  /** `config.loader` keys ending in `_load_failure`, with their values. */
  flags: Record<string, unknown>;
  loaderMain: string;
  loaderVer: unknown;
  tpHost: unknown;
  /** Trace messages, each tagged with where the handler was: `top` (config) or `loader`; sorted, as the chains interleave. */
  traces: string[];
}

/** The page of one case: config, recorder, loader tag(s). Runs under no CSP. */
export function conformancePage(testCase: ConformanceCase, loaderUrl: string, thirdPartyUrl: string): string {
  const name = testCase.globalName ?? 'IGLOO';
  const config = JSON.parse(JSON.stringify(testCase.config ?? null).replace(/\$TP/g, thirdPartyUrl)) as Record<
    string,
    unknown
  > | null;
  const loaderTag = `<script src="${loaderUrl}"></script>`;
  return `<!doctype html><html><head><meta charset="utf-8">
<script>
  (function () {
    var record = { appended: [], settled: {}, traces: [], changedAt: performance.now() };
    window.__conformance = record;
    ${testCase.globalName ? `window.io_global_object_name = ${JSON.stringify(name)};` : ''}
    var config = ${JSON.stringify(config)};
    if (config) {
      // The loader's traces only: the collection scripts' own come whenever they finish.
      var own = function (m) { return String(m).indexOf('emulator: ') !== 0; };
      config.trace_handler = function (m) { if (own(m)) record.traces.push('top: ' + m); };
      config.loader = config.loader || {};
      config.loader.trace_handler = function (m) { if (own(m)) record.traces.push('loader: ' + m); };
      window[${JSON.stringify(name)}] = config;
    }
    new MutationObserver(function (mutations) {
      mutations.forEach(function (m) {
        m.addedNodes.forEach(function (node) {
          if (node.tagName === 'SCRIPT' && node.src && node.src !== ${JSON.stringify(loaderUrl)}) { record.appended.push(node.getAttribute('src')); record.changedAt = performance.now(); }
        });
      });
    }).observe(document.head, { childList: true });
    function settle(event) {
      var target = event.target;
      if (target && target.tagName === 'SCRIPT' && target.src !== ${JSON.stringify(loaderUrl)}) { record.settled[target.getAttribute('src')] = event.type; record.changedAt = performance.now(); }
    }
    document.addEventListener('load', settle, true);
    document.addEventListener('error', settle, true);
  })();
</script>
${loaderTag}${testCase.twice ? loaderTag : ''}
</head><body></body></html>`;
}

/** The few methods of a Playwright `Page` the runner uses. */
export interface ConformancePage {
  goto(url: string): Promise<unknown>;
  waitForFunction(fn: () => boolean, arg?: undefined, options?: { timeout?: number }): Promise<unknown>;
  evaluate<T>(fn: (arg: string) => T, arg: string): Promise<T>;
}

/** A site for the conformance pages: the case pages, the loader, first-party scripts under any path, a third-party origin, 404s on request. */
export interface ConformanceSite {
  /** The page origin, where the case pages, the loader and the first-party scripts are served. */
  readonly origin: string;
  /** Records what the loader does on the page of one case. */
  record(page: ConformancePage, testCase: ConformanceCase): Promise<ConformanceRecord>;
  close(): Promise<void>;
}

async function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ server: Server; origin: string }> {
  // Nothing a request holds may throw out of this callback and end the process: a 500 instead.
  const server = createServer((req, res) => {
    try {
      handler(req, res);
    } catch {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('conformance site error');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/**
 * Starts a page origin and a third-party origin that serve `loaderSource` (default: the
 * emulator's loader; its default third-party host is replaced by this site's) and the
 * emulator's collection scripts.
 */
export async function startConformanceSite(loaderSource?: string): Promise<ConformanceSite> {
  let current: ConformanceCase | undefined;
  const failing = (url: string) => !!current?.fail?.some((part) => url.includes(part));
  const notFound = (res: ServerResponse) =>
    res.writeHead(404, { 'content-type': 'text/plain', 'cache-control': 'no-store' }).end('not found');
  const header = (req: IncomingMessage) => (name: string) => (req.headers[name] as string | undefined) ?? null;
  const settings: VendorSettings = { defaultTpHost: '', ...(loaderSource === undefined ? {} : { loaderSource }) };
  // Nothing may come from the browser's cache: a case that answers 404 must reach this server.
  const send = (res: ServerResponse, asset: VendorAsset) =>
    res.writeHead(asset.status, { ...asset.headers, 'cache-control': 'no-store' }).end(asset.body);

  const thirdParty = await listen((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (failing(req.url ?? '')) return notFound(res);
    send(res, vendorAsset('thirdParty', path, header(req), settings));
  });
  settings.defaultTpHost = thirdParty.origin;
  const site = await listen((req, res) => {
    const url = req.url ?? '/';
    if (url.startsWith('/case/')) {
      const html = conformancePage(current!, `${site.origin}/loader.js`, thirdParty.origin);
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      return res.end(html);
    }
    if (url === '/loader.js') return send(res, vendorAsset('loader', url, header(req), settings));
    if (failing(url) || !/\.js(\?|$)/.test(url)) return notFound(res);
    // Any first-party path (the hook may be relative, absolute or missing): the collector's script by file name.
    const file = url.split('?')[0]!.split('/').pop();
    send(
      res,
      vendorAsset('collector', `/general5/${file === 'dyn_wdp.js' ? file : 'static_wdp.js'}`, header(req), settings),
    );
  });

  const normalise = (text: string) =>
    [thirdParty.origin, encodeURIComponent(thirdParty.origin), site.origin, encodeURIComponent(site.origin)].reduce(
      (out, origin, i) => out.split(origin).join(i < 2 ? '{tp}' : '{page}'),
      text,
    );
  return {
    origin: site.origin,
    async record(page, testCase) {
      current = testCase;
      await page.goto(`${site.origin}/case/${encodeURIComponent(testCase.name)}/page.html`);
      // Settled: every appended script has loaded or failed, and nothing changed for 150 ms.
      await page.waitForFunction(
        () => {
          const r = (
            window as unknown as {
              __conformance: { appended: string[]; settled: Record<string, string>; changedAt: number };
            }
          ).__conformance;
          return r.appended.every((src) => r.settled[src]) && performance.now() - r.changedAt > 150;
        },
        undefined,
        { timeout: 10_000 },
      );
      const raw = await page.evaluate((name) => {
        const w = window as unknown as Record<string, any>;
        const r = w.__conformance;
        const loader = (w[name] && w[name].loader) || {};
        const flags: Record<string, unknown> = {};
        // Sorted: the two chains fail in network order.
        for (const key of Object.keys(loader).sort()) if (/_load_failure$/.test(key)) flags[key] = loader[key];
        return {
          scripts: r.appended.slice(),
          flags,
          loaderMain: typeof loader.loaderMain,
          loaderVer: loader.loaderVer,
          tpHost: loader.tp_host,
          traces: r.traces.slice(),
        };
      }, testCase.globalName ?? 'IGLOO');
      return JSON.parse(
        normalise(JSON.stringify({ ...raw, scripts: [...raw.scripts].sort(), traces: [...raw.traces].sort() })),
      ) as ConformanceRecord;
    },
    async close() {
      for (const { server } of [site, thirdParty]) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  };
}

export interface ConformanceResult {
  testCase: ConformanceCase;
  equal: boolean;
  reference: ConformanceRecord;
  candidate: ConformanceRecord;
}

/**
 * Runs every case with the reference loader (default: the emulator's, which behaves like
 * 5.2.2) and the candidate, on one browser page, and says where they differ.
 */
export async function runConformance(
  page: ConformancePage,
  candidateSource: string,
  referenceSource?: string,
): Promise<ConformanceResult[]> {
  const reference = await startConformanceSite(referenceSource);
  const candidate = await startConformanceSite(candidateSource);
  try {
    const results: ConformanceResult[] = [];
    for (const testCase of CONFORMANCE_CASES) {
      const expected = await reference.record(page, testCase);
      const actual = await candidate.record(page, testCase);
      results.push({
        testCase,
        equal: JSON.stringify(expected) === JSON.stringify(actual),
        reference: expected,
        candidate: actual,
      });
    }
    return results;
  } finally {
    await reference.close();
    await candidate.close();
  }
}
