/**
 * The matrix every engine spec runs in: each engine on this machine (one browser per engine
 * and file, reused from test to test) times each loader (the emulator's and the vendor's
 * real loader 5.2.2), with a fresh integrator site (e2e/support/site.ts) for every test.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe } from 'vitest';
import { realLoaderSource } from '../../test/support/real-loader.mjs';
import { startSite, type Site } from '../../e2e/support/site.js';
import { availableEngines, ENGINES, launch, type EngineName, type EnginePage } from '../../test/support/engines.mjs';

export type LoaderKind = 'emulated' | 'real';

export interface Cell {
  engine: EngineName;
  loader: LoaderKind;
  page: EnginePage;
  site: Site;
}

/** Emulator options that serve the loader of a cell. */
export const loaderOptions = (loader: LoaderKind) => (loader === 'real' ? { loaderSource: realLoaderSource() } : {});

const LOADERS: Array<[string, LoaderKind]> = [
  ['emulated loader', 'emulated'],
  ['real loader 5.2.2', 'real'],
];

/** Declares `body`'s tests once per engine and loader; `cell()` is that test's engine, page and site. */
export function inEveryEngine(body: (cell: () => Cell) => void): void {
  const engines = availableEngines();
  // Outside CI a missing engine is skipped, and says so (under CI availableEngines throws).
  for (const missing of ENGINES.filter((engine) => !engines.includes(engine)))
    describe.skip(`${missing}: not installed (see CONTRIBUTING.md)`, () => body(() => ({}) as Cell));
  describe.each(engines)('%s', (engine) => {
    let page: EnginePage | undefined;
    beforeAll(async () => {
      page = await launch(engine);
    });
    afterAll(async () => {
      await page?.close();
    });
    describe.each(LOADERS)('%s', (_, loader) => {
      let site: Site | undefined;
      beforeEach(async () => {
        site = await startSite(loaderOptions(loader));
      });
      afterEach(async () => {
        await site?.close();
      });
      body(() => ({ engine, loader, page: page!, site: site! }));
    });
  });
}
