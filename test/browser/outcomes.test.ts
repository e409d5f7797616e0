// @vitest-environment happy-dom
// Capture outcomes: every call that starts a capture ends with one (onOutcome, the
// blackboxoutcome event, the POST body or an outcome-only report), and a known-broken first
// party ends after a short grace instead of the full time limit.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { CaptureOutcome } from '../../src/shared/types.js';
import { decodeBlackbox } from '../../src/emulator/scripts/routes.js';
import {
  blockThirdParty,
  breakLoader,
  breakProxy,
  failure,
  freshPage,
  LOADER_URL,
  loaders,
  ok,
  override,
  scriptsFor,
  serveLoader,
  settings,
} from '../support/vendor-dom.js';

let api: Awaited<ReturnType<typeof freshPage>>;
beforeEach(async () => {
  api = await freshPage();
});

/**
 * The proxy answering an HTML page: the scripts "load" and run nothing, so the loader waits
 * for ever. happy-dom runs an empty text/html body without a parse error, so the browser's
 * SyntaxError event is dispatched here, as Chromium dispatches it (e2e runs the real thing).
 */
async function breakProxyWithHtml(): Promise<void> {
  override(/^https:\/\/shop\.test\/iojs\//, { status: 200, headers: { 'content-type': 'text/html' }, body: '' });
  await vi.waitFor(() => expect(scriptsFor('https://shop.test/iojs/').length).toBeGreaterThan(0));
  const src = scriptsFor('https://shop.test/iojs/')[0]!.src;
  window.dispatchEvent(new ErrorEvent('error', { filename: src, error: new SyntaxError("Unexpected token '<'") }));
}
const serveHtmlFromProxy = () =>
  override(/^https:\/\/shop\.test\/iojs\//, { status: 200, headers: { 'content-type': 'text/html' }, body: '' });

/** Options that collect the outcomes of one call. */
function collecting() {
  const outcomes: CaptureOutcome[] = [];
  return { outcomes, onOutcome: (outcome: CaptureOutcome) => void outcomes.push(outcome) };
}

/** A capture that meets the proxy answering HTML (breakProxyWithHtml): its blackbox's sources, how long it took, its outcomes. */
async function captureWithHtmlProxy(timing: { degradedGraceMs: number; timeoutMs: number }) {
  const { outcomes, onOutcome } = collecting();
  const started = Date.now();
  const pending = api.captureBlackbox({ ...ok, onOutcome, ...timing });
  await breakProxyWithHtml();
  const blackbox = await pending;
  return { sources: decodeBlackbox(blackbox)?.sources, took: Date.now() - started, outcomes };
}

// The degraded grace reads the loader's failure flags: with the emulated loader and the real one alike.
describe.each(loaders())('outcomes of captures that resolve, %s', (_, loaderSource) => {
  serveLoader(loaderSource);
  it('complete: every source contributed', async () => {
    const { outcomes, onOutcome } = collecting();
    await api.captureBlackbox({ ...ok, onOutcome });
    expect(outcomes).toEqual([{ outcome: 'complete', scripts: [], durationMs: expect.any(Number) }]);
    expect(outcomes[0]!.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('degraded-third-party: the third party blocked, the first party delivered', async () => {
    blockThirdParty();
    const { outcomes, onOutcome } = collecting();
    await api.captureBlackbox({ ...ok, onOutcome });
    expect(outcomes).toEqual([expect.objectContaining({ outcome: 'degraded-third-party', scripts: ['io_wdp'] })]);
  });

  it('no grace when only the third party failed: the first party completes, however slow', async () => {
    blockThirdParty();
    settings.delays = { fp_dyn: [600] };
    const { outcomes, onOutcome } = collecting();
    const blackbox = await api.captureBlackbox({ ...ok, onOutcome, degradedGraceMs: 50 });
    expect(decodeBlackbox(blackbox)?.sources).toContain('fp_dyn');
    expect(outcomes).toEqual([expect.objectContaining({ outcome: 'degraded-third-party', scripts: ['io_wdp'] })]);
  });

  it('degraded-first-party: the proxy answers 404, the third party delivered', async () => {
    breakProxy();
    const { outcomes, onOutcome } = collecting();
    const bb = await api.captureBlackbox({ ...ok, onOutcome });
    expect(decodeBlackbox(bb)?.sources).toEqual(['tp']);
    expect(outcomes).toEqual([
      expect.objectContaining({ outcome: 'degraded-first-party', scripts: ['fp_static_wdp'] }),
    ]);
  });

  it('degraded-first-party also when the loader completes before the failed-script analysis has loaded', async () => {
    // The analysis is a chunk fetched on the first script error (capture.ts): held back here
    // until the loader has completed with the third party alone, as a slow network does.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    vi.doMock('../../src/browser/unparsed.js', async (original) => {
      await held;
      return original();
    });
    try {
      api = await freshPage();
      breakProxy();
      const { outcomes, onOutcome } = collecting();
      // The page's own bb_callback hears the loader at once (the package passes every value on).
      let completed = false;
      (window as unknown as { IGLOO: object }).IGLOO = {
        bb_callback: (_bb: string, done: boolean) => (completed ||= done),
      };
      const pending = api.captureBlackbox({ ...ok, onOutcome });
      await vi.waitFor(() => expect(completed).toBe(true));
      expect(outcomes).toEqual([]); // the outcome waits for the analysis
      release();
      expect(decodeBlackbox(await pending)?.sources).toEqual(['tp']);
      expect(outcomes).toEqual([
        expect.objectContaining({ outcome: 'degraded-first-party', scripts: ['fp_static_wdp'] }),
      ]);
    } finally {
      release();
      vi.doUnmock('../../src/browser/unparsed.js');
    }
  });

  it("a proxy answering HTML (the loader never completes) ends after degradedGraceMs, not timeoutMs, with the third party's blackbox", async () => {
    serveHtmlFromProxy();
    const { sources, took, outcomes } = await captureWithHtmlProxy({ degradedGraceMs: 100, timeoutMs: 10_000 });
    expect(took).toBeLessThan(5000);
    expect(sources).toEqual(['tp']);
    expect(outcomes).toEqual([
      expect.objectContaining({ outcome: 'degraded-first-party', scripts: ['fp_static_wdp'] }),
    ]);
  });

  it('a grace as long as the time limit waits for it: timeout-partial', async () => {
    serveHtmlFromProxy();
    const { outcomes, onOutcome } = collecting();
    const pending = failure(api.captureBlackbox({ ...ok, onOutcome, degradedGraceMs: 600_000, timeoutMs: 250 }));
    await breakProxyWithHtml();
    const error = await pending;
    expect(error.code).toBe('timeout');
    expect(outcomes).toEqual([expect.objectContaining({ outcome: 'timeout-partial', scripts: ['fp_static_wdp'] })]);
  });

  it("no grace before the third party has delivered: it starts with the third party's first update", async () => {
    serveHtmlFromProxy();
    settings.delays = { tp: [250] };
    const { sources, took, outcomes } = await captureWithHtmlProxy({ degradedGraceMs: 0, timeoutMs: 5000 });
    expect(took).toBeGreaterThanOrEqual(200);
    expect(sources).toEqual(['tp']);
    expect(outcomes).toEqual([expect.objectContaining({ outcome: 'degraded-first-party' })]);
  });

  it('no grace when the third party failed too: collection_failed', async () => {
    serveHtmlFromProxy();
    blockThirdParty();
    const pending = failure(api.captureBlackbox({ ...ok, degradedGraceMs: 0, timeoutMs: 5000 }));
    await breakProxyWithHtml();
    expect((await pending).code).toBe('collection_failed');
  });
});

describe('outcomes of captures that fail', () => {
  it.each([
    [
      'timeout-partial',
      (): void => void (settings.delays = { tp: [5, 5000], fp_static: [5000], fp_dyn: [5000] }),
      { timeoutMs: 200 },
      'timeout',
    ],
    [
      'collection_failed',
      (): void => {
        breakProxy();
        blockThirdParty();
      },
      {},
      'collection_failed',
    ],
    ['loader_failed', (): void => breakLoader(), {}, 'loader_failed'],
  ] as const)('%s', async (kind, breakIt, extra, code) => {
    breakIt();
    const { outcomes, onOutcome } = collecting();
    const error = await failure(api.captureBlackbox({ ...ok, ...extra, onOutcome }));
    expect(error.code).toBe(code);
    expect(outcomes).toEqual([expect.objectContaining({ outcome: kind })]);
  });

  it('aborted', async () => {
    const controller = new AbortController();
    const { outcomes, onOutcome } = collecting();
    const pending = failure(api.captureBlackbox({ ...ok, onOutcome, signal: controller.signal }));
    controller.abort();
    expect((await pending).code).toBe('aborted');
    expect(outcomes).toEqual([expect.objectContaining({ outcome: 'aborted' })]);
  });

  it('options refused before anything started have no outcome', async () => {
    const { outcomes, onOutcome } = collecting();
    await failure(api.captureBlackbox({ ...ok, onOutcome, timeoutMs: -1 }));
    expect(outcomes).toEqual([]);
  });

  it('an onOutcome that throws is reported and breaks nothing', async () => {
    const reported: unknown[] = [];
    vi.stubGlobal('reportError', (error: unknown) => reported.push(error));
    try {
      const bb = await api.captureBlackbox({
        ...ok,
        onOutcome: () => {
          throw new Error('page bug');
        },
      });
      expect(bb).toMatch(/^0400/);
      expect(reported).toEqual([new Error('page bug')]);
    } finally {
      vi.unstubAllGlobals();
    }
  });
});

describe('outcomes on their way to the server', () => {
  /** A fetch that records the JSON bodies it was sent and answers `status`. */
  function endpoint(status = 200) {
    const bodies: unknown[] = [];
    const fetch = (async (_url: string, init: RequestInit) => {
      bodies.push(JSON.parse(init.body as string));
      // Retry-After: 0, so that a retry (if any) comes at once.
      return new Response('{}', { status, headers: { 'retry-after': '0' } });
    }) as unknown as typeof globalThis.fetch;
    return { bodies, fetch };
  }

  it('a custom body builder gets the outcome', async () => {
    const { bodies, fetch } = endpoint();
    await api.captureBlackbox({
      ...ok,
      post: { url: '/risk', fetch, body: (blackbox, outcome) => ({ bb: blackbox.length > 0, how: outcome.outcome }) },
    });
    expect(bodies).toEqual([{ bb: true, how: 'complete' }]);
  });

  it('a capture with no final blackbox sends { outcome } alone, kept alive, one retry at most', async () => {
    breakProxy();
    blockThirdParty();
    const { bodies, fetch } = endpoint(503);
    const seen: RequestInit[] = [];
    const recording = ((url: string, init: RequestInit) => {
      seen.push(init);
      return fetch(url, init);
    }) as typeof globalThis.fetch;
    const error = await failure(
      api.captureBlackbox({ ...ok, post: { url: '/risk', fetch: recording, maxAttempts: 5 } }),
    );
    expect(error.code).toBe('collection_failed');
    await vi.waitFor(() => expect(bodies).toHaveLength(2), { timeout: 3000 });
    await new Promise((r) => setTimeout(r, 100));
    expect(bodies).toHaveLength(2);
    expect(bodies[0]).toEqual({
      outcome: { outcome: 'collection_failed', scripts: ['fp_static_wdp', 'io_wdp'], durationMs: expect.any(Number) },
    });
    expect(seen[0]!.keepalive).toBe(true);
  });

  it('a failed delivery of a produced blackbox sends no outcome-only report', async () => {
    const { bodies, fetch } = endpoint(400);
    const error = await failure(api.captureBlackbox({ ...ok, post: { url: '/risk', fetch } }));
    expect(error.code).toBe('post_failed');
    await new Promise((r) => setTimeout(r, 50));
    expect(bodies).toEqual([expect.objectContaining({ blackbox: error.blackbox })]);
  });

  it('the blackboxoutcome event of a script tag', async () => {
    const events: unknown[] = [];
    document.addEventListener('blackboxoutcome', (event) => events.push((event as CustomEvent).detail));
    const tag = document.createElement('script');
    tag.dataset.loaderUrl = LOADER_URL;
    const { startFromScriptTag } = await import('../../src/browser/declarative.js');
    await startFromScriptTag(tag);
    expect(events).toEqual([expect.objectContaining({ outcome: 'complete', scripts: [] })]);
  });
});
