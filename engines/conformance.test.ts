/**
 * Loader conformance in every engine: for every case of the table (src/emulator/conformance.ts),
 * the emulator's loader and the vendor's real loader 5.2.2 must append the same scripts,
 * leave the same failure flags, set the same keys and send the same traces, in Chromium,
 * Firefox and WebKit alike. A case that passed in one engine and failed in another would be
 * an engine-dependent behaviour of the real loader that the emulator does not have.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONFORMANCE_CASES,
  startConformanceSite,
  type ConformancePage,
  type ConformanceSite,
} from '../src/emulator/conformance.js';
import { realLoaderSource } from '../test/support/real-loader.mjs';
import { availableEngines, launch, type EnginePage } from '../test/support/engines.mjs';

/** The conformance site's view of a page, on the engines' page API. */
function conformancePage(page: EnginePage): ConformancePage {
  return {
    goto: (url) => page.goto(url),
    evaluate: (fn, arg) => page.evaluate(fn, arg),
    async waitForFunction(fn, _, { timeout = 10_000 } = {}) {
      const until = Date.now() + timeout;
      while (!(await page.evaluate(fn))) {
        if (Date.now() > until) throw new Error(`the page did not settle within ${timeout} ms`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
  };
}

let emulated: ConformanceSite;
let real: ConformanceSite;
beforeAll(async () => {
  emulated = await startConformanceSite();
  real = await startConformanceSite(realLoaderSource());
});
afterAll(async () => {
  await emulated?.close();
  await real?.close();
});

describe.each(availableEngines())('%s', (engine) => {
  let page: EnginePage | undefined;
  beforeAll(async () => {
    page = await launch(engine);
  });
  afterAll(async () => {
    await page?.close();
  });

  it.each(CONFORMANCE_CASES.map((testCase) => [testCase.name, testCase] as const))('%s', async (_, testCase) => {
    const reference = await real.record(conformancePage(page!), testCase);
    const candidate = await emulated.record(conformancePage(page!), testCase);
    expect(candidate).toEqual(reference);
  });
});
