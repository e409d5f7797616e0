/**
 * The service's per-tenant request limits (docs/vendor-contract.md#the-service), kept for a
 * whole fleet through the store its instances share: slots that bound how many requests of
 * one kind reach the service in any window, and a backoff that a 429 seen by any instance
 * makes every instance wait out. One mechanism for token requests, account requests and
 * retrievals.
 */
import { DeviceRiskError, ERR_RATE_LIMITED } from '../errors.js';
import { apiMessages } from '../messages.js';
import { sleep as timerSleep, type Now, type Sleep } from '../time/clock.js';
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
 * Where a slot's window counts from. `send`: the window runs from the request's send (and
 * the slot is held at least until its answer): exactly `perSecond` a second on average, for a
 * service that takes bursts of at least twice `burst` (the account limit: a token bucket).
 * `answer`: the window runs from the answer, 10 % longer than a second of the service's (a
 * clock a little apart never sees one request too many), for a service that counts a plain
 * `perSecond` in any second with no burst over it (tokens, retrievals): about 9 % below it.
 */
export type WindowFrom = 'send' | 'answer';

/** The window of `answer` slots is 10 % longer than the time their requests take at `perSecond`. */
const MARGINED_SECOND_MS = 1100;

export interface RateLimiterOptions extends RateLimit {
  /** Default `answer`. */
  windowFrom?: WindowFrom;
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
  /** How long one slot stays held from its request's send (`send`) or its answer (`answer`), in ms. */
  readonly windowMs: number;
}

/** The slots and the window of a limit: `burst` slots, each held for the time `burst` requests take at `perSecond`. */
export function slotsOf(limit: RateLimit, from: WindowFrom = 'answer'): { slots: number; windowMs: number } {
  if (!(limit.perSecond > 0)) throw new RangeError(apiMessages.perSecondNotPositive);
  const slots = Math.max(1, Math.floor(limit.burst ?? Math.ceil(limit.perSecond)));
  const secondMs = from === 'send' ? 1000 : MARGINED_SECOND_MS;
  return { slots, windowMs: Math.ceil((slots * secondMs) / limit.perSecond) };
}

/** A waiter that found every slot held polls at least this often while a slot's window has passed but its request is still out. */
const OVERDUE_POLL_MS = 50;

/** A slot's value: its owner's mark and when its window ends (epoch ms, the taker's clock). */
const slotValue = (mark: string, freeAt: number) => `${mark}@${freeAt}`;
const freeAtOf = (value: string | undefined) => Number(value?.slice(value.lastIndexOf('@') + 1));

/**
 * A limiter on `options.store`: `burst` slots, each held while its request is out (until the
 * call's end at the latest) and for its window.
 *
 * `send`: the window (the time `burst` requests take at `perSecond`) runs from the send, and
 * a slot is freed at its answer once the window has passed: on average exactly `perSecond`
 * requests start a second, for everything sharing the store. The next request on a slot
 * goes a window after the previous one and never before its answer, so after the service
 * saw it: however late requests arrive, no span of the service's holds more than twice
 * `burst` requests over `perSecond` a second (the service takes bursts of 10 account
 * requests, the kit sends bursts of 5 by default).
 *
 * `answer`: the window, 10 % longer, runs from the answer: the next request on the slot
 * reaches the service more than a window after it saw the previous one, however late that
 * one arrived, so no second at the service holds more than `burst`.
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const { store, keyOf, name, operation, now, pause } = options;
  const fromSend = options.windowFrom === 'send';
  const { slots, windowMs } = slotsOf(options, options.windowFrom);
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

  /**
   * One free slot taken (its key), or when all are held the earliest time (epoch ms) one of
   * their windows ends, as their takers wrote it.
   */
  async function takeSlot(value: string, holdMs: number): Promise<{ key?: string; freeAt: number }> {
    let freeAt = Infinity;
    for (let i = 0; i < slots; i++) {
      const key = await keyOf(`${name}-rate:${i}`);
      if (await fromStore(store.setIfAbsent(key, value, holdMs), 'rate limit')) return { key, freeAt };
      const held = freeAtOf(await fromStore(store.get(key), 'rate limit'));
      // A slot that expired between the two reads, or one written without its end: free soon.
      freeAt = Math.min(freeAt, Number.isFinite(held) ? held : now());
    }
    return { freeAt };
  }

  /** How long a waiter sleeps before it tries again: until the earliest window ends, at most a slot's share of the window. */
  const sleepMs = (freeAt: number) => {
    const untilFree = freeAt - now();
    // The window passed and the slot is still held: its request is out (or clocks a little apart).
    if (!(untilFree > 0)) return Math.min(pollMs, OVERDUE_POLL_MS);
    return Math.max(1, Math.min(pollMs, untilFree));
  };

  return {
    windowMs,
    async acquire(signal, endsAt, wait: SlotWait = {}) {
      await sharedBackoff(signal, wait.waitEndsAt ?? endsAt, wait);
      const slotWaitEndsAt = wait.waitEndsAt ?? Infinity;
      const mark = ownerMark();
      for (;;) {
        const sentAt = now();
        // While the request is out the slot is held until the call's end at the latest; at
        // its answer, until the window from the send ends (`send`) or for the window (`answer`).
        const outMs = Math.max(0, Math.min(endsAt - sentAt, 24 * 3600_000));
        const holdMs = fromSend ? Math.max(windowMs, outMs) : outMs + windowMs;
        const value = slotValue(mark, sentAt + (fromSend ? windowMs : holdMs));
        const { key, freeAt } = await takeSlot(value, holdMs);
        if (key) {
          // A release that fails leaves the slot held for the longer time: never shorter.
          return () => {
            const leftMs = fromSend ? Math.ceil(sentAt + windowMs - now()) : windowMs;
            const released =
              leftMs > 0
                ? store.compareAndSet(key, value, fromSend ? value : slotValue(mark, now() + windowMs), leftMs)
                : store.compareAndDelete(key, value);
            return released.then(
              () => undefined,
              () => undefined,
            );
          };
        }
        const waitMs = sleepMs(freeAt);
        if (now() + waitMs > slotWaitEndsAt) {
          // `send`: when the earliest window ends; `answer`: a window (the answers are not in).
          const retryMs = fromSend ? Math.max(freeAt - now(), windowMs / slots) : windowMs;
          throw refused(retryMs, apiMessages.noSlot, wait.operation);
        }
        await poll(waitMs, signal);
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
