// The delivery chunk on its own: its retries, its waits, and what it leaves behind.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { deliver, report } from '../../src/browser/deliver.js';
import type { CaptureOutcome } from '../../src/shared/types.js';
import { scriptedFetch } from '../support/scripted-fetch.js';
import { untilAborted } from '../support/until-aborted.js';

const outcome: CaptureOutcome = { outcome: 'complete', scripts: [], durationMs: 5 };
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('deliver', () => {
  it("keeps a request alive only under the browsers' 64 KiB keep-alive limit, whatever the characters", async () => {
    const sent = async (blackbox: string, body?: () => unknown) => {
      const { fetch, seen } = scriptedFetch([200]);
      await deliver(blackbox, { url: '/r', fetch, body }, outcome);
      return [seen[0]!.init.keepalive, (seen[0]!.init.body as string).length];
    };
    // A usual blackbox: kept alive, a page being left still delivers.
    expect((await sent('0400' + 'A'.repeat(4000)))[0]).toBe(true);
    // 1 MB (issue #57: lost in the browser's keep-alive limit): sent without keep-alive, whole.
    expect(await sent('0400' + 'A'.repeat(1_000_000))).toEqual([
      false,
      1_000_004 + JSON.stringify({ blackbox: '', outcome }).length,
    ]);
    // 19,000 characters of 3 bytes each in UTF-8 would be 57,000 bytes: under the limit, kept alive;
    // 22,000 would be 66,000 bytes: over it.
    expect((await sent('bb', () => ({ note: '€'.repeat(19_000) })))[0]).toBe(true);
    expect((await sent('bb', () => ({ note: '€'.repeat(22_000) })))[0]).toBe(false);
  });

  it('sends nothing under a signal aborted before it starts: the reason is thrown', async () => {
    const { fetch, seen } = scriptedFetch([200]);
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    await expect(deliver('bb', { url: '/r', fetch }, outcome, controller.signal)).rejects.toThrow('gone');
    expect(seen).toHaveLength(0);
  });

  it('holds its time limit on a post.fetch that ignores its signal, and on a body that never ends', async () => {
    vi.useFakeTimers();
    const never = () => new Promise<Response>(() => {});
    const hung = deliver('bb', { url: '/r', fetch: never, maxAttempts: 2, timeoutMs: 200 }, outcome);
    const hungCaught = hung.catch((failure: unknown) => failure);
    await vi.advanceTimersByTimeAsync(200 + 20_000 + 200);
    expect(await hungCaught).toMatchObject({ detail: 'no answer within 200 ms' });
    const endless = async () => new Response(new ReadableStream({ start: () => {} }), { status: 503 });
    const stalled = deliver('bb', { url: '/r', fetch: endless, maxAttempts: 1, timeoutMs: 200 }, outcome);
    const stalledCaught = stalled.catch((failure: unknown) => failure);
    await vi.advanceTimersByTimeAsync(200);
    expect(await stalledCaught).toMatchObject({ detail: 'no answer within 200 ms' });
  });

  it('a post.body that throws, or builds what JSON cannot hold, is a failure naming it, with its cause', async () => {
    const { fetch, seen } = scriptedFetch([200]);
    const broken = new Error('no body');
    const body = () => {
      throw broken;
    };
    await expect(deliver('bb', { url: '/r', fetch, body }, outcome)).rejects.toEqual({
      detail: 'body',
      cause: broken,
    });
    await expect(deliver('bb', { url: '/r', fetch, body: () => ({ n: 1n }) }, outcome)).rejects.toMatchObject({
      detail: 'body',
      cause: expect.any(TypeError),
    });
    expect(seen).toHaveLength(0);
  });

  it('waits 300 ms × 2^attempt at most between attempts without Retry-After (full jitter), and Retry-After: 0 not at all', async () => {
    vi.useFakeTimers();
    vi.spyOn(Math, 'random').mockReturnValue(1); // the longest wait the jitter allows
    const jittered = scriptedFetch([503, 503, 200]);
    const done = deliver('bb', { url: '/r', fetch: jittered.fetch }, outcome);
    await vi.advanceTimersByTimeAsync(599);
    expect(jittered.seen).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1); // 600 ms: 300 × 2
    expect(jittered.seen).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1199);
    expect(jittered.seen).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1); // 1200 ms: 300 × 4
    expect((await done).status).toBe(200);
    const now = scriptedFetch([new Response('', { status: 503, headers: { 'retry-after': '0' } }), 200]);
    const immediate = deliver('bb', { url: '/r', fetch: now.fetch }, outcome);
    await vi.advanceTimersByTimeAsync(0);
    expect((await immediate).status).toBe(200);
    expect(now.seen).toHaveLength(2);
  });

  it('a network error fails as "network error", a silent server as "no answer within …"', async () => {
    const failed = await deliver(
      'bb',
      { url: '/r', fetch: scriptedFetch(['network']).fetch, maxAttempts: 1 },
      outcome,
    ).catch((e: unknown) => e);
    expect(failed).toMatchObject({ detail: 'network error', status: undefined, cause: expect.any(TypeError) });
    const hanging = ((_: string, init: RequestInit) => untilAborted(init.signal)) as typeof fetch;
    const silent = await deliver('bb', { url: '/r', fetch: hanging, maxAttempts: 1, timeoutMs: 20 }, outcome).catch(
      (e: unknown) => e,
    );
    expect(silent).toMatchObject({ detail: 'no answer within 20 ms' });
  });

  it('aborted during its last attempt: rejects with the reason itself, not a delivery failure', async () => {
    const controller = new AbortController();
    const reason = new Error('customer left');
    const hanging = ((_: string, init: RequestInit) => {
      queueMicrotask(() => controller.abort(reason));
      return untilAborted(init.signal);
    }) as typeof fetch;
    await expect(deliver('bb', { url: '/r', fetch: hanging, maxAttempts: 1 }, outcome, controller.signal)).rejects.toBe(
      reason,
    );
  });

  it('without crypto.randomUUID the key is the random bytes in hex, two digits each, small bytes included', async () => {
    Object.defineProperty(crypto, 'randomUUID', { value: undefined, configurable: true, writable: true });
    vi.spyOn(crypto, 'getRandomValues').mockImplementation((array) => {
      (array as Uint8Array).forEach((_, i, bytes) => (bytes[i] = i * 17));
      return array;
    });
    const { fetch, seen } = scriptedFetch([200]);
    try {
      await deliver('bb', { url: '/r', fetch }, outcome);
    } finally {
      delete (crypto as { randomUUID?: unknown }).randomUUID; // the prototype's method shows through again
    }
    expect(seen[0]!.init.headers['idempotency-key']).toBe('00112233445566778899aabbccddeeff');
    expect(typeof crypto.randomUUID).toBe('function');
  });

  it('leaves no timer and no listener on the signal behind, however it ends', async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const added = vi.spyOn(controller.signal, 'addEventListener');
    const removed = vi.spyOn(controller.signal, 'removeEventListener');
    const ok = scriptedFetch([new Response('', { status: 503, headers: { 'retry-after': '0' } }), 200]);
    const done = deliver('bb', { url: '/r', fetch: ok.fetch }, outcome, controller.signal);
    await vi.advanceTimersByTimeAsync(0);
    await done;
    const refused = deliver('bb', { url: '/r', fetch: scriptedFetch([400]).fetch }, outcome, controller.signal).catch(
      () => {},
    );
    await refused;
    expect(vi.getTimerCount()).toBe(0);
    // Each attempt's listener is removed (the waits' listeners are `once` and go with their promise).
    const attemptListeners = (spy: typeof added) =>
      spy.mock.calls.filter((call) => call[2] === undefined).map((call) => [call[0], call[1]]);
    expect(attemptListeners(removed)).toEqual(attemptListeners(added));
    expect(attemptListeners(added).map(([type]) => type)).toEqual(['abort', 'abort', 'abort']);
  });
});

describe('report', () => {
  it('one attempt and one retry when maxAttempts is not given, and never more than two', async () => {
    vi.useFakeTimers();
    for (const maxAttempts of [undefined, 5]) {
      const failing = scriptedFetch([503]);
      const told = report(
        { url: '/r', fetch: failing.fetch, ...(maxAttempts ? { maxAttempts } : {}) },
        { ...outcome, outcome: 'timeout-partial' },
      ).catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(5_000);
      expect(await told).toMatchObject({ detail: 'HTTP 503{}', status: 503 });
      expect(failing.seen.map(({ init }) => JSON.parse(init.body as string))).toEqual([
        { outcome: { ...outcome, outcome: 'timeout-partial' } },
        { outcome: { ...outcome, outcome: 'timeout-partial' } },
      ]);
    }
  });
});
