// The benchmark's integrator site: the vendor's plain integration and the package's, as pages
// on a local site with the first-party proxy, in front of the emulator; every page load gets
// fresh origins one simulated round trip away. Shared by the Chromium benchmark
// (browser.mjs) and the one across engines (engines.mjs).
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { startEmulator } from '../dist/emulator.js';
import { createFirstPartyProxy, toNodeHandler } from '../dist/server.js';
import { startRttProxy } from './rtt-proxy.mjs';

const root = new URL('..', import.meta.url);

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
export const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

/** The integrations compared: each page sets window.done at the final blackbox. */
export function pages(loaderUrl, tpHost) {
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

/**
 * Cross-origin isolation: performance.now() then ticks in 5 µs instead of 100 µs, for our
 * sub-millisecond calls. Only where connections cost nothing (loopback): on isolated pages
 * (COEP `credentialless`) Chromium showed no gain from `<link rel=preconnect>` at all, with
 * or without `crossorigin` (ratios 1.006 and 1.007 against 0.994 with no hint, 100 ms RTT).
 */
const ISOLATION = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'credentialless' };

/**
 * Starts the site. `rttMs`: every origin the browser talks to (the site, the loader's, the
 * third party's) sits one simulated round trip away, connection set-up included.
 * `loaderSource`: the loader the emulator serves (default its own). `umdFile`: the script-tag
 * file the package's pages load (another build, to compare two side by side).
 */
export async function startBenchSite({
  rttMs = 0,
  isolated = rttMs === 0,
  loaderSource = undefined,
  umdFile = new URL('dist/blackbox-capture.umd.js', root),
} = {}) {
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
  return {
    freshOrigins,
    async close() {
      server.closeAllConnections();
      server.close();
      await emulator.close();
    },
  };
}
