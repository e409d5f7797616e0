// Browser benchmark: time from navigation start to the final blackbox in Chromium,
// the package against the plain vendor integration, on the same pages and emulator,
// alternating in every round; plus the package's own main-thread time.
import { chromium } from '@playwright/test';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { startEmulator } from '../dist/emulator.js';
import { createFirstPartyProxy, toNodeHandler } from '../dist/server.js';
import { startRttProxy } from './rtt-proxy.mjs';

const root = new URL('..', import.meta.url);
const ARGS = ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-gpu', '--no-first-run'];

/** The integrations compared: each page sets window.done at the final blackbox. */
function pages(loaderUrl, tpHost) {
  const config = `{ loaderUrl: ${JSON.stringify(loaderUrl)}, vendor: { tp_host: ${JSON.stringify(tpHost)} } }`;
  // Our own main-thread time: the synchronous call, plus the time spent in our bb_callback.
  const call = (extra = '') => `<script>
    const t0 = performance.now();
    window.capture = BlackboxCapture.captureBlackbox({ ...${config}${extra} }).then(() => { window.done = performance.now(); });
    window.syncMs = performance.now() - t0;
    const cfg = window.IGLOO, ours = cfg.bb_callback; window.callbackMs = 0;
    cfg.bb_callback = function (b, c) { const t = performance.now(); ours(b, c); window.callbackMs += performance.now() - t; };
  </script>`;
  const umd = '<script src="/dist/blackbox-capture.umd.js"></script>';
  const wrap = (head) => `<!doctype html><html><head><meta charset="utf-8">${head}</head><body></body></html>`;
  return {
    // As the vendor documents it: the config script, then the loader tag.
    plain: wrap(`<script>window.IGLOO = { loader: { version: 'general5', uri_hook: '/iojs', tp_host: ${JSON.stringify(tpHost)} },
      bb_callback: function (bb, complete) { if (complete) window.done = performance.now(); } };</script><script src="${loaderUrl}"></script>`),
    // The package injects the loader once its own script has run: one sequential request more.
    inject: wrap(umd + call()),
    // The same, with a preload hint so that the loader downloads beside the package.
    preload: wrap(`<link rel="preload" as="script" href="${loaderUrl}">` + umd + call()),
    // Adopt mode: the page's own loader tag follows the package's tag.
    adopt: wrap(umd + call(', inject: false') + `<script src="${loaderUrl}"></script>`),
    // Preload, but tp_host comes from the page's own config, so the package adds no
    // preconnect for the third party: what that hint is worth.
    'preload-no-tp-hint': wrap(
      `<link rel="preload" as="script" href="${loaderUrl}"><script>window.IGLOO = { loader: { tp_host: ${JSON.stringify(tpHost)} } };</script>` +
        umd +
        call().replace(`, vendor: { tp_host: ${JSON.stringify(tpHost)} }`, ''),
    ),
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

/**
 * `rttMs`: every origin the browser talks to (the site, the loader's, the third
 * party's) sits one simulated round trip away, connection set-up included.
 */
export async function benchBrowser({ rounds = 30, rttMs = 0 } = {}) {
  const emulator = await startEmulator({ delays: { fp_static: [20], fp_dyn: [80], tp: [80] } });
  const proxy = createFirstPartyProxy({ prefix: '/iojs', collectorUrl: emulator.collectorUrl });
  const relays = [];
  const far = async (origin) => {
    if (!rttMs) return origin;
    const relay = await startRttProxy(origin, rttMs);
    relays.push(relay);
    return relay.origin;
  };
  const loaderUrl = (await far(new URL(emulator.loaderUrl).origin)) + '/loader.js';
  const variants = pages(loaderUrl, await far(emulator.thirdPartyUrl));
  const umd = await readFile(new URL('dist/blackbox-capture.umd.js', root));
  const server = createServer(
    toNodeHandler(async (request, context) => {
      const { pathname } = new URL(request.url);
      if (proxy.matches(request)) return proxy(request, context);
      if (pathname === '/dist/blackbox-capture.umd.js') return new Response(umd, { headers: { 'content-type': 'text/javascript' } });
      const name = pathname.slice(1);
      return variants[name] ? new Response(variants[name], { headers: { 'content-type': 'text/html' } }) : new Response('not found', { status: 404 });
    }),
  );
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const origin = await far(`http://127.0.0.1:${server.address().port}`);
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ARGS });
  const names = Object.keys(variants);
  const times = Object.fromEntries(names.map((n) => [n, []]));
  const ratios = Object.fromEntries(names.filter((n) => n !== 'plain').map((n) => [n, []]));
  const mainThread = [];
  const syncCall = [];
  const callbacks = [];
  try {
    // Round -1 warms the browser and the server up and is not counted.
    for (let round = -1; round < rounds; round++) {
      // Rotate the order so that no variant always runs first or last.
      const order = names.map((_, i) => names[(((i + round) % names.length) + names.length) % names.length]);
      const result = {};
      for (const name of order) {
        const context = await browser.newContext(); // a cold cache every time
        const page = await context.newPage();
        const problems = [];
        page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
        page.on('pageerror', (e) => problems.push(e.message));
        await page.goto(`${origin}/${name}`);
        try {
          await page.waitForFunction(() => window.done !== undefined, null, { timeout: 15_000 });
        } catch (error) {
          const state = await page.evaluate(() => JSON.stringify({ loader: window.IGLOO?.loader && Object.keys(window.IGLOO.loader), bb: window.IGLOO?.getBlackbox?.() })).catch(() => '?');
          throw new Error(`${name} (round ${round}) did not complete: ${problems.join(' | ')} ${state}`, { cause: error });
        }
        const measured = await page.evaluate(() => ({ done: window.done, syncMs: window.syncMs, callbackMs: window.callbackMs }));
        result[name] = measured.done;
        if (name !== 'plain' && round >= 0) {
          mainThread.push(measured.syncMs + measured.callbackMs);
          syncCall.push(measured.syncMs);
          callbacks.push(measured.callbackMs);
        }
        await context.close();
      }
      if (round < 0) continue;
      for (const name of names) times[name].push(result[name]);
      for (const name of Object.keys(ratios)) ratios[name].push(result[name] / result.plain);
    }
  } finally {
    await browser.close();
    for (const relay of relays) await relay.close();
    server.closeAllConnections();
    server.close();
    await emulator.close();
  }
  const summary = {};
  for (const name of names) {
    summary[name] = {
      medianMs: median(times[name]),
      ...(ratios[name] ? { ratioMedian: median(ratios[name]), ratioP10: quantile(ratios[name], 0.1), ratioP90: quantile(ratios[name], 0.9) } : {}),
    };
  }
  return { rounds, rttMs, variants: summary, mainThreadMs: { median: median(mainThread), p90: quantile(mainThread, 0.9), syncCallMedian: median(syncCall), callbacksMedian: median(callbacks) } };
}
