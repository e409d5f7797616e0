// One call to the service's API (src/server/api/call.ts) on a stub fetch and a stub limiter:
// what is sent, the slot of a limited call (taken, released once, told the fleet's backoff),
// a whole-call time limit, and which answers are retried.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createCall, type CallContext, type CallInit } from '../../../src/server/api/call.js';
import type { RateLimiter, SlotWait } from '../../../src/server/api/rate-limit.js';
import type { TokenSource } from '../../../src/server/api/token-source.js';
import { DeviceRiskError } from '../../../src/server/errors.js';

const URL_ = 'https://api.example/api/v1/accounts';
const T0 = 1_800_000_000_000;

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

type Answer = Response | 'network' | 'hang';
/** The API: each call answers the next of `answers` (the last repeats); what was sent is recorded. */
function api(...answers: Answer[]) {
  const sent: Array<RequestInit & { headers: Record<string, string> }> = [];
  const fetch = (async (_url: string, init: RequestInit) => {
    sent.push(init as never);
    const answer = answers[Math.min(sent.length - 1, answers.length - 1)]!;
    if (answer === 'network') throw new TypeError('fetch failed');
    if (answer === 'hang')
      return new Promise((_, reject) => init.signal!.addEventListener('abort', () => reject(init.signal!.reason)));
    return answer.clone();
  }) as unknown as typeof globalThis.fetch;
  return { fetch, sent };
}

/** A limiter that grants every slot at once and records what it was asked. */
function limiter(onAcquire: () => void = () => {}) {
  const acquired: Array<{ endsAt: number; wait: SlotWait | undefined }> = [];
  const released: number[] = [];
  const backOffs: number[] = [];
  const fake: RateLimiter = {
    windowMs: 1000,
    async acquire(_signal, endsAt, wait) {
      acquired.push({ endsAt, wait });
      onAcquire();
      const slot = acquired.length;
      return async () => void released.push(slot);
    },
    async backOff(waitMs) {
      backOffs.push(waitMs);
      return T0 + waitMs;
    },
  };
  return { limiter: fake, acquired, released, backOffs };
}

function call(fetch: typeof globalThis.fetch, extra: Partial<CallContext> = {}) {
  const waits: number[] = [];
  const invalidated: Array<string | undefined> = [];
  let token = 1;
  const context: CallContext = {
    userAgent: 'AcmeShop Checkout/1.0',
    fetch,
    now: () => T0,
    sleep: async (ms) => void waits.push(ms),
    maxAttempts: 3,
    timeoutMs: 15_000,
    tokenSource: {
      getToken: async () => `at-${token}`,
      invalidate: async (refused?: string) => void (invalidated.push(refused), token++),
    } as unknown as TokenSource,
    ...extra,
  };
  return { call: createCall(context), waits, invalidated, tokens: () => `at-${token}` };
}

const status = (code: number, headers: Record<string, string> = {}) => new Response('{}', { status: code, headers });
const get = (extra: Partial<CallInit> = {}): CallInit => ({ method: 'GET', bearer: () => 'bearer-1', ...extra });

describe('what a call sends', () => {
  it('the bearer, accept, user-agent, no redirects, and the JSON content-type with a body or without', async () => {
    const { fetch, sent } = api(status(200));
    const { call: c } = call(fetch);
    await c('status', URL_, get(), true);
    await c('account create', URL_, get({ method: 'POST', body: '{"a":1}' }), false);
    expect(sent[0]).toMatchObject({
      method: 'GET',
      redirect: 'manual',
      headers: { authorization: 'Bearer bearer-1', accept: 'application/json', 'user-agent': 'AcmeShop Checkout/1.0' },
    });
    // The service lists Content-Type as required on every call (docs/vendor-contract.md#every-call).
    expect(sent[0]!.headers).toHaveProperty('content-type', 'application/json');
    expect(sent[0]).not.toHaveProperty('body');
    expect(sent[1]).toMatchObject({ method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/json' } });
  });

  it('the answer keeps its status, text, headers and body; one with a null-body status has none', async () => {
    const { call: c } = call(
      api(new Response('{"ok":1}', { status: 201, statusText: 'Created', headers: { 'x-id': '7' } })).fetch,
    );
    const answer = await c('status', URL_, get(), true);
    expect([answer.status, answer.statusText, answer.headers.get('x-id')]).toEqual([201, 'Created', '7']);
    expect(await answer.json()).toEqual({ ok: 1 });
    for (const code of [204, 205]) {
      const empty = await call(api(new Response(null, { status: code })).fetch).call('finalize', URL_, get(), true);
      expect(empty.status).toBe(code);
      expect(empty.body).toBeNull();
    }
  });
});

describe('a call under one of the limits', () => {
  it('asks for its slot within the time limit, half of it for the waits, and releases each slot once', async () => {
    const slots = limiter();
    const { call: c } = call(api(status(500), status(200)).fetch);
    await c('status', URL_, get({ limiter: slots.limiter, timeoutMs: 8000 }), true);
    expect(slots.acquired).toEqual([
      { endsAt: T0 + 8000, wait: { waitEndsAt: T0 + 4000, operation: 'status', waitedUntil: undefined } },
      { endsAt: T0 + 8000, wait: { waitEndsAt: T0 + 4000, operation: 'status', waitedUntil: undefined } },
    ]);
    expect(slots.released).toEqual([1, 2]);
  });

  it('a slot is released after a network failure too', async () => {
    const slots = limiter();
    const { call: c } = call(api('network', status(200)).fetch);
    await c('status', URL_, get({ limiter: slots.limiter }), true);
    expect(slots.released).toEqual([1, 2]);
  });

  it('a 429 makes the fleet back off; the next slot is asked for with the backoff this call waited out', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const slots = limiter();
    const { call: c, waits } = call(api(status(429, { 'retry-after': '1' }), status(200)).fetch);
    await c('status', URL_, get({ limiter: slots.limiter, timeoutMs: 15_000 }), true);
    expect(slots.backOffs).toEqual([1000]);
    expect(waits).toEqual([1000]);
    expect(slots.acquired[1]!.wait).toEqual({ waitEndsAt: T0 + 7500, operation: 'status', waitedUntil: T0 + 1000 });
  });

  it('a 429 whose wait would outlast the waits of the call is the answer at once, with its Retry-After', async () => {
    const slots = limiter();
    const { fetch, sent } = api(status(429, { 'retry-after': '5' }));
    const { call: c, waits } = call(fetch);
    await expect(c('status', URL_, get({ limiter: slots.limiter, timeoutMs: 10_000 }), true)).rejects.toMatchObject({
      code: 'rate_limited',
      status: 429,
      retryAfter: 5,
    });
    expect(sent).toHaveLength(1);
    expect(waits).toEqual([]);
    expect(slots.backOffs).toEqual([5000]);
  });

  it('a 429 whose wait ends just before the waits of the call end is waited out and retried', async () => {
    const slots = limiter();
    const { fetch, sent } = api(status(429, { 'retry-after': '4' }), status(200));
    const { call: c, waits } = call(fetch);
    // The waits end at 4001 ms of a 8002 ms limit.
    await c('status', URL_, get({ limiter: slots.limiter, timeoutMs: 8002 }), true);
    expect(sent).toHaveLength(2);
    expect(waits).toEqual([4000]);
  });

  it('the last attempt answered 429 is the answer, without a wait after it', async () => {
    const slots = limiter();
    const { call: c, waits } = call(api(status(429, { 'retry-after': '1' })).fetch, { maxAttempts: 2 });
    await expect(c('status', URL_, get({ limiter: slots.limiter }), true)).rejects.toMatchObject({
      code: 'rate_limited',
    });
    expect(waits).toEqual([1000]);
    expect(slots.backOffs).toEqual([1000, 1000]);
  });
});

describe('a whole call within its time limit', () => {
  it('a slot granted after half the time limit sends nothing: store_unavailable, Retry-After 1, and the slot goes back', async () => {
    let now = T0;
    const slots = limiter(() => {
      now = T0 + 5001;
    });
    const { fetch, sent } = api(status(200));
    const { call: c } = call(fetch, { now: () => now });
    await expect(
      c('account create', URL_, get({ limiter: slots.limiter, timeoutMs: 10_000, wholeCall: true }), false),
    ).rejects.toMatchObject({ code: 'store_unavailable', retryAfter: 1, operation: 'store' });
    expect(sent).toHaveLength(0);
    expect(slots.released).toEqual([1]);
  });

  it('a slot granted at exactly half the time limit still sends; a call that is not whole sends late too', async () => {
    let now = T0;
    const slots = limiter(() => {
      now = T0 + 5000;
    });
    const whole = api(status(200));
    await call(whole.fetch, { now: () => now }).call(
      'account create',
      URL_,
      get({ limiter: slots.limiter, timeoutMs: 10_000, wholeCall: true }),
      false,
    );
    expect(whole.sent).toHaveLength(1);
    const late = limiter(() => {
      now = T0 + 9000;
    });
    now = T0;
    const each = api(status(200));
    await call(each.fetch, { now: () => now }).call(
      'status',
      URL_,
      get({ limiter: late.limiter, timeoutMs: 10_000 }),
      true,
    );
    expect(each.sent).toHaveLength(1);
  });

  it('a whole call with time left gets its answer, however late in the call it comes', async () => {
    let now = T0;
    const later = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      return status(200);
    }) as unknown as typeof globalThis.fetch;
    const slots = limiter(() => {
      now = T0 + 4000;
    });
    const answer = await call(later, { now: () => now }).call(
      'account create',
      URL_,
      get({ limiter: slots.limiter, timeoutMs: 10_000, wholeCall: true }),
      false,
    );
    expect(answer.status).toBe(200);
  });

  it("a limited retry past half the limit is not made: the earlier attempt's failure is the answer, no slot taken", async () => {
    let now = T0;
    const slots = limiter();
    const { fetch, sent } = api(status(503), status(200));
    // The backoff after the 503 passes half of the 10 s limit.
    const { call: c } = call(fetch, { now: () => now, sleep: async () => void (now = T0 + 6000) });
    await expect(
      c('account update', URL_, get({ limiter: slots.limiter, timeoutMs: 10_000, wholeCall: true }), true),
    ).rejects.toMatchObject({ code: 'upstream_error', status: 503, operation: 'account update' });
    expect(sent).toHaveLength(1);
    expect(slots.acquired).toHaveLength(1);
    expect(slots.released).toEqual([1]);
    // At exactly half, as a slot granted then, the retry is still made.
    now = T0;
    const atHalf = api(status(503), status(200));
    const retried = call(atHalf.fetch, { now: () => now, sleep: async () => void (now = T0 + 5000) });
    const answer = await retried.call(
      'account update',
      URL_,
      get({ limiter: slots.limiter, timeoutMs: 10_000, wholeCall: true }),
      true,
    );
    expect([answer.status, atHalf.sent.length]).toEqual([200, 2]);
  });

  it('a retry gets what is left of the whole limit after the backoff, not a limit of its own', async () => {
    let now = T0;
    const { fetch, sent } = api(status(500), 'hang');
    // The backoff takes all but 20 ms of the 5 s (the clock is the test's).
    const { call: c } = call(fetch, { now: () => now, sleep: async () => void (now = T0 + 4980), maxAttempts: 2 });
    // The time limits' timers run on a clock that moves only when the test moves it.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const started = Date.now();
    let endedAt = Infinity;
    const failing = c('status', URL_, get({ timeoutMs: 5000, wholeCall: true }), true);
    failing.then(
      () => (endedAt = Date.now()),
      () => (endedAt = Date.now()),
    );
    // As long as a limit of its own would take.
    await vi.advanceTimersByTimeAsync(5000);
    await expect(failing).rejects.toMatchObject({ code: 'network_error', operation: 'status' });
    expect(sent).toHaveLength(2);
    // 20 ms left of 5 s: it ends long before the 5 s a limit of its own would take.
    expect(endedAt - started).toBeLessThan(2500);
  });
});

describe('retries', () => {
  it('a refused access token is renewed once: the second 401 is the answer', async () => {
    const { fetch, sent } = api(status(401));
    const { call: c, invalidated } = call(fetch);
    const bearer = vi.fn(async () => 'at-x');
    await expect(c('status', URL_, get({ bearer, accessToken: true }), true)).rejects.toMatchObject({
      code: 'request_rejected',
      status: 401,
    });
    expect(invalidated).toEqual(['at-x']);
    expect(sent).toHaveLength(2);
  });

  it('a 401 renewal costs no attempt: three attempts after it', async () => {
    const { fetch, sent } = api(status(401), status(500));
    const { call: c } = call(fetch);
    await expect(c('status', URL_, get({ accessToken: true }), true)).rejects.toMatchObject({ status: 500 });
    expect(sent).toHaveLength(4);
  });

  it('a network failure of a call that may not be repeated is the answer at once, without a wait', async () => {
    const { fetch, sent } = api('network');
    const { call: c, waits } = call(fetch);
    await expect(c('account create', URL_, get(), false)).rejects.toMatchObject({
      code: 'network_error',
      operation: 'account create',
    });
    expect(sent).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('no wait after the last attempt', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const { call: c, waits } = call(api(status(502)).fetch, { maxAttempts: 2 });
    await expect(c('status', URL_, get(), true)).rejects.toMatchObject({ code: 'upstream_error', status: 502 });
    expect(waits).toEqual([250]);
  });

  it('a 5xx of a call that may not be repeated is upstream_error at once; a 429 is retried', async () => {
    const five = api(status(503, { 'retry-after': '3' }));
    await expect(call(five.fetch).call('account create', URL_, get(), false)).rejects.toMatchObject({
      code: 'upstream_error',
      status: 503,
      retryAfter: 3,
    });
    expect(five.sent).toHaveLength(1);
    const busy = api(status(429), status(200));
    await call(busy.fetch).call('account create', URL_, get(), false);
    expect(busy.sent).toHaveLength(2);
  });

  it('a failure of the bearer (the token source) is passed on as it is, and the slot goes back', async () => {
    const failure = new DeviceRiskError('token_rejected', 'no');
    const slots = limiter();
    const { fetch, sent } = api(status(200));
    await expect(
      call(fetch).call('status', URL_, get({ bearer: () => Promise.reject(failure), limiter: slots.limiter }), true),
    ).rejects.toBe(failure);
    expect(sent).toHaveLength(0);
    expect(slots.released).toEqual([1]);
  });

  it('a 5xx of a limited call is retried without making the fleet back off', async () => {
    const slots = limiter();
    await call(api(status(503), status(200)).fetch).call('status', URL_, get({ limiter: slots.limiter }), true);
    expect(slots.backOffs).toEqual([]);
  });

  it('an error carries a Retry-After only when the service sent one', async () => {
    const busy = await call(api(status(429)).fetch, { maxAttempts: 1 })
      .call('status', URL_, get(), true)
      .catch((e: unknown) => e);
    expect(busy).toMatchObject({ code: 'rate_limited' });
    expect(busy).not.toHaveProperty('retryAfter');
    const down = await call(api(status(503)).fetch)
      .call('account create', URL_, get(), false)
      .catch((e: unknown) => e);
    expect(down).toMatchObject({ code: 'upstream_error' });
    expect(down).not.toHaveProperty('retryAfter');
  });
});

describe('timers', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a call leaves no timer behind, answered or failed', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    await call(api(status(200)).fetch).call('status', URL_, get(), true);
    await call(api('network').fetch, { maxAttempts: 1 })
      .call('status', URL_, get(), true)
      .catch(() => {});
    expect(vi.getTimerCount()).toBe(0);
  });
});
