// The service's limits kept through a store (src/server/api/rate-limit.ts), on a fake store
// and a hand-moved clock: the slots, their windows, the shared backoff and the refusals.
import { describe, expect, it } from 'vitest';
import { createRateLimiter, slotsOf, type RateLimiterOptions } from '../../../src/server/api/rate-limit.js';
import { createMemoryStore, type Store } from '../../../src/server/index.js';

const T0 = Date.UTC(2026, 10, 26);

function limiter(extra: Partial<RateLimiterOptions> = {}) {
  let clock = T0;
  const store = extra.store ?? createMemoryStore({ now: () => clock });
  const pauses: number[] = [];
  const polls: number[] = [];
  const options: RateLimiterOptions = {
    store,
    keyOf: async (name) => `ns:${name}`,
    name: 'account',
    operation: 'account',
    perSecond: 1,
    burst: 3,
    maxBackoffMs: 30_000,
    now: () => clock,
    pause: async (ms) => void pauses.push(ms),
    // A poll moves the clock: the wait for a slot runs on it.
    poll: async (ms) => {
      polls.push(ms);
      clock += ms;
    },
    ...extra,
  };
  return {
    limits: createRateLimiter(options),
    store,
    pauses,
    polls,
    at: (ms: number) => void (clock = ms),
    now: () => clock,
  };
}
const signal = new AbortController().signal;

/** Takes the one slot for a call still out at T0 + 59_999 and checks the slot is held then, whichever window it keeps. */
async function slotHeldWhileOut(limited: ReturnType<typeof limiter>) {
  const answered = await limited.limits.acquire(signal, T0 + 60_000);
  limited.at(T0 + 59_999);
  expect(await limited.store.get('ns:account-rate:0')).toBeDefined();
  return { ...limited, answered };
}

describe('slotsOf', () => {
  it.each([
    [{ perSecond: 10 }, 10, 1100],
    [{ perSecond: 15 }, 15, 1100],
    [{ perSecond: 1, burst: 5 }, 5, 5500],
    [{ perSecond: 1 }, 1, 1100],
    [{ perSecond: 0.5 }, 1, 2200],
    [{ perSecond: 2, burst: 0.4 }, 1, 550],
  ])('%j: %d slots, each held %d ms after its answer', (limit, slots, windowMs) => {
    expect(slotsOf(limit)).toEqual({ slots, windowMs });
  });

  it.each([0, -1, NaN])('perSecond %d is refused', (perSecond) => {
    expect(() => slotsOf({ perSecond })).toThrow(RangeError);
  });
});

describe('createRateLimiter', () => {
  it('gives the burst at once, then each slot again a window after its answer', async () => {
    const { limits, polls, now } = limiter();
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await limits.acquire(signal, T0 + 10_000));
    expect(polls).toEqual([]);
    for (const answered of answers) await answered();
    // The fourth waits for the first slot's window (3 s for 3 at 1 a second, and the margin).
    await limits.acquire(signal, now() + 10_000);
    expect(now()).toBeGreaterThanOrEqual(T0 + 3300);
    expect(now()).toBeLessThan(T0 + 3300 + 1100);
    expect(polls.every((ms) => ms === 1100)).toBe(true);
  });

  it('holds a slot while its request is out until the call ends, then for the window from the answer', async () => {
    const { store, at, answered } = await slotHeldWhileOut(limiter({ burst: 1 }));
    await answered();
    at(T0 + 59_999 + 1099);
    expect(await store.get('ns:account-rate:0')).toBeDefined();
    at(T0 + 59_999 + 1100);
    expect(await store.get('ns:account-rate:0')).toBeUndefined();
  });

  it('fails with rate_limited and a Retry-After when no slot is free by the end of the wait', async () => {
    const { limits, now } = limiter({ burst: 1 });
    await limits.acquire(signal, T0 + 60_000);
    await expect(
      limits.acquire(signal, T0 + 60_000, { waitEndsAt: T0 + 5000, operation: 'account create' }),
    ).rejects.toMatchObject({ code: 'rate_limited', status: 429, operation: 'account create', retryAfter: 2 });
    expect(now()).toBeLessThanOrEqual(T0 + 5000);
  });

  it('waits for a slot without end by default, until the signal aborts', async () => {
    const controller = new AbortController();
    const { limits, polls } = limiter({
      burst: 1,
      poll: async (ms) => {
        polls.push(ms);
        if (polls.length === 50) controller.abort(new Error('stop'));
        if (controller.signal.aborted) throw controller.signal.reason;
      },
    });
    await limits.acquire(signal, T0 + 60_000);
    await expect(limits.acquire(controller.signal, T0 + 60_000)).rejects.toThrow('stop');
    expect(polls).toHaveLength(50);
  });

  it('a 429 makes every limiter on the store wait the backoff out; another kind does not', async () => {
    const first = limiter();
    const other = limiter({ store: first.store, now: first.now, pause: async (ms) => void first.pauses.push(-ms) });
    const tokens = limiter({ store: first.store, name: 'token', now: first.now });
    expect(await first.limits.backOff(2000)).toBe(T0 + 2000);
    expect(await first.store.get('ns:account-backoff')).toBe(String(T0 + 2000));
    await other.limits.acquire(signal, T0 + 60_000);
    await first.limits.acquire(signal, T0 + 60_000);
    expect(first.pauses).toEqual([-2000, 2000]);
    await tokens.limits.acquire(signal, T0 + 60_000);
    expect(tokens.pauses).toEqual([]);
  });

  it('a backoff this caller waited out already is not waited again', async () => {
    const { limits, pauses } = limiter();
    const until = await limits.backOff(2000);
    await limits.acquire(signal, T0 + 60_000, { waitedUntil: until });
    expect(pauses).toEqual([]);
    await limits.acquire(signal, T0 + 60_000, { waitedUntil: until - 1 });
    expect(pauses).toEqual([2000]);
  });

  it('a backoff of 0 or less writes nothing', async () => {
    const { limits, store } = limiter();
    await limits.backOff(0);
    await limits.backOff(-5);
    expect(await store.get('ns:account-backoff')).toBeUndefined();
  });

  it.each([
    ['ending exactly at the end of the wait', 5000, { waitEndsAt: T0 + 5000 }, 60_000, 5],
    ['ending exactly at the end of the call', 5000, {}, 5000, 5],
    ['longer than maxBackoffMs', 30_001, {}, 60_000, 31],
  ])('a backoff %s fails at once with rate_limited, taking no slot', async (_, ms, wait, callMs, retryAfter) => {
    const { limits, store, pauses } = limiter();
    await limits.backOff(ms);
    await expect(limits.acquire(signal, T0 + callMs, { ...wait, operation: 'status' })).rejects.toMatchObject({
      code: 'rate_limited',
      status: 429,
      operation: 'status',
      retryAfter,
    });
    expect(pauses).toEqual([]);
    expect(await store.get('ns:account-rate:0')).toBeUndefined();
  });

  it('a backoff that fits is waited, exactly', async () => {
    const { limits, pauses } = limiter();
    await limits.backOff(30_000);
    await limits.acquire(signal, T0 + 30_001);
    expect(pauses).toEqual([30_000]);
  });

  it("the refusal names the limiter's operation by default", async () => {
    const { limits } = limiter({ burst: 1, operation: 'retrieval' });
    await limits.acquire(signal, T0 + 60_000);
    await expect(limits.acquire(signal, T0 + 60_000, { waitEndsAt: T0 })).rejects.toMatchObject({
      operation: 'retrieval',
      retryAfter: 2,
    });
  });

  it('a store that fails is store_unavailable; a release that fails is ignored (the slot stays held longer)', async () => {
    const broken: Store = {
      ...createMemoryStore(),
      setIfAbsent: async () => {
        throw new Error('down');
      },
    };
    await expect(limiter({ store: broken }).limits.acquire(signal, T0 + 1000)).rejects.toMatchObject({
      code: 'store_unavailable',
    });
    const memory = createMemoryStore({ now: () => T0 });
    const flaky: Store = {
      ...memory,
      compareAndSet: async () => {
        throw new Error('down');
      },
    };
    const answered = await limiter({ store: flaky }).limits.acquire(signal, T0 + 1000);
    await expect(answered()).resolves.toBeUndefined();
  });

  it('polls at a window divided among the slots, at least 10 ms', async () => {
    const fifteen = limiter({ perSecond: 15, burst: undefined });
    for (let i = 0; i < 15; i++) await fifteen.limits.acquire(signal, T0);
    await fifteen.limits.acquire(signal, T0);
    expect(fifteen.polls[0]).toBeCloseTo(1100 / 15);
    const many = limiter({ perSecond: 200, burst: undefined });
    for (let i = 0; i < 200; i++) await many.limits.acquire(signal, T0);
    await many.limits.acquire(signal, T0);
    expect(many.polls[0]).toBe(10);
  });
});

describe('a window counted from the send (the account limit)', () => {
  const fromSend = (extra: Partial<RateLimiterOptions> = {}) => limiter({ windowFrom: 'send', ...extra });

  it.each([
    [{ perSecond: 1, burst: 5 }, 5, 5000],
    [{ perSecond: 1 }, 1, 1000],
    [{ perSecond: 0.5 }, 1, 2000],
    [{ perSecond: 3 }, 3, 1000],
    [{ perSecond: 2, burst: 0.4 }, 1, 500],
  ])('%j: %d slots, each held %d ms from its send, no margin', (limit, slots, windowMs) => {
    expect(slotsOf(limit, 'send')).toEqual({ slots, windowMs });
  });

  it('starts N requests in N / perSecond seconds, each answered 300 ms after its send, never more than burst + perSecond × T in any T', async () => {
    const { limits, now, at } = fromSend({ burst: 5 });
    const starts: number[] = [];
    for (let i = 0; i < 60; i++) {
      const answered = await limits.acquire(signal, now() + 60_000);
      starts.push(now());
      at(now() + 300);
      await answered();
    }
    // The 6th goes 5 s after the 1st, the 11th 10 s after, …: the 60th at 55 s (and its 300 ms
    // place in the burst). A window counted from the answer, or with a margin, is past 58 s.
    expect(starts.at(-1)! - T0).toBeLessThanOrEqual(56_200);
    expect(starts.at(-1)! - T0).toBeGreaterThanOrEqual(55_000);
    for (const [i, start] of starts.entries()) {
      for (const T of [1000, 5000, 20_000])
        expect(starts.slice(i).filter((s) => s < start + T).length).toBeLessThanOrEqual(
          5 + (T - 5000 > 0 ? (T - 5000) / 1000 : 0),
        );
    }
  });

  it('gives the burst at once, then each slot again a window after its send', async () => {
    const { limits, polls, now } = fromSend();
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await limits.acquire(signal, T0 + 10_000));
    for (const answered of answers) await answered();
    await limits.acquire(signal, now() + 10_000);
    expect(now()).toBe(T0 + 3000);
    expect(polls).toEqual([1000, 1000, 1000]);
  });

  it('holds a slot while its request is out until the call ends; at its answer, until its window from the send ends', async () => {
    const { limits, store, at, answered: late } = await slotHeldWhileOut(fromSend({ burst: 1 }));
    await late();
    expect(await store.get('ns:account-rate:0')).toBeUndefined();
    at(T0 + 100_000);
    const quick = await limits.acquire(signal, T0 + 160_000);
    at(T0 + 100_200);
    await quick();
    at(T0 + 100_999);
    expect(await store.get('ns:account-rate:0')).toBeDefined();
    at(T0 + 101_000);
    expect(await store.get('ns:account-rate:0')).toBeUndefined();
  });

  it('a waiter sleeps until the earliest window ends; past it, while the request is out, it polls every 50 ms', async () => {
    let answered: (() => Promise<void>) | undefined;
    const polls: number[] = [];
    const { limits, now, at } = fromSend({
      burst: 1,
      perSecond: 0.1,
      poll: async (ms) => {
        polls.push(ms);
        at(now() + ms);
        // The request is answered 200 ms after its window ended.
        if (now() >= T0 + 10_200) await answered?.();
      },
    });
    answered = await limits.acquire(signal, T0 + 60_000);
    await limits.acquire(signal, T0 + 60_000);
    expect(now()).toBe(T0 + 10_200);
    expect(polls).toEqual([10_000, 50, 50, 50, 50]);
  });

  it('refuses with the Retry-After of the earliest window', async () => {
    const { limits } = fromSend({ burst: 2, perSecond: 1 });
    for (let i = 0; i < 2; i++) await (await limits.acquire(signal, T0 + 60_000))();
    await expect(limits.acquire(signal, T0 + 60_000, { waitEndsAt: T0 + 500 })).rejects.toMatchObject({
      code: 'rate_limited',
      retryAfter: 2,
    });
  });
});
