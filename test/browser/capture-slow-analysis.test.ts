// @vitest-environment happy-dom
// The failed-script analysis is a chunk loaded on the first script error (src/browser/capture.ts):
// on a busy machine or a slow network it arrives after the loader has already said "complete"
// with what the chains that broke left (the emulated loader does so once every chain has
// finished or broken). The judgement still comes first: a run whose every chain failed is
// collection_failed, never resolved with the broken chains' remains.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { failure, freshPage, LOADER_URL, notFound, override, serveLoader, loaders } from '../support/vendor-dom.js';

vi.mock('../../src/browser/unparsed.js', async (original) => {
  await new Promise((resolve) => setTimeout(resolve, 300));
  return original();
});

let api: Awaited<ReturnType<typeof freshPage>>;
beforeEach(async () => {
  api = await freshPage();
});

describe.each(loaders())('a failed-script analysis that arrives late, %s', (_, loaderSource) => {
  serveLoader(loaderSource);

  it.each([
    [
      'static loads, dyn 404 (after it), third party blocked',
      [/dyn_wdp\.js/, /^https:\/\/tp\.test\//],
      ['fp_dyn_wdp', 'io_wdp'],
    ],
    [
      'proxy 404 and third party blocked',
      [/^https:\/\/shop\.test\/iojs\//, /^https:\/\/tp\.test\//],
      ['fp_static_wdp', 'io_wdp'],
    ],
  ])('%s: collection_failed, naming the failed scripts', async (_, broken, scripts) => {
    for (const pattern of broken) override(pattern, notFound);
    const error = await failure(api.captureBlackbox({ loaderUrl: LOADER_URL, timeoutMs: 5000 }));
    expect([error.code, error.scripts]).toEqual(['collection_failed', scripts]);
  });
});
