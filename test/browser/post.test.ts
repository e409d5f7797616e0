// @vitest-environment happy-dom
// Delivery of the final blackbox to the integrator's endpoint (post option), with an injected fetch.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { scriptedFetch, scriptedGlobalFetch, type Seen } from '../support/scripted-fetch.js';
import { failure, freshPage, loaders, LOADER_URL, serveLoader } from '../support/vendor-dom.js';
import { untilAborted } from '../support/until-aborted.js';

let api: Awaited<ReturnType<typeof freshPage>>;
beforeEach(async () => {
  api = await freshPage();
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/**
 * A capture posting to /device-risk through `fetch` (under `signal`, with `post` over the
 * defaults), once its first attempt is made: fake timers from then (fakeTimersAtFirstAttempt).
 */
async function atFirstAttempt(
  fetch: typeof globalThis.fetch,
  signal: AbortSignal | undefined,
  post: { maxAttempts?: number; timeoutMs?: number } = {},
) {
  const timed = fakeTimersAtFirstAttempt(fetch);
  const capture = api.captureBlackbox({
    loaderUrl: LOADER_URL,
    ...(signal === undefined ? {} : { signal }),
    post: { url: '/device-risk', fetch: timed.fetch, ...post },
  });
  await timed.firstAttempt;
  return { capture };
}

/**
 * Fake timers from the first delivery attempt on: the capture before it runs on real
 * timers, the waits between attempts are then stepped through instead of slept.
 */
function fakeTimersAtFirstAttempt(fetch: typeof globalThis.fetch) {
  let started!: () => void;
  // Awaited instead of vi.waitFor, which would move the fake clock while it polls.
  const firstAttempt = new Promise<void>((resolve) => (started = resolve));
  const wrapped = ((url: string, init: RequestInit) => {
    if (!vi.isFakeTimers()) vi.useFakeTimers();
    started();
    return fetch(url, init);
  }) as typeof globalThis.fetch;
  return { fetch: wrapped, firstAttempt };
}

describe('post', () => {
  it('POSTs the final blackbox as JSON with an Idempotency-Key, keepalive, then resolves', async () => {
    const { fetch, seen } = scriptedFetch([200]);
    let resolvedAfterPost = false;
    // Collected here, asserted below: an expect() inside onUpdate would be swallowed by the package's guard.
    const postsAtComplete: number[] = [];
    const bb = await api
      .captureBlackbox({
        loaderUrl: LOADER_URL,
        onUpdate: (_, complete) => {
          if (complete) postsAtComplete.push(seen.length);
        },
        post: { url: '/device-risk', fetch },
      })
      .then((v) => {
        resolvedAfterPost = seen.length === 1;
        return v;
      });
    expect(postsAtComplete).toEqual([0]);
    expect(resolvedAfterPost).toBe(true);
    const [{ url, init }] = seen as [Seen];
    expect(url).toBe('/device-risk');
    expect(init.method).toBe('POST');
    expect(init.keepalive).toBe(true);
    expect(init.credentials).toBe('same-origin');
    expect(init.headers['content-type']).toBe('application/json');
    expect(init.headers['idempotency-key']).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    // JSON keeps "+" intact, unlike form or query encoding.
    // The outcome and the time the blackbox became final travel with it.
    expect(JSON.parse(init.body as string)).toEqual({
      blackbox: bb,
      outcome: { outcome: 'complete', scripts: [], durationMs: expect.any(Number) },
      capturedAt: expect.any(Number),
    });
    expect(bb).toMatch(/\+/);
  });

  it("capturedAt is when the run's blackbox became final, not when it is sent: a later delivery tells its age", async () => {
    const { fetch, seen } = scriptedFetch([200]);
    const before = Date.now();
    await api.captureBlackbox({ loaderUrl: LOADER_URL, post: { url: '/device-risk', fetch } });
    const after = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 60));
    // A call that does not join the first (other options) delivers the page run's one blackbox again.
    await api.captureBlackbox({ loaderUrl: LOADER_URL, post: { url: '/other-risk', fetch } });
    const [first, second] = seen.map((call) => JSON.parse(call.init.body as string) as { capturedAt: number });
    expect(first!.capturedAt).toBeGreaterThanOrEqual(before);
    expect(first!.capturedAt).toBeLessThanOrEqual(after);
    expect(second!.capturedAt).toBe(first!.capturedAt);
  });

  it('accepts a plain URL string', async () => {
    const { seen, restore } = scriptedGlobalFetch([new Response(null, { status: 204 })]);
    try {
      await api.captureBlackbox({ loaderUrl: LOADER_URL, post: 'https://shop.test/device-risk' });
      expect(seen.map((call) => call.url)).toEqual(['https://shop.test/device-risk']);
    } finally {
      restore();
    }
  });

  it('uses the given headers, credentials and body builder', async () => {
    const { fetch, seen } = scriptedFetch([201]);
    const bb = await api.captureBlackbox({
      loaderUrl: LOADER_URL,
      post: {
        url: '/risk',
        fetch,
        headers: { 'x-csrf-token': 't' },
        credentials: 'include',
        body: (b) => ({ deviceRisk: { blackbox: b }, cart: 7 }),
      },
    });
    const [{ init }] = seen as [Seen];
    expect(init.headers['x-csrf-token']).toBe('t');
    expect(init.credentials).toBe('include');
    expect(JSON.parse(init.body as string)).toEqual({ deviceRisk: { blackbox: bb }, cart: 7 });
  });

  it('retries 5xx, 429 and network errors with the same Idempotency-Key', async () => {
    // Retry-After: 0 on the answers, so that the test does not sit through the backoff (honoured below).
    const now = (status: number) => new Response('', { status, headers: { 'retry-after': '0' } });
    const { fetch, seen } = scriptedFetch([now(503), now(500), now(429), 200]);
    await api.captureBlackbox({ loaderUrl: LOADER_URL, post: { url: '/risk', fetch } });
    expect(seen).toHaveLength(4);
    expect(new Set(seen.map((s) => s.init.headers['idempotency-key'])).size).toBe(1);
  });

  it('honours Retry-After: the retry leaves when it ends, not before', async () => {
    const { fetch, seen } = scriptedFetch([new Response('', { status: 503, headers: { 'retry-after': '1' } }), 200]);
    const timed = fakeTimersAtFirstAttempt(fetch);
    const done = api.captureBlackbox({ loaderUrl: LOADER_URL, post: { url: '/risk', fetch: timed.fetch } });
    await timed.firstAttempt;
    await vi.advanceTimersByTimeAsync(0);
    expect(seen).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(999);
    expect(seen).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(seen).toHaveLength(2);
    await done;
  });

  it('the delivery chunk cannot load (the network gone): post_failed naming it, carrying the final blackbox', async () => {
    vi.doMock('../../src/browser/deliver.js', () => {
      throw new TypeError('Failed to fetch dynamically imported module');
    });
    try {
      api = await freshPage();
      const { fetch, seen } = scriptedFetch([200]);
      const error = await failure(api.captureBlackbox({ loaderUrl: LOADER_URL, post: { url: '/device-risk', fetch } }));
      expect([error.code, error.url, error.blackbox?.slice(0, 4)]).toEqual(['post_failed', '/device-risk', '0400']);
      expect(error.message).toContain('the delivery code did not load');
      expect(seen).toEqual([]);
    } finally {
      vi.doUnmock('../../src/browser/deliver.js');
    }
  });

  it('never retries other 4xx: post_failed at once, carrying the blackbox and status', async () => {
    const { fetch, seen } = scriptedFetch([400]);
    const error = await failure(api.captureBlackbox({ loaderUrl: LOADER_URL, post: { url: '/risk', fetch } }));
    expect(seen).toHaveLength(1);
    expect(error.code).toBe('post_failed');
    expect(error.status).toBe(400);
    expect(error.blackbox).toMatch(/^0400/);
    expect(error.url).toBe('/risk');
    expect(error.message).toMatch(/\/risk failed: HTTP 400/);
  });

  it.each([
    [
      "the server kit's refusal",
      { error: { code: 'origin_not_allowed', message: 'Origin refused' } },
      ' origin_not_allowed',
    ],
    ['a flat code', { code: 'invalid-request.v2' }, ' invalid-request.v2'],
    ['a code that is not a word', { error: { code: 'two words' } }, ''],
    ['a code that is not a string', { code: 42 }, ''],
    ['a code past 64 characters', { code: 'x'.repeat(65) }, ''],
    ['no code', { message: 'no' }, ''],
    ['an HTML page', '<html><body>Forbidden "code":"x"</body></html>', ''],
    ['no body', '', ''],
  ])('post_failed names the status and the error code of the answer: %s', async (_, body, named) => {
    const answer = new Response(typeof body === 'string' ? body : JSON.stringify(body), { status: 403 });
    const { fetch } = scriptedFetch([answer]);
    const error = await failure(api.captureBlackbox({ loaderUrl: LOADER_URL, post: { url: '/risk', fetch } }));
    expect([error.code, error.status]).toEqual(['post_failed', 403]);
    expect(error.message).toMatch(new RegExp(`/risk failed: HTTP 403${named.replace('.', '\\.')}; the error carries`));
  });

  it('an answer whose body breaks off is a network error, retried; the blackbox is kept', async () => {
    const broken = () =>
      new Response(new ReadableStream({ pull: (controller) => controller.error(new TypeError('connection reset')) }), {
        status: 403,
      });
    const { fetch, seen } = scriptedFetch([broken(), broken()]);
    const error = await failure(
      api.captureBlackbox({ loaderUrl: LOADER_URL, post: { url: '/risk', fetch, maxAttempts: 2 } }),
    );
    expect(seen).toHaveLength(2);
    expect([error.code, error.status, error.blackbox?.slice(0, 4)]).toEqual(['post_failed', undefined, '0400']);
    expect(error.message).toMatch(/\/risk failed: network error;/);
  });

  it('gives up after maxAttempts with post_failed, and nothing is lost', async () => {
    const { fetch, seen } = scriptedFetch(['network']);
    document.body.innerHTML = '<input id="bb">';
    const timed = fakeTimersAtFirstAttempt(fetch);
    const pending = failure(
      api.captureBlackbox({
        loaderUrl: LOADER_URL,
        field: 'bb',
        post: { url: '/risk', fetch: timed.fetch, maxAttempts: 3 },
      }),
    );
    await timed.firstAttempt;
    // Full jitter: the waits are at most 600 and 1,200 ms.
    await vi.advanceTimersByTimeAsync(1800);
    const error = await pending;
    expect(seen).toHaveLength(3);
    expect(error.code).toBe('post_failed');
    expect(error.cause).toBeInstanceOf(TypeError);
    expect(error.blackbox).toMatch(/^0400/);
    expect((document.getElementById('bb') as HTMLInputElement).value).toBe(error.blackbox);
  });

  it('limits each attempt with post.timeoutMs, never hanging', async () => {
    const seen: unknown[] = [];
    const hanging = ((_: string, init: RequestInit) => {
      // From here on no jitter, so no backoff: the attempts' own time limits are what this test waits for.
      if (!vi.isMockFunction(Math.random)) vi.spyOn(Math, 'random').mockReturnValue(0);
      seen.push(1);
      return untilAborted(init.signal, () => new DOMException('aborted', 'AbortError'));
    }) as unknown as typeof fetch;
    const error = await failure(
      api.captureBlackbox({
        loaderUrl: LOADER_URL,
        post: { url: '/risk', fetch: hanging, maxAttempts: 2, timeoutMs: 50 },
      }),
    );
    expect(error.code).toBe('post_failed');
    expect(error.message).toMatch(/no answer within 50 ms/);
    expect(seen).toHaveLength(2);
  });

  it('a 409 without Retry-After (an order already checked, a refusal for good) is final: no second post', async () => {
    const { fetch, seen } = scriptedFetch([
      new Response('{"error":{"code":"order_already_checked"}}', { status: 409 }),
      200,
    ]);
    const error = await failure(api.captureBlackbox({ loaderUrl: LOADER_URL, post: { url: '/risk', fetch } }));
    expect(error).toMatchObject({ code: 'post_failed', status: 409 });
    expect(error.message).toMatch(/HTTP 409 order_already_checked/);
    expect(seen).toHaveLength(1);
  });

  it('retries a 409 idempotency_key_in_use whose Retry-After a cross-origin answer hides (no CORS exposure)', async () => {
    const { fetch, seen } = scriptedFetch([
      new Response('{"error":{"code":"idempotency_key_in_use"}}', { status: 409 }),
      200,
    ]);
    await api.captureBlackbox({ loaderUrl: LOADER_URL, post: { url: '/device-risk', fetch, maxAttempts: 2 } });
    expect(seen).toHaveLength(2);
  });

  it('retries a 409 (the server still works on this key, maybe on another instance) with the same key', async () => {
    const { fetch, seen } = scriptedFetch([new Response('', { status: 409, headers: { 'retry-after': '0' } }), 200]);
    await api.captureBlackbox({ loaderUrl: LOADER_URL, post: { url: '/device-risk', fetch, maxAttempts: 2 } });
    expect(seen).toHaveLength(2);
    expect(new Set(seen.map((s) => s.init.headers['idempotency-key'])).size).toBe(1);
  });

  it('without crypto.randomUUID (a page that is no secure context) the key is 32 random hex digits', async () => {
    const randomUUID = crypto.randomUUID;
    Object.defineProperty(crypto, 'randomUUID', { value: undefined, configurable: true, writable: true });
    try {
      const keys: string[] = [];
      for (let i = 0; i < 2; i++) {
        const { fetch, seen } = scriptedFetch([200]);
        api = await freshPage();
        await api.captureBlackbox({ loaderUrl: LOADER_URL, post: { url: '/device-risk', fetch } });
        keys.push(seen[0]!.init.headers['idempotency-key']!);
      }
      for (const key of keys) expect(key).toMatch(/^[0-9a-f]{32}$/);
      expect(keys[0]).not.toBe(keys[1]);
    } finally {
      Object.defineProperty(crypto, 'randomUUID', { value: randomUUID, configurable: true, writable: true });
    }
  });

  it('after an abort during the wait, no retry is sent when the wait would have ended', async () => {
    const controller = new AbortController();
    const { fetch, seen } = scriptedFetch([new Response('', { status: 503, headers: { 'retry-after': '1' } })]);
    const { capture: pending } = await atFirstAttempt(fetch, controller.signal);
    await vi.advanceTimersByTimeAsync(0);
    controller.abort();
    await failure(pending);
    await vi.advanceTimersByTimeAsync(1200);
    expect(seen).toHaveLength(1);
  });

  it('gives up after maxAttempts on 5xx: exactly that many attempts, post_failed with the last status', async () => {
    const now = (status: number) => new Response('', { status, headers: { 'retry-after': '0' } });
    const { fetch, seen } = scriptedFetch([now(502), now(503), now(504)]);
    const error = await failure(
      api.captureBlackbox({ loaderUrl: LOADER_URL, post: { url: '/device-risk', fetch, maxAttempts: 3 } }),
    );
    expect(seen).toHaveLength(3);
    expect(error).toMatchObject({ code: 'post_failed' });
  });

  it.each([
    ['a network error without a signal is retried, not mistaken for an abort', 'network' as const],
    ['retries an HTTP 500', 500],
  ])('%s', async (_, first) => {
    const { fetch, seen } = scriptedFetch([first, 200]);
    const { capture: done } = await atFirstAttempt(fetch, undefined, { maxAttempts: 2 });
    await vi.advanceTimersByTimeAsync(600); // the first backoff is at most 600 ms
    await done;
    expect(seen).toHaveLength(2);
  });

  it('an abort reaches the fetch in flight: its signal aborts and the capture rejects with aborted', async () => {
    const controller = new AbortController();
    const signals: AbortSignal[] = [];
    const hanging = ((_: string, init: RequestInit) => {
      signals.push(init.signal!);
      return untilAborted(init.signal);
    }) as unknown as typeof fetch;
    const { capture: pending } = await atFirstAttempt(hanging, controller.signal, { timeoutMs: 60_000 });
    expect(signals).toHaveLength(1);
    controller.abort();
    expect(signals[0]!.aborted).toBe(true);
    expect(await failure(pending)).toMatchObject({ code: 'aborted' });
    // The aborted attempt is not retried after a backoff (at most 600 ms for a second attempt).
    await vi.advanceTimersByTimeAsync(700);
    expect(signals).toHaveLength(1);
  });

  it.each([
    ['an abort during the wait before a retry ends it at once (the wait is up to 20 s here)', '3600', {}],
    ['an abort during the backoff between attempts ends the wait at once', '20', { maxAttempts: 3 }],
  ])('%s', async (_, retryAfter, options) => {
    const controller = new AbortController();
    const { fetch, seen } = scriptedFetch([new Response('', { status: 503, headers: { 'retry-after': retryAfter } })]);
    const pending = api.captureBlackbox({
      loaderUrl: LOADER_URL,
      signal: controller.signal,
      post: { url: '/device-risk', fetch, ...options },
    });
    await vi.waitFor(() => expect(seen).toHaveLength(1));
    await new Promise((r) => setTimeout(r, 20));
    controller.abort(new Error('customer left'));
    expect(await failure(pending)).toMatchObject({ code: 'aborted' });
    expect(seen).toHaveLength(1);
  });
});

// Where an abort meets the end of a capture or its delivery: with both loaders, as the real one is the reference.
describe.each(loaders())('aborts around delivery, %s', (_, loaderSource) => {
  serveLoader(loaderSource);

  it('abort during delivery: aborted, carrying the blackbox; onOutcome hears of the capture once', async () => {
    const controller = new AbortController();
    const { fetch } = scriptedFetch([503]);
    const wrapped = ((url: string, init: RequestInit) => {
      setTimeout(() => controller.abort(), 0);
      return fetch(url, init);
    }) as typeof globalThis.fetch;
    const outcomes: string[] = [];
    const error = await failure(
      api.captureBlackbox({
        loaderUrl: LOADER_URL,
        signal: controller.signal,
        onOutcome: (o) => outcomes.push(o.outcome),
        post: { url: '/risk', fetch: wrapped },
      }),
    );
    expect(error.code).toBe('aborted');
    expect(error.blackbox).toMatch(/^0400/);
    await new Promise((r) => setTimeout(r, 20)); // the delivery's own rejection has come back by now
    // The capture itself completed: a delivery that did not is not the capture's outcome.
    expect(outcomes).toEqual(['complete']);
  });

  it('an abort when the final blackbox arrives, before delivery starts, delivers nothing: aborted, reported once as aborted', async () => {
    const controller = new AbortController();
    const { fetch, seen } = scriptedFetch([200]);
    // As a framework's handler of the field's input event might, when the page is being left.
    const onUpdate = (_: string, final: boolean) => final && controller.abort(new Error('customer left'));
    const outcomes: string[] = [];
    const capture = api.captureBlackbox({
      loaderUrl: LOADER_URL,
      signal: controller.signal,
      onUpdate,
      onOutcome: (o) => outcomes.push(o.outcome),
      post: { url: '/device-risk', fetch },
    });
    const error = await failure(capture);
    expect(error).toMatchObject({ code: 'aborted' });
    expect(typeof error.blackbox).toBe('string'); // the blackbox is not lost: the page still has it
    await new Promise((r) => setTimeout(r, 50)); // the delivery chunk has loaded by now
    expect(outcomes).toEqual(['aborted']);
    // One request: the outcome-only report of an aborted capture, no blackbox.
    expect(seen.map((s) => JSON.parse(s.init.body as string))).toEqual([
      { outcome: expect.objectContaining({ outcome: 'aborted' }) },
    ]);
  });

  it('an abort that lands as an answer to retry arrives sends no retry', async () => {
    const controller = new AbortController();
    const seen: string[] = [];
    // The answer is on its way when the customer leaves: the abort fires before delivery reads it.
    const answerThenAbort = ((url: string) => {
      seen.push(url);
      const answer = Promise.resolve(new Response('', { status: 503, headers: { 'retry-after': '1' } }));
      controller.abort(new Error('customer left'));
      return answer;
    }) as typeof fetch;
    const { capture: pending } = await atFirstAttempt(answerThenAbort, controller.signal);
    expect(await failure(pending)).toMatchObject({ code: 'aborted' });
    await vi.advanceTimersByTimeAsync(1200); // past the Retry-After of 1 s
    expect(seen).toHaveLength(1);
  });
});

describe('orderToken', () => {
  it("goes with the POST as the Order-Token header the gateway reads, beside post's headers", async () => {
    const { fetch, seen } = scriptedFetch([200]);
    await api.captureBlackbox({
      loaderUrl: LOADER_URL,
      orderToken: 'ot_abc',
      post: { url: '/device-risk', headers: { 'x-csrf': 't' }, fetch },
    });
    expect(seen[0]!.init.headers).toMatchObject({ 'x-csrf': 't', 'order-token': 'ot_abc' });
  });

  it('none given, none sent', async () => {
    const { fetch, seen } = scriptedFetch([200]);
    await api.captureBlackbox({ loaderUrl: LOADER_URL, post: { url: '/device-risk', fetch } });
    expect(seen[0]!.init.headers).not.toHaveProperty('order-token');
  });

  it('comes from data-order-token on a script tag', async () => {
    const headers: Array<Record<string, string>> = [];
    const original = globalThis.fetch;
    globalThis.fetch = (async (_url: string, init: RequestInit) => {
      headers.push(init.headers as Record<string, string>);
      return new Response('{}');
    }) as typeof fetch;
    try {
      const tag = document.createElement('script');
      Object.assign(tag.dataset, { loaderUrl: LOADER_URL, postUrl: 'https://shop.test/risk', orderToken: 'ot_tag' });
      const { startFromScriptTag } = await import('../../src/browser/declarative.js');
      await startFromScriptTag(tag);
      expect(headers).toEqual([expect.objectContaining({ 'order-token': 'ot_tag' })]);
    } finally {
      globalThis.fetch = original;
    }
  });
});

describe('a delivery that must not go out twice, or at all', () => {
  it('a call joining a final run, aborted as it joins: rejects aborted with the blackbox, and posts nothing', async () => {
    await api.captureBlackbox({ loaderUrl: LOADER_URL });
    const { fetch, seen } = scriptedFetch([200]);
    const controller = new AbortController();
    const call = api.captureBlackbox({ loaderUrl: LOADER_URL, signal: controller.signal, post: { url: '/r', fetch } });
    controller.abort(new Error('customer left'));
    const error = await failure(call);
    expect([error.code, error.blackbox]).toEqual(['aborted', expect.stringMatching(/^0400/)]);
    // The delivery code loaded, and what it runs after (a task later): nothing sent.
    await import('../../src/browser/deliver.js');
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(seen).toHaveLength(0);
  });

  it('two mounts of one checkout, each with its own signal: one delivery, under one key', async () => {
    const { captureJoined } = await import('../../src/browser/joined.js');
    const { fetch, seen } = scriptedFetch([200, 200]);
    const post = { url: '/r', fetch };
    let ended = 0;
    await new Promise<void>((resolve) => {
      const listener = { update() {}, outcome() {}, ended: () => ++ended === 2 && resolve() };
      for (const mount of [new AbortController(), new AbortController()])
        captureJoined({ loaderUrl: LOADER_URL, checkoutId: 'cart-1', signal: mount.signal, post }, listener);
    });
    expect(seen).toHaveLength(1);
  });

  it('a post.body that throws: post_failed naming it, with its cause and the blackbox', async () => {
    const broken = new Error('no body');
    const error = await failure(
      api.captureBlackbox({
        loaderUrl: LOADER_URL,
        post: {
          url: '/r',
          body: () => {
            throw broken;
          },
        },
      }),
    );
    expect([error.code, error.cause, error.blackbox]).toEqual(['post_failed', broken, expect.stringMatching(/^0400/)]);
    expect(error.message).toMatch(/the request body could not be built/);
  });
});
