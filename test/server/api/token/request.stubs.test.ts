// One client-credentials request (src/server/api/token/request.ts) on a stub token service: a
// long Retry-After is the answer at once, waits never outlast the time limit, a null-body
// answer is no token, and the failure a time limit caused is said as one.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RateLimiter } from '../../../../src/server/api/rate-limit.js';
import type { TokenCache } from '../../../../src/server/api/token/cache.js';
import {
  createTokenRequest,
  failureWithin,
  type TokenRequestContext,
} from '../../../../src/server/api/token/request.js';
import { DeviceRiskError } from '../../../../src/server/errors.js';

const T0 = 1_800_000_000_000;
const TOKEN = () => Response.json({ access_token: 'at-1', token_type: 'Bearer', expires_in: 3600 });

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

function request(answers: Array<Response | 'network'>, changes: Partial<TokenRequestContext> = {}) {
  let n = 0;
  const waits: number[] = [];
  const backOffs: number[] = [];
  const limiter = {
    windowMs: 100,
    acquire: async () => async () => {},
    backOff: async (ms: number) => {
      backOffs.push(ms);
      return T0 + ms;
    },
  } as RateLimiter;
  const context: TokenRequestContext = {
    tokenUrl: 'https://auth.example/oauth2/token',
    authorization: 'Basic x',
    userAgent: 'AcmeShop Checkout/1.0',
    fetch: (async () => {
      const answer = answers[Math.min(n++, answers.length - 1)]!;
      if (answer === 'network') throw new TypeError('fetch failed');
      return answer.clone();
    }) as unknown as typeof fetch,
    now: () => T0,
    pause: async (ms) => void waits.push(ms),
    maxAttempts: 3,
    timeoutMs: 10_000,
    maxRetryAfterMs: 30_000,
    limiter,
    cache: { save: async () => {} } as unknown as TokenCache,
    ...changes,
  };
  return { get: createTokenRequest(context), waits, backOffs, sent: () => n };
}
const status = (code: number, headers: Record<string, string> = {}) => new Response('{}', { status: code, headers });

describe('the fetch it is given', () => {
  it("is called as a plain function, as workerd's fetch must be (a `this` other than the global is refused there)", async () => {
    const { get } = request([TOKEN()], {
      fetch: function (this: unknown) {
        if (this !== undefined && this !== globalThis) throw new TypeError('Illegal invocation');
        return Promise.resolve(TOKEN());
      } as unknown as typeof fetch,
    });
    await expect(get()).resolves.toBe('at-1');
  });
});

describe('failureWithin', () => {
  const timedOut = (cause: unknown) => new DeviceRiskError('network_error', 'no token in time', { cause });

  it("the caller's abort reason stands as it is, even past the time limit", () => {
    const caller = new AbortController();
    const reason = new Error('left');
    caller.abort(reason);
    expect(failureWithin(reason, { expired: true }, timedOut, caller.signal)).toBe(reason);
  });

  it('past the time limit, a failure that is not the kit’s is the time limit; the kit’s stands', () => {
    const abort = new DOMException('aborted', 'AbortError');
    expect(failureWithin(abort, { expired: true }, timedOut)).toMatchObject({ code: 'network_error', cause: abort });
    const kit = new DeviceRiskError('rate_limited', 'busy');
    expect(failureWithin(kit, { expired: true }, timedOut)).toBe(kit);
    expect(failureWithin(abort, { expired: false }, timedOut)).toBe(abort);
  });

  it('another error, while a caller signal is aborted, is not taken for the abort', () => {
    const error = new Error('other');
    expect(failureWithin(error, { expired: true }, timedOut, AbortSignal.abort(new Error('left')))).toMatchObject({
      code: 'network_error',
      cause: error,
    });
  });
});

describe('createTokenRequest', () => {
  it('a Retry-After over maxRetryAfterMs is the answer at once, after the fleet is told', async () => {
    const r = request([status(429, { 'retry-after': '31' }), TOKEN()], { timeoutMs: 60_000 });
    await expect(r.get()).rejects.toMatchObject({ code: 'rate_limited', retryAfter: 31, operation: 'token' });
    expect(r.sent()).toBe(1);
    expect(r.backOffs).toEqual([31_000]);
  });

  it('a Retry-After of exactly maxRetryAfterMs is waited out (by the fleet backoff) and tried again', async () => {
    const r = request([status(429, { 'retry-after': '5' }), TOKEN()], { maxRetryAfterMs: 5000 });
    await expect(r.get()).resolves.toBe('at-1');
    expect(r.sent()).toBe(2);
  });

  it('a 429 whose wait would end at the time limit is the answer; one ending a millisecond before is tried again', async () => {
    const at = request([status(429, { 'retry-after': '5' }), TOKEN()], { timeoutMs: 5000 });
    await expect(at.get()).rejects.toMatchObject({ code: 'rate_limited' });
    expect(at.sent()).toBe(1);
    const before = request([status(429, { 'retry-after': '5' }), TOKEN()], { timeoutMs: 5001 });
    await expect(before.get()).resolves.toBe('at-1');
  });

  it('the last 429 is the answer, without Retry-After when none came', async () => {
    const r = request([status(429)], { maxAttempts: 2 });
    const error = await r.get().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'rate_limited', status: 429 });
    expect(error).not.toHaveProperty('retryAfter');
    expect(r.sent()).toBe(2);
  });

  it('a 5xx backoff that would end at the time limit is not started; one ending before it is', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(1);
    const at = request([status(500), TOKEN()], { timeoutMs: 500 });
    await expect(at.get()).rejects.toMatchObject({ code: 'upstream_error', status: 500 });
    expect(at.waits).toEqual([]);
    const before = request([status(500), TOKEN()], { timeoutMs: 501 });
    await expect(before.get()).resolves.toBe('at-1');
    expect(before.waits).toEqual([500]);
  });

  it('a 204 from the token service is no token: invalid_response, not retried as a network failure', async () => {
    const r = request([new Response(null, { status: 204 }), TOKEN()]);
    await expect(r.get()).rejects.toMatchObject({ code: 'invalid_response', operation: 'token' });
    expect(r.sent()).toBe(1);
  });

  it('a 503 with Retry-After waits what the service asked for, as the service calls do; at most the longest wait', async () => {
    const asked = request([status(503, { 'retry-after': '5' }), TOKEN()], { timeoutMs: 60_000 });
    await expect(asked.get()).resolves.toBe('at-1');
    expect(asked.waits).toEqual([5000]);
    const capped = request([status(503, { 'retry-after': '50' }), TOKEN()], {
      timeoutMs: 60_000,
      maxRetryAfterMs: 5000,
    });
    await expect(capped.get()).resolves.toBe('at-1');
    expect(capped.waits).toEqual([5000]);
  });

  it('leaves no timer behind', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    await request([TOKEN()]).get();
    await request([status(400)])
      .get()
      .catch(() => {});
    expect(vi.getTimerCount()).toBe(0);
  });
});
