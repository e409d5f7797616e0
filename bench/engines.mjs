/* global window -- page functions run in the browser */
// Browser benchmark across engines: time from navigation start to the final blackbox in
// Chromium, Firefox ESR and WebKitGTK, the README's integrations against the plain vendor
// integration with the same preconnect hint, on the same pages (bench/site.mjs), alternating
// in every round, each engine in turn, in one run.
import { availableEngines, launch } from '../test/support/engines.mjs';
import { median, quantile, startBenchSite } from './site.mjs';

/** The baseline first; the package's integrations: the README's preload, adopt mode, and injection alone. */
const VARIANTS = ['plain-hinted', 'preload', 'adopt', 'inject'];

/** The final blackbox's time (ms after navigation start), waited for in the page. */
async function finalBlackboxAt(page) {
  return page.evaluate(
    () =>
      new Promise((resolve, reject) => {
        const started = Date.now();
        const poll = () =>
          window.done !== undefined
            ? resolve(window.done)
            : Date.now() - started > 15_000
              ? reject(new Error('no final blackbox within 15 s'))
              : setTimeout(poll, 5);
        poll();
      }),
  );
}

export async function benchEngines({ rounds = 10, rttMs = 100, loaderSource = undefined } = {}) {
  const site = await startBenchSite({ rttMs, loaderSource });
  const engines = {};
  try {
    for (const engine of availableEngines()) {
      const page = await launch(engine);
      const times = Object.fromEntries(VARIANTS.map((name) => [name, []]));
      const ratios = Object.fromEntries(VARIANTS.slice(1).map((name) => [name, []]));
      try {
        // Round -1 warms the browser up and is not counted.
        for (let round = -1; round < rounds; round++) {
          const order = VARIANTS.map((_, i) => VARIANTS[(i + round + VARIANTS.length) % VARIANTS.length]);
          const result = {};
          for (const name of order) {
            const { origin, close } = await site.freshOrigins();
            await page.goto(`${origin}/${name}`);
            result[name] = await finalBlackboxAt(page);
            await close();
          }
          if (round < 0) continue;
          for (const name of VARIANTS) times[name].push(result[name]);
          for (const name of Object.keys(ratios)) ratios[name].push(result[name] / result['plain-hinted']);
        }
        engines[engine] = {
          version: await page.version(),
          variants: Object.fromEntries(
            VARIANTS.map((name) => [
              name,
              {
                medianMs: median(times[name]),
                ...(ratios[name]
                  ? {
                      ratioMedian: median(ratios[name]),
                      ratioP10: quantile(ratios[name], 0.1),
                      ratioP90: quantile(ratios[name], 0.9),
                    }
                  : {}),
              },
            ]),
          ),
        };
      } finally {
        await page.close();
      }
    }
  } finally {
    await site.close();
  }
  return { rounds, rttMs, engines };
}
