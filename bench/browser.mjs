/* global window -- page functions run in the browser */
// Browser benchmark: time from navigation start to the final blackbox in Chromium,
// the package against the plain vendor integration, on the same pages and emulator,
// alternating in every round; plus the package's own main-thread time.
import { chromium } from '@playwright/test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median, pages, quantile, startBenchSite } from './site.mjs';

const root = new URL('..', import.meta.url);
const ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-gpu',
  '--no-first-run',
];

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
  const site = await startBenchSite({ rttMs, isolated, loaderSource, umdFile });
  const { freshOrigins } = site;
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
    await site.close();
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
