/* global window -- page functions run in the browser */
// Browser benchmark: time from navigation start to the final blackbox in Chromium,
// the package against the plain vendor integration, on the same pages and emulator,
// alternating in every round; plus the package's own main-thread time.
import { chromium } from '@playwright/test';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { startEmulator } from '../dist/emulator.js';
import { createFirstPartyProxy, toNodeHandler } from '../dist/server.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRttProxy } from './rtt-proxy.mjs';

const root = new URL('..', import.meta.url);
const ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-gpu',
  '--no-first-run',
];

/** The integrations compared: each page sets window.done at the final blackbox. */
function pages(loaderUrl, tpHost) {
  const config = `{ loaderUrl: ${JSON.stringify(loaderUrl)}, vendor: { tp_host: ${JSON.stringify(tpHost)} } }`;
  // Our own main-thread time: the synchronous call, plus the time spent in our bb_callback,
  // less the browser's work to insert the loader tag (it starts the loader's fetch: any
  // script-inserted tag costs it), which is timed apart.
  const call = (extra = '') => `<script>
    const append = Element.prototype.append; window.insertMs = 0;
    Element.prototype.append = function (...nodes) {
      const t = performance.now(); append.apply(this, nodes);
      if (nodes.some((node) => node.tagName === 'SCRIPT')) window.insertMs += performance.now() - t;
    };
    // A checkout page has touched \`document\` long before this call (its framework, its forms).
    // The first touch in a fresh page costs a few tenths of a millisecond whoever makes it (on
    // the plain page, the loader). The UMD file makes it as it runs (its data-attribute start),
    // so this one is timed near zero; it is here so that our calls never carry that cost.
    const td = performance.now(); document.head; window.documentTouchMs = performance.now() - td;
    const t0 = performance.now();
    window.capture = BlackboxCapture.captureBlackbox({ ...${config}${extra} }).then(() => { window.done = performance.now(); });
    window.syncMs = performance.now() - t0;
    const cfg = window.IGLOO, ours = cfg.bb_callback; window.callbackMs = 0;
    cfg.bb_callback = function (b, c) { const t = performance.now(); ours(b, c); window.callbackMs += performance.now() - t; };
  </script>`;
  const umd = '<script src="/dist/blackbox-capture.umd.js"></script>';
  // What the README's integrations put in the page: the third party's preconnect hint in the HTML.
  const preconnect = `<link rel="preconnect" href="${tpHost}">`;
  const wrap = (head) => `<!doctype html><html><head><meta charset="utf-8">${head}</head><body></body></html>`;
  // As the vendor documents it: the config script, then the loader tag.
  const vendorTags = `<script>window.IGLOO = { loader: { version: 'general5', uri_hook: '/iojs', tp_host: ${JSON.stringify(tpHost)} },
      bb_callback: function (bb, complete) { if (complete) window.done = performance.now(); } };</script><script src="${loaderUrl}"></script>`;
  return {
    plain: wrap(vendorTags),
    // The floor of any integration with a script tag of its own before the loader: the plain
    // page plus one empty script from the page's origin.
    'plain-empty-script': wrap('<script src="/empty.js"></script>' + vendorTags),
    // The fair baseline for the hinted integrations: the plain page with the same preconnect
    // hint in its HTML (a preload would add nothing: its loader tag is in the HTML already).
    'plain-hinted': wrap(preconnect + vendorTags),
    // The package alone: it injects the loader once its own script has run (one sequential
    // request more) and adds the preconnect hint itself.
    inject: wrap(umd + call()),
    // README integration 1: preload and preconnect hints, so that the loader downloads beside the package.
    preload: wrap(preconnect + `<link rel="preload" as="script" href="${loaderUrl}">` + umd + call()),
    // README integration 2, adopt mode: the page's own loader tag follows the package's tag.
    adopt: wrap(preconnect + umd + call(', inject: false') + `<script src="${loaderUrl}"></script>`),
    // Preload with no preconnect hint at all, the package's suppressed (bench-only: <link>
    // elements lose their rel), to show what the hint is worth.
    'preload-no-tp-hint': wrap(
      `<link rel="preload" as="script" href="${loaderUrl}"><script>Object.defineProperty(HTMLLinkElement.prototype, 'rel', { set() {}, get() { return ''; } });</script>` +
        umd +
        call(),
    ),
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

/**
 * Cross-origin isolation: performance.now() then ticks in 5 µs instead of 100 µs, for our
 * sub-millisecond calls. Only where connections cost nothing (loopback): on isolated pages
 * (COEP `credentialless`) Chromium showed no gain from `<link rel=preconnect>` at all, with
 * or without `crossorigin` (ratios 1.006 and 1.007 against 0.994 with no hint, 100 ms RTT).
 */
const ISOLATION = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'credentialless' };

/**
 * `rttMs`: every origin the browser talks to (the site, the loader's, the third
 * party's) sits one simulated round trip away, connection set-up included.
 */
export async function benchBrowser({
  rounds = 30,
  rttMs = 0,
  only = undefined,
  isolated = rttMs === 0,
  loaderSource = undefined,
  umdFile = new URL('dist/blackbox-capture.umd.js', root),
} = {}) {
  // umdFile: the script-tag file the package's pages load (another build, to compare two side by side).
  // loaderSource: the loader the emulator serves (default its own; the benchmark also runs the vendor's real 5.2.2).
  const emulator = await startEmulator({
    delays: { fp_static: [20], fp_dyn: [80], tp: [80] },
    ...(loaderSource === undefined ? {} : { loaderSource }),
  });
  const proxy = createFirstPartyProxy({ prefix: '/iojs', collectorUrl: emulator.collectorUrl });
  const umd = await readFile(umdFile);
  // The pages of the current page load; freshOrigins() writes them with that load's origins.
  let variants = {};
  const server = createServer(
    toNodeHandler(async (request, context) => {
      const { pathname } = new URL(request.url);
      if (proxy.matches(request)) return proxy(request, context);
      if (pathname === '/empty.js') return new Response('', { headers: { 'content-type': 'text/javascript' } });
      if (pathname === '/dist/blackbox-capture.umd.js')
        return new Response(umd, { headers: { 'content-type': 'text/javascript' } });
      const name = pathname.slice(1);
      const headers = { 'content-type': 'text/html', ...(isolated ? ISOLATION : {}) };
      return variants[name] ? new Response(variants[name], { headers }) : new Response('not found', { status: 404 });
    }),
  );
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const site = `http://127.0.0.1:${server.address().port}`;
  /**
   * Every page load gets its own relays, so new origins (ports): no open connection and no
   * cached response carries over, as on a first visit, while the browser stays warm. A relay
   * puts its origin `rttMs` away; `setupRtts` is 1 for the page's own origin (TCP) and 2 for
   * the vendor's hosts, which are https (TCP plus a TLS 1.3 handshake).
   */
  const freshOrigins = async () => {
    const relays = await Promise.all([
      startRttProxy(site, rttMs, 1),
      startRttProxy(new URL(emulator.loaderUrl).origin, rttMs, 2),
      startRttProxy(emulator.thirdPartyUrl, rttMs, 2),
    ]);
    variants = pages(relays[1].origin + '/loader.js', relays[2].origin);
    return { origin: relays[0].origin, close: () => Promise.all(relays.map((relay) => relay.close())) };
  };
  // A persistent profile: off-the-record contexts (browser.newContext()) ignore <link rel=preconnect>.
  const profile = await mkdtemp(join(tmpdir(), 'bbc-bench-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ARGS,
  });
  // `only`: the variants to run (the two plain pages always run: they are the baselines).
  const names = Object.keys(pages('', '')).filter(
    (name) => !only || name === 'plain' || name === 'plain-hinted' || only.includes(name),
  );
  const times = Object.fromEntries(names.map((n) => [n, []]));
  const ratios = Object.fromEntries(names.filter((n) => n !== 'plain').map((n) => [n, []]));
  // The variants that use the package (the others are baselines).
  const withPackage = names.filter((n) => !n.startsWith('plain'));
  // Each package variant against the plain page with the same preconnect hint, same round.
  const hintedRatios = Object.fromEntries(withPackage.map((n) => [n, []]));
  const syncByVariant = Object.fromEntries(withPackage.map((n) => [n, []]));
  const insertByVariant = Object.fromEntries(withPackage.map((n) => [n, []]));
  // Main-thread CPU time of the whole page load (DevTools Performance metrics, thread ticks), per variant.
  const taskMs = Object.fromEntries(names.map((n) => [n, []]));
  const addedMs = Object.fromEntries(names.filter((n) => n !== 'plain').map((n) => [n, []]));
  const syncCall = [];
  const documentTouch = [];
  const callbacks = [];
  try {
    // Round -1 warms the browser and the server up and is not counted.
    for (let round = -1; round < rounds; round++) {
      // Rotate the order so that no variant always runs first or last.
      const order = names.map((_, i) => names[(((i + round) % names.length) + names.length) % names.length]);
      const result = {};
      for (const name of order) {
        const { origin, close } = await freshOrigins();
        const page = await browser.newPage();
        const cdp = await browser.newCDPSession(page);
        await cdp.send('Performance.enable', { timeDomain: 'threadTicks' });
        const problems = [];
        page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
        page.on('pageerror', (e) => problems.push(e.message));
        await page.goto(`${origin}/${name}`);
        try {
          await page.waitForFunction(() => window.done !== undefined, null, { timeout: 15_000 });
        } catch (error) {
          const state = await page
            .evaluate(() =>
              JSON.stringify({
                loader: window.IGLOO?.loader && Object.keys(window.IGLOO.loader),
                bb: window.IGLOO?.getBlackbox?.(),
              }),
            )
            .catch(() => '?');
          throw new Error(`${name} (round ${round}) did not complete: ${problems.join(' | ')} ${state}`, {
            cause: error,
          });
        }
        const measured = await page.evaluate(() => ({
          done: window.done,
          syncMs: window.syncMs,
          callbackMs: window.callbackMs,
          insertMs: window.insertMs,
          documentTouchMs: window.documentTouchMs,
        }));
        const metrics = Object.fromEntries(
          (await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]),
        );
        result[name] = measured.done;
        result[name + ':task'] = metrics.TaskDuration * 1000;
        if (syncByVariant[name] && round >= 0) {
          syncByVariant[name].push(measured.syncMs + measured.callbackMs - measured.insertMs);
          insertByVariant[name].push(measured.insertMs);
          documentTouch.push(measured.documentTouchMs);
          syncCall.push(measured.syncMs);
          callbacks.push(measured.callbackMs);
        }
        await page.close();
        await close();
      }
      if (round < 0) continue;
      for (const name of names) {
        times[name].push(result[name]);
        taskMs[name].push(result[name + ':task']);
      }
      for (const name of Object.keys(addedMs)) addedMs[name].push(result[name + ':task'] - result['plain:task']);
      for (const name of Object.keys(ratios)) ratios[name].push(result[name] / result.plain);
      for (const name of Object.keys(hintedRatios)) hintedRatios[name].push(result[name] / result['plain-hinted']);
    }
  } finally {
    await browser.close();
    await rm(profile, { recursive: true, force: true });
    server.closeAllConnections();
    server.close();
    await emulator.close();
  }
  const summary = {};
  for (const name of names) {
    summary[name] = {
      medianMs: median(times[name]),
      mainThreadTaskMs: median(taskMs[name]),
      ...(addedMs[name] ? { mainThreadAddedMs: median(addedMs[name]) } : {}),
      ...(syncByVariant[name]
        ? { ownJsMs: median(syncByVariant[name]), loaderTagInsertMs: median(insertByVariant[name]) }
        : {}),
      ...(ratios[name]
        ? {
            ratioMedian: median(ratios[name]),
            ratioP10: quantile(ratios[name], 0.1),
            ratioP90: quantile(ratios[name], 0.9),
          }
        : {}),
      ...(hintedRatios[name]
        ? {
            hintedRatioMedian: median(hintedRatios[name]),
            hintedRatioP10: quantile(hintedRatios[name], 0.1),
            hintedRatioP90: quantile(hintedRatios[name], 0.9),
          }
        : {}),
    };
  }
  const mainThread = Object.values(syncByVariant).flat(); // our calls, every variant
  return {
    rounds,
    rttMs,
    isolated,
    variants: summary,
    mainThreadMs: {
      median: median(mainThread),
      p90: quantile(mainThread, 0.9),
      syncCallMedian: median(syncCall),
      callbacksMedian: median(callbacks),
      documentTouchMedian: median(documentTouch),
    },
  };
}
