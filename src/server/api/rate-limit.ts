/**
 * The service's per-tenant request limits (docs/vendor-contract.md#the-service), kept for a
 * whole fleet through the store its instances share: slots that bound how many requests of
 * one kind reach the service in any window, and a backoff that a 429 seen by any instance
 * makes every instance wait out. One mechanism for token requests, account requests and
 * retrievals.
 */
import { DeviceRiskError, ERR_RATE_LIMITED } from '../errors.js';
import { apiMessages } from '../messages.js';
import { sleep as timerSleep, type Now, type Sleep } from '../clock.js';
import { fromStore, type Store } from '../store/store.js';
import { ownerMark } from '../store/lease.js';

/** How many requests of one kind the service takes from a tenant. */
export interface RateLimit {
  /** Requests a second, on average. */
  perSecond: number;
  /**
   * Requests sent at once before the average applies. Default `perSecond` rounded up: a full
   * second's worth, and no more.
   */
  burst?: number;
}

/**
 * A second of the service's, with a margin: a slot is held 10 % longer than the window it
 * stands for, so that clocks a little apart (the service's and ours) never see one request
 * too many.
 */
const MARGINED_SECOND_MS = 1100;

export interface RateLimiterOptions extends RateLimit {
  store: Store;
  /** The store key of one of this limiter's entries, in its owner's namespace. */
  keyOf: (name: string) => Promise<string>;
  /** The kind of request, the prefix of the keys (`token`: `token-rate:0`, `token-backoff`). */
  name: string;
  /** The operation errors name. */
  operation: string;
  /** The longest backoff waited for, in ms; a longer one fails at once with `rate_limited`. */
  maxBackoffMs: number;
  now: Now;
  /** How the shared backoff is waited out (tests pass one that does not wait). */
  pause: Sleep;
  /** How a wait for a slot polls. Default a timer. */
  poll?: Sleep;
}

export interface SlotWait {
  /**
   * The waits (the backoff, then for a slot) end by then (epoch ms): `rate_limited` when they
   * would not. Default: a backoff must end before `endsAt`, a slot is waited for until the
   * signal aborts.
   */
  waitEndsAt?: number;
  /** A backoff ending by then (epoch ms) was waited out already by this caller: it is not waited again. */
  waitedUntil?: number;
  /** The operation a refusal names. Default the limiter's. */
  operation?: string;
}

export interface RateLimiter {
  /**
   * Waits out the fleet's backoff, then for a slot. Rejects with `rate_limited` (and a
   * Retry-After) when the backoff would outlast `maxBackoffMs` or the wait's end, or when no
   * slot was free by then; with the signal's reason when it aborts. `endsAt` is when the
   * request ends at the latest: its slot is held until then while it is out. Resolves to
   * what to call once the answer (or the failure) is in.
   */
  acquire(signal: AbortSignal, endsAt: number, wait?: SlotWait): Promise<() => Promise<void>>;
  /**
   * A 429: every instance sharing the store waits `waitMs` before its next request of this
   * kind. Resolves to the epoch ms the backoff ends at.
   */
  backOff(waitMs: number): Promise<number>;
  /** How long one slot stays held after its answer, in ms. */
  readonly windowMs: number;
}

/** The slots and the window of a limit: `burst` slots, each held for the time `burst` requests take at `perSecond`. */
export function slotsOf(limit: RateLimit): { slots: number; windowMs: number } {
  if (!(limit.perSecond > 0)) throw new RangeError(apiMessages.perSecondNotPositive);
  const slots = Math.max(1, Math.floor(limit.burst ?? Math.ceil(limit.perSecond)));
  return { slots, windowMs: Math.ceil((slots * MARGINED_SECOND_MS) / limit.perSecond) };
}

/**
 * A limiter on `options.store`. A slot is held while its request is out and for `windowMs`
 * after the answer: the service saw the request before it answered, so the next request on
 * the slot reaches it more than a window later, however late the first one arrived. No
 * window at the service holds more than `burst` requests (and none longer than a second
 * more than `perSecond`), for everything sharing the store, on a slow network or a busy
 * machine.
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const { store, keyOf, name, operation, now, pause } = options;
  const { slots, windowMs } = slotsOf(options);
  const poll = options.poll ?? timerSleep;
  const pollMs = Math.max(10, windowMs / slots);

  const refused = (waitMs: number, why: string, what = operation) =>
    new DeviceRiskError(ERR_RATE_LIMITED, apiMessages.rateLimited(what, why), {
      status: 429,
      operation: what,
      retryAfter: Math.max(1, Math.ceil(waitMs / 1000)),
    });

  /** A 429 seen by any instance: every instance waits it out, or fails at once when it would outlast the call. */
  async function sharedBackoff(signal: AbortSignal, endsAt: number, wait: SlotWait): Promise<void> {
    const { waitedUntil = -Infinity } = wait;
    const until = Number(await fromStore(store.get(await keyOf(`${name}-backoff`)), 'backoff read'));
    const waitMs = until - now();
    if (!(waitMs > 0) || until <= waitedUntil) return;
    if (waitMs > options.maxBackoffMs || now() + waitMs >= endsAt)
      throw refused(waitMs, apiMessages.limitSeen, wait.operation);
    await pause(waitMs, signal);
  }

  /** One free slot taken, or undefined when all are held. */
  async function takeSlot(mark: string, holdMs: number): Promise<string | undefined> {
    for (let i = 0; i < slots; i++) {
      const key = await keyOf(`${name}-rate:${i}`);
      if (await fromStore(store.setIfAbsent(key, mark, holdMs), 'rate limit')) return key;
    }
    return undefined;
  }

  return {
    windowMs,
    async acquire(signal, endsAt, wait: SlotWait = {}) {
      await sharedBackoff(signal, wait.waitEndsAt ?? endsAt, wait);
      const slotWaitEndsAt = wait.waitEndsAt ?? Infinity;
      const mark = ownerMark();
      // While the request is out the slot is held until the call's end at the latest (then for the window).
      const holdMs = Math.max(0, Math.min(endsAt - now(), 24 * 3600_000)) + windowMs;
      for (;;) {
        const key = await takeSlot(mark, holdMs);
        if (key) {
          // A refresh that fails leaves the slot held for the longer time: never shorter.
          return () =>
            store.compareAndSet(key, mark, mark, windowMs).then(
              () => undefined,
              () => undefined,
            );
        }
        if (now() + pollMs > slotWaitEndsAt) throw refused(windowMs, apiMessages.noSlot, wait.operation);
        await poll(pollMs, signal);
      }
    },
    async backOff(waitMs) {
      const until = now() + waitMs;
      if (waitMs > 0)
        await fromStore(store.set(await keyOf(`${name}-backoff`), String(until), waitMs), 'backoff write');
      return until;
    },
  };
}
