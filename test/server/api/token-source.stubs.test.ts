// The token source's boundaries on a stub token service: lifetimes, configuration, the
// shared backoff, the retry waits, aborts, the lock lease and the in-memory token.
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createMemoryStore,
  createTokenSource,
  type Store,
  type TokenSourceOptions,
} from '../../../src/server/index.js';
import { storeNamespace } from '../../../src/server/api/seal.js';
import { tokenLifetimeSeconds } from '../../../src/server/api/token-source.js';
import { untilAborted } from '../../support/until-aborted.js';

const UA = 'AcmeShop Checkout/1.0';
const T0 = 1_800_000_000_000;
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

let port = 19_000;
/** A token service stub answering from a script (the last answer repeats); 'network' is a dropped connection. */
function tokenService(...answers: Array<Response | 'network' | 'hang'>) {
  const calls: RequestInit[] = [];
  const fetch = (async (_url: string, init: RequestInit) => {
    calls.push(init);
    const answer = answers[Math.min(calls.length - 1, answers.length - 1)]!;
    if (answer === 'network') throw new TypeError('fetch failed');
    if (answer === 'hang') return untilAborted(init.signal);
    return answer.clone();
  }) as unknown as typeof globalThis.fetch;
  return { calls, fetch };
}
const granted = (token = 'at-1', expiresIn: unknown = 3600) =>
  Response.json({ access_token: token, token_type: 'Bearer', expires_in: expiresIn });
const status = (code: number, headers: Record<string, string> = {}) => new Response('{}', { status: code, headers });

/** A source on its own token URL and store, on a frozen clock, whose waits are recorded instead of slept. */
function source(fetch: typeof globalThis.fetch, extra: Partial<TokenSourceOptions> = {}) {
  const waits: number[] = [];
  const tokenUrl = `http://127.0.0.1:${port++}/oauth2/token`;
  const store = extra.store ?? createMemoryStore();
  const tokens = createTokenSource({
    clientId: 'client id',
    clientSecret: 'secret',
    tokenUrl,
    userAgent: UA,
    fetch,
    store,
    now: () => T0,
    sleep: async (ms) => void waits.push(ms),
    ...extra,
  });
  const backoffKey = storeNamespace('client id', extra.clientSecret ?? 'secret', tokenUrl).then(
    (namespace) => `${namespace}:token-backoff`,
  );
  return { tokens, waits, store, backoffKey };
}

/** A store that counts its reads. */
function countingStore(): Store & { reads: number } {
  const inner = createMemoryStore();
  const counted = Object.assign(Object.create(null) as Store & { reads: number }, inner, { reads: 0 });
  counted.get = (key) => {
    counted.reads++;
    return inner.get(key);
  };
  return counted;
}

/** A token service whose requests hang until aborted; `asked` resolves once the first one is out. */
function hangingService() {
  const service = tokenService('hang');
  let sent!: () => void;
  const asked = new Promise<void>((resolve) => (sent = resolve));
  const fetch = ((url: string, init: RequestInit) => {
    const answer = service.fetch(url, init);
    sent();
    return answer;
  }) as unknown as typeof globalThis.fetch;
  return { calls: service.calls, fetch, asked };
}

/**
 * `inner` (a memory store by default), counting the claims of the token lock it refused: each
 * is a source that found another holding the lock. `refusedOnce` resolves at the first.
 */
function lockWatched(inner: Store = createMemoryStore()) {
  let refusal!: () => void;
  const watched = {
    refused: 0,
    refusedOnce: new Promise<void>((resolve) => (refusal = resolve)),
    store: {
      ...inner,
      setIfAbsent: async (key, value, ttlMs) => {
        const taken = await inner.setIfAbsent(key, value, ttlMs);
        if (key.endsWith(':token-lock') && !taken) {
          watched.refused++;
          refusal();
        }
        return taken;
      },
    } as Store,
  };
  return watched;
}

describe('tokenLifetimeSeconds', () => {
  it.each([
    ['missing', undefined, 3600],
    ['null', null, 3600],
    ['a string of digits', '3600', 3600],
    ['the minimum', 10, 10],
    ['in range', 1234, 1234],
    ['above the maximum', 10 ** 9, 86_400],
    ['zero', 0, undefined],
    ['negative', -5, undefined],
    ['below the minimum', 9, undefined],
    ['NaN', Number.NaN, undefined],
    ['a string of digits below the minimum', '5', undefined],
    ['a string that is no whole number', '3600s', undefined],
    ['a string of digits with a space before', ' 3600', undefined],
    ['a string of digits with a space after', '3600 ', undefined],
    ['an object', {}, undefined],
    ['a list holding a number', [3600], undefined],
  ])('%s', (_, expiresIn, seconds) => {
    expect(tokenLifetimeSeconds(expiresIn)).toBe(seconds);
  });

  it.each([0, -1, '5', 'soon'])(
    'a token answer whose expires_in is %j fails with invalid_response, keeps nothing, never names the token',
    async (expiresIn) => {
      const service = tokenService(granted('at-short', expiresIn), granted('at-2'));
      const { tokens } = source(service.fetch);
      const error = (await tokens.getToken().catch((e: unknown) => e)) as Error & { code: string };
      expect(error).toMatchObject({ code: 'invalid_response', operation: 'token', status: 200 });
      expect(error.message).toContain('expires_in');
      expect(error.message).not.toContain('at-short');
      // Nothing was kept: the next call asks again.
      expect(await tokens.getToken()).toBe('at-2');
      expect(service.calls).toHaveLength(2);
    },
  );
});

describe('configuration', () => {
  const base = { clientId: 'id', clientSecret: 'secret', tokenUrl: 'https://auth.example/oauth2/token', userAgent: UA };
  it.each([
    ['no client id', { clientId: '' }],
    ['no client secret', { clientSecret: '' }],
    ['no user agent', { userAgent: undefined }],
    ['a blank user agent', { userAgent: '   ' }],
    ['no region and no token URL', { tokenUrl: undefined }],
  ])('%s is invalid_configuration', (_, change) => {
    expect(() => createTokenSource({ ...base, ...change } as TokenSourceOptions)).toThrow(
      expect.objectContaining({ code: 'invalid_configuration' }),
    );
  });

  it('a plain-http token URL off loopback is insecure_url', () => {
    expect(() => createTokenSource({ ...base, tokenUrl: 'http://auth.example/token' })).toThrow(
      expect.objectContaining({ code: 'insecure_url' }),
    );
  });
});

describe('the token kept in memory', () => {
  it('a fresh token is served without reading the store again', async () => {
    const store = countingStore();
    const { tokens } = source(tokenService(granted()).fetch, { store });
    await tokens.getToken();
    const reads = store.reads;
    expect(await tokens.getToken()).toBe('at-1');
    expect(store.reads).toBe(reads);
  });

  it('a token fetched but refused by a full store is used for its lifetime, not fetched again', async () => {
    const inner = createMemoryStore();
    const full: Store = {
      ...inner,
      set: async (key, value, ttlMs) => {
        // As Redis with noeviction refuses a write once it is full (the lock, smaller, still fit).
        if (key.endsWith(':token')) throw new Error("OOM command not allowed when used memory > 'maxmemory'");
        return inner.set(key, value, ttlMs);
      },
    };
    const service = tokenService(granted('at-1'), granted('at-2'));
    const { tokens } = source(service.fetch, { store: full });
    for (let i = 0; i < 5; i++) expect(await tokens.getToken()).toBe('at-1');
    expect(service.calls).toHaveLength(1);
  });

  it('invalidating another token keeps this one in memory; invalidating this one forgets it', async () => {
    const store = countingStore();
    const service = tokenService(granted('at-1'), granted('at-2'));
    const { tokens } = source(service.fetch, { store });
    await tokens.getToken();
    await tokens.invalidate('at-old');
    const reads = store.reads;
    expect(await tokens.getToken()).toBe('at-1');
    expect(store.reads).toBe(reads);
    await tokens.invalidate('at-1');
    expect(await tokens.getToken()).toBe('at-2');
  });

  it('a read racing the invalidation of a refused token never brings it back', async () => {
    const inner = createMemoryStore();
    // The invalidation's delete of the stored token waits for the test: a read runs after the
    // memory copy is forgotten and before the stored one is deleted, every time.
    let deleteAsked!: () => void;
    const deleting = new Promise<void>((resolve) => (deleteAsked = resolve));
    let letDelete!: () => void;
    const deleteLet = new Promise<void>((resolve) => (letDelete = resolve));
    let held = false;
    const readsWhileHeld: Array<string | undefined> = [];
    const store: Store = {
      ...inner,
      get: async (key) => {
        const value = await inner.get(key);
        if (held && key.endsWith(':token')) readsWhileHeld.push(value);
        return value;
      },
      compareAndDelete: async (key, expected) => {
        if (key.endsWith(':token')) {
          held = true;
          deleteAsked();
          await deleteLet;
          held = false;
        }
        return inner.compareAndDelete(key, expected);
      },
    };
    const { tokens } = source(tokenService(granted('at-1'), granted('at-2')).fetch, { store, storeTimeoutMs: 60_000 });
    expect(await tokens.getToken()).toBe('at-1');
    const refused = tokens.invalidate('at-1');
    await deleting;
    // Another call's bearer, or the gateway's readiness check, meanwhile.
    const meanwhile = tokens.getToken();
    // Its read found the refused token still stored.
    await vi.waitFor(() => expect(readsWhileHeld).not.toHaveLength(0));
    expect(readsWhileHeld[0]).toBeDefined();
    letDelete();
    await refused;
    // The refused call's one retry.
    expect(await tokens.getToken()).toBe('at-2');
    expect(await meanwhile).not.toBe('at-1');
  });
});

describe('the store a source keeps its token in', () => {
  it('without one given, each source has its own: nothing of one source is found by another', async () => {
    // Hidden state would be a store of the module's: two sources would share a token unasked.
    const service = tokenService(granted('at-1'), granted('at-2'));
    const options = {
      clientId: 'client id',
      clientSecret: 'secret',
      tokenUrl: `http://127.0.0.1:${port++}/oauth2/token`,
      userAgent: UA,
      fetch: service.fetch,
      now: () => T0,
    };
    expect(await createTokenSource(options).getToken()).toBe('at-1');
    expect(await createTokenSource(options).getToken()).toBe('at-2');
    expect(service.calls).toHaveLength(2);
  });

  it('given one store, two sources share the token in it', async () => {
    const service = tokenService(granted('at-1'), granted('at-2'));
    const first = source(service.fetch);
    const second = createTokenSource({
      clientId: 'client id',
      clientSecret: 'secret',
      tokenUrl: first.tokens.tokenUrl,
      userAgent: UA,
      fetch: service.fetch,
      store: first.store,
      now: () => T0,
    });
    expect(await first.tokens.getToken()).toBe('at-1');
    expect(await second.getToken()).toBe('at-1');
    expect(service.calls).toHaveLength(1);
  });
});

describe('retries and their waits', () => {
  it('dropped connections are retried after 0–250·2^attempt ms (full jitter), with the last error carrying its cause', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const service = tokenService('network');
    const { tokens, waits } = source(service.fetch, { maxAttempts: 4 });
    const error = await tokens.getToken().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'network_error', operation: 'token', cause: expect.any(TypeError) });
    expect(waits).toEqual([250, 500, 1000]);
    expect(service.calls).toHaveLength(4);
  });

  it('a 500 is retried; a 499 is refused at once', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(1);
    const retried = source(tokenService(status(500), granted()).fetch);
    expect(await retried.tokens.getToken()).toBe('at-1');
    expect(retried.waits).toEqual([500]);
    const refused = tokenService(status(499));
    await expect(source(refused.fetch).tokens.getToken()).rejects.toMatchObject({
      code: 'token_rejected',
      status: 499,
      operation: 'token',
    });
    expect(refused.calls).toHaveLength(1);
  });

  it('the last 5xx stands as upstream_error with its status', async () => {
    const { tokens } = source(tokenService(status(502)).fetch, { maxAttempts: 2 });
    await expect(tokens.getToken()).rejects.toMatchObject({ code: 'upstream_error', status: 502, operation: 'token' });
  });

  it('a 429 without Retry-After backs off with jitter, and tells the fleet through the store', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(1);
    const { tokens, waits, store, backoffKey: backoff } = source(tokenService(status(429), granted()).fetch);
    const backoffKey = await backoff;
    const seen: Array<string | undefined> = [];
    const set = store.set.bind(store);
    store.set = async (key, value, ttl) => {
      if (key === backoffKey) seen.push(value);
      return set(key, value, ttl);
    };
    expect(await tokens.getToken()).toBe('at-1');
    expect(waits).toEqual([500]);
    expect(seen).toEqual([String(T0 + 500)]);
  });

  it('a 429 with Retry-After: 0 is tried again at once, and nothing is written for the fleet', async () => {
    const {
      tokens,
      waits,
      store,
      backoffKey: backoff,
    } = source(tokenService(status(429, { 'retry-after': '0' }), granted()).fetch);
    const backoffKey = await backoff;
    expect(await tokens.getToken()).toBe('at-1');
    expect(waits).toEqual([]);
    expect(await store.get(backoffKey)).toBeUndefined();
  });

  it('a 429 on the last attempt carries its Retry-After', async () => {
    const { tokens, waits } = source(tokenService(status(429, { 'retry-after': '3' })).fetch, { maxAttempts: 1 });
    await expect(tokens.getToken()).rejects.toMatchObject({ code: 'rate_limited', status: 429, retryAfter: 3 });
    expect(waits).toEqual([]);
  });

  it('a Retry-After of exactly maxRetryAfterSeconds is waited for; one second more fails at once', async () => {
    const waited = source(tokenService(status(429, { 'retry-after': '5' }), granted()).fetch, {
      maxRetryAfterSeconds: 5,
      timeoutMs: 60_000,
    });
    expect(await waited.tokens.getToken()).toBe('at-1');
    expect(waited.waits).toEqual([5000]);
    const refused = tokenService(status(429, { 'retry-after': '6' }), granted());
    const failed = source(refused.fetch, { maxRetryAfterSeconds: 5, timeoutMs: 60_000 });
    await expect(failed.tokens.getToken()).rejects.toMatchObject({ code: 'rate_limited', retryAfter: 6 });
    expect(refused.calls).toHaveLength(1);
  });

  it('a wait that would end exactly at timeoutMs is not started; one that ends a millisecond before is', async () => {
    const refused = tokenService(status(429, { 'retry-after': '1' }), granted());
    await expect(source(refused.fetch, { timeoutMs: 1000 }).tokens.getToken()).rejects.toMatchObject({
      code: 'rate_limited',
    });
    expect(refused.calls).toHaveLength(1);
    const waited = source(tokenService(status(429, { 'retry-after': '1' }), granted()).fetch, { timeoutMs: 1001 });
    expect(await waited.tokens.getToken()).toBe('at-1');
  });
});

describe('the rate-limit slot', () => {
  /** A source whose store and token service share a hand-moved clock; the service takes `answerMs` to answer. */
  function slowService(answerMs: number, answer: () => Response | 'network') {
    let clock = T0;
    const store = createMemoryStore({ now: () => clock });
    const held: Array<string | undefined> = [];
    const rateKey = storeNamespace('client id', 'secret', 'http://127.0.0.1:1/oauth2/token').then(
      (n) => `${n}:token-rate:0`,
    );
    const fetch = (async () => {
      // While the request is out, far longer than a second: its slot stays taken.
      clock += answerMs;
      held.push(await store.get(await rateKey));
      const result = answer();
      if (result === 'network') throw new TypeError('fetch failed');
      return result;
    }) as unknown as typeof globalThis.fetch;
    const tokens = createTokenSource({
      clientId: 'client id',
      clientSecret: 'secret',
      tokenUrl: 'http://127.0.0.1:1/oauth2/token',
      userAgent: UA,
      fetch,
      store,
      now: () => clock,
      sleep: async () => {},
      maxAttempts: 1,
      timeoutMs: 10_000,
    });
    const at = async (ms: number) => {
      clock = ms;
      return store.get(await rateKey);
    };
    return { tokens, held, at, answeredAt: () => clock };
  }

  it.each([
    ['an answer', () => granted()],
    ['a network error', () => 'network' as const],
  ])('is held while the request is out and for the window after %s, not after the request left', async (_, answer) => {
    // Nearly the call's whole time limit (10 s): the slot outlasts any request the limit lets run.
    const { tokens, held, at, answeredAt } = slowService(9_500, answer);
    await tokens.getToken().catch(() => undefined);
    expect(held).toEqual([expect.any(String)]);
    const answered = answeredAt();
    // The service saw the request at the latest when it answered: a second from then, not from the send.
    expect(await at(answered + 1_000)).toBeDefined();
    expect(await at(answered + 1_200)).toBeUndefined();
  });
});

describe('the backoff another instance wrote', () => {
  it.each([
    ['none', undefined, []],
    ['one that has ended', T0, []],
    ['one 700 ms ahead', T0 + 700, [700]],
    ['one of exactly maxRetryAfterSeconds', T0 + 30_000, [30_000]],
  ])('%s: waits %j, then asks', async (_, until, expected) => {
    const service = tokenService(granted());
    const { tokens, waits, store, backoffKey } = source(service.fetch, { timeoutMs: 60_000 });
    if (until !== undefined) await store.set(await backoffKey, String(until), 60_000);
    expect(await tokens.getToken()).toBe('at-1');
    expect(waits).toEqual(expected);
    expect(service.calls).toHaveLength(1);
  });

  it.each([
    ['longer than maxRetryAfterSeconds', T0 + 30_001, 60_000, 31],
    ['ending exactly at timeoutMs', T0 + 1000, 1000, 1],
  ])('one %s fails at once with rate_limited, asking nothing', async (_, until, timeoutMs, retryAfter) => {
    const service = tokenService(granted());
    const { tokens, store, backoffKey } = source(service.fetch, { timeoutMs });
    await store.set(await backoffKey, String(until), 60_000);
    await expect(tokens.getToken()).rejects.toMatchObject({
      code: 'rate_limited',
      status: 429,
      operation: 'token',
      retryAfter,
    });
    expect(service.calls).toHaveLength(0);
  });
});

describe('aborts and the lock', () => {
  it("the caller's abort rejects with the caller's reason, while the request is in flight", async () => {
    const service = hangingService();
    const { tokens } = source(service.fetch);
    const controller = new AbortController();
    const reason = new Error('customer left');
    const pending = tokens.getToken({ signal: controller.signal });
    await service.asked;
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });

  /** A token service whose one answer waits for `answer()`, and fails with the fetch's abort as a real one does. */
  function heldService() {
    const signals: AbortSignal[] = [];
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const fetch = (async (_url: string, init: RequestInit) => {
      signals.push(init.signal!);
      await Promise.race([answered, untilAborted(init.signal)]);
      return granted(`at-${signals.length}`);
    }) as unknown as typeof globalThis.fetch;
    return { fetch, signals, answer };
  }

  it("one caller's abort fails that caller alone: the others sharing its request get the token", async () => {
    const service = heldService();
    const { tokens } = source(service.fetch);
    const leaving = new AbortController();
    const staying = new AbortController();
    const reason = new Error('customer left');
    const first = tokens.getToken({ signal: leaving.signal });
    const second = tokens.getToken({ signal: staying.signal });
    const third = tokens.getToken();
    await vi.waitFor(() => expect(service.signals).toHaveLength(1));
    leaving.abort(reason);
    await expect(first).rejects.toBe(reason);
    // The shared request goes on: not aborted by the caller that left.
    expect(service.signals[0]!.aborted).toBe(false);
    service.answer();
    expect(await Promise.all([second, third])).toEqual(['at-1', 'at-1']);
    expect(service.signals).toHaveLength(1);
    // Each wait took its listener off the caller's signal when it ended.
    expect(getEventListeners(leaving.signal, 'abort')).toEqual([]);
    expect(getEventListeners(staying.signal, 'abort')).toEqual([]);
  });

  it('the shared request is given up once every caller waiting for it has aborted; the next caller starts anew', async () => {
    const service = heldService();
    const { tokens } = source(service.fetch);
    const callers = [new AbortController(), new AbortController()];
    const pending = callers.map((caller) => tokens.getToken({ signal: caller.signal }));
    await vi.waitFor(() => expect(service.signals).toHaveLength(1));
    callers[0]!.abort(new Error('first left'));
    await expect(pending[0]).rejects.toThrow('first left');
    expect(service.signals[0]!.aborted).toBe(false);
    callers[1]!.abort(new Error('second left'));
    await expect(pending[1]).rejects.toThrow('second left');
    expect(service.signals[0]!.aborted).toBe(true);
    const next = tokens.getToken();
    await vi.waitFor(() => expect(service.signals).toHaveLength(2));
    service.answer();
    await expect(next).resolves.toBe('at-2');
  });

  it('a caller whose signal has already aborted rejects with its reason and sends no request', async () => {
    const service = heldService();
    const { tokens } = source(service.fetch);
    const reason = new Error('already gone');
    await expect(tokens.getToken({ signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(service.signals).toEqual([]);
  });

  it("the caller's abort rejects with its reason while waiting for another instance's lock too", async () => {
    const lock = lockWatched();
    const holding = hangingService();
    const holder = source(holding.fetch, { store: lock.store, timeoutMs: 60_000 });
    const asking = tokenService(granted());
    const waiter = createTokenSource({
      clientId: 'client id',
      clientSecret: 'secret',
      tokenUrl: `http://127.0.0.1:${port - 1}/oauth2/token`,
      userAgent: UA,
      fetch: asking.fetch,
      store: lock.store,
    });
    const controller = new AbortController();
    const reason = new Error('gone');
    const release = new AbortController();
    const held = holder.tokens.getToken({ signal: release.signal }).catch(() => {});
    // The holder holds the lock, its request out.
    await holding.asked;
    const pending = waiter.getToken({ signal: controller.signal });
    // The waiter finds the lock held and looks again: it waits for it (or, not waiting, asks).
    await vi.waitFor(() => expect(lock.refused >= 2 || asking.calls.length > 0).toBe(true));
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(asking.calls).toHaveLength(0);
    release.abort();
    await held;
  });

  it("a source that waited for another instance's lock requests within what is left of its timeoutMs", async () => {
    // One store and token URL (one fleet), on timers and a clock that move only when the test
    // moves them: the time limit, the waits for the lock and the holder's leaving run on them.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const lock = lockWatched();
    const fleet = {
      store: lock.store,
      tokenUrl: `http://127.0.0.1:${port++}/oauth2/token`,
      timeoutMs: 400,
      now: Date.now,
      sleep: undefined,
    };
    const make = (fetch: typeof globalThis.fetch) => source(fetch, fleet).tokens;
    // The holder's request hangs until its caller leaves (at 300 ms), which gives the lock back.
    const holding = hangingService();
    const release = new AbortController();
    const held = make(holding.fetch)
      .getToken({ signal: release.signal })
      .catch(() => {});
    await holding.asked;
    const waiter = hangingService();
    const started = Date.now();
    let settledAt: number | undefined;
    const waiting = make(waiter.fetch).getToken();
    void waiting.catch(() => {}).then(() => (settledAt = Date.now()));
    // The waiter found the lock held: it looks again every 25 ms.
    await lock.refusedOnce;
    await vi.advanceTimersByTimeAsync(300);
    expect(waiter.calls).toHaveLength(0);
    expect(settledAt).toBeUndefined();
    release.abort();
    await held;
    // It takes the lock at its next look and asks, within what is left of its 400 ms.
    await vi.advanceTimersByTimeAsync(99);
    expect(waiter.calls).toHaveLength(1);
    expect(settledAt).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    // 400 ms in all, the wait included; before, the request had 400 ms of its own after the wait.
    expect(settledAt).toBe(started + 400);
    await expect(waiting).rejects.toMatchObject({ code: 'network_error' });
  });

  it('a slow request keeps its lock by renewing it: a second source on the store waits for its token instead of asking', async () => {
    // The store's clock moves only when the test moves it: the lease ends by it, not by how busy the machine is.
    let storeTime = 1_000_000;
    const memory = createMemoryStore({ now: () => storeTime });
    const lock = lockWatched(memory);
    const renewals: number[] = [];
    const store: Store = {
      ...lock.store,
      compareAndSet: (k, e, v, t) => {
        if (k.endsWith(':token-lock')) renewals.push(storeTime);
        return memory.compareAndSet(k, e, v, t);
      },
    };
    const tokenUrl = `http://127.0.0.1:${port++}/oauth2/token`;
    let calls = 0;
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const slow = (async () => {
      calls++;
      await answered;
      return granted(`at-${calls}`);
    }) as unknown as typeof fetch;
    const make = () =>
      createTokenSource({
        clientId: 'client id',
        clientSecret: 'secret',
        tokenUrl,
        userAgent: UA,
        fetch: slow,
        store,
        lockLeaseMs: 90,
      });
    const first = make().getToken();
    await vi.waitFor(() => expect(calls).toBe(1)); // the lock is held (until +90) and the request is out
    storeTime += 60;
    await vi.waitFor(() => expect(renewals.filter((at) => at === storeTime).length).toBeGreaterThan(0)); // renewed: until +150
    storeTime += 60; // past the first lease, inside the renewed one
    const second = make().getToken();
    // The second source looks at the lock a few times, refused it; or it takes it and asks.
    await vi.waitFor(() => expect(lock.refused >= 3 || calls > 1).toBe(true));
    answer();
    expect(await Promise.all([first, second])).toEqual(['at-1', 'at-1']);
    expect(calls).toBe(1);
  });
});

describe('sealing', () => {
  it('values are sealed as v1.<iv>.<AES-256-GCM> under HKDF-SHA-256(client secret, salt client id, the documented info): instances of any version open them', async () => {
    const { tokens } = source(tokenService(granted()).fetch);
    const sealed = await tokens.seal('transaction-token');
    const [version, iv, data] = sealed.split('.') as [string, string, string];
    expect(version).toBe('v1');
    const bytes = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
    const secret = await crypto.subtle.importKey('raw', new TextEncoder().encode('secret'), 'HKDF', false, [
      'deriveKey',
    ]);
    const key = await crypto.subtle.deriveKey(
      {
        name: 'HKDF',
        hash: 'SHA-256',
        salt: new TextEncoder().encode('client id'),
        info: new TextEncoder().encode('blackbox-capture sealed store values v1'),
      },
      secret,
      { name: 'AES-GCM', length: 256 },
      false,
      ['decrypt'],
    );
    const opened = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: bytes(iv) }, key, bytes(data));
    expect(new TextDecoder().decode(opened)).toBe('transaction-token');
    expect(bytes(iv)).toHaveLength(12);
  });
});
