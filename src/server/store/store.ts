/**
 * Where the server kit keeps state that must outlive a request or be shared by a fleet:
 * the access token, the token rate limit and backoff, Idempotency-Key records, and
 * callback records. Values are strings (JSON), so that any key-value store can hold them.
 *
 * A store must guarantee (the README's "Running on several instances" repeats this):
 * - `setIfAbsent`, `compareAndSet` and `compareAndDelete` are atomic: of two concurrent
 *   calls on one key, at most one succeeds;
 * - a value lives at least `ttlMs`, and is gone after it (a little later is fine);
 * - `get` after a completed write sees it (read your writes, on every instance);
 * - a failure rejects: a store that cannot answer must never answer "absent".
 */
import { checkOptions } from '../options-table.js';
import { MEMORY_STORE_OPTIONS } from './settings.js';
import { systemNow } from '../time/clock.js';
import { settleWithin } from '../time/time-limit.js';
import {
  DeviceRiskError,
  ERR_INVALID_CONFIGURATION,
  ERR_STORE_FULL,
  ERR_STORE_UNAVAILABLE,
  isDeviceRiskError,
  isRedisFull,
  isStoreAway,
} from '../errors.js';
import { storeMessages } from '../messages.js';

export interface Store {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /** Sets the value only when the key holds none; true when this call set it. */
  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  /** Replaces the value only when the key holds exactly `expected`; true when this call replaced it. */
  compareAndSet(key: string, expected: string, value: string, ttlMs: number): Promise<boolean>;
  /** Deletes the key only when it holds exactly `expected`; true when this call deleted it. */
  compareAndDelete(key: string, expected: string): Promise<boolean>;
  delete(key: string): Promise<void>;
}

/** A store of this process's own file (sqlite/store.ts): closed with its owner. */
export type ClosableStore = Store & { close(): void };

export interface MemoryStoreOptions {
  /**
   * Entries kept at most. A claim, a lease or a record is never dropped before its time:
   * when the store is full, a write of a new key is refused (`store_full`, answered 503 with
   * Retry-After) until entries expire. Default 100000.
   */
  maxEntries?: number;
  now?: () => number;
}

/** The stores createMemoryStore made: this process's memory, shared with no other instance. */
const memoryStores = new WeakSet<Store>();

/** True for a store createMemoryStore made (held in this process only); false for any other, shared or not. */
export const isMemoryStore = (store: Store): boolean => memoryStores.has(store);

/** The default: this process's memory. One instance only; a fleet needs a shared store. */
export function createMemoryStore(options: MemoryStoreOptions = {}): Store {
  const now = options.now ?? systemNow;
  checkOptions(options, MEMORY_STORE_OPTIONS);
  const maxEntries = options.maxEntries ?? MEMORY_STORE_OPTIONS.maxEntries.default;
  const entries = new Map<string, { value: string; until: number }>();
  /** No entry expires before this: a full store is swept again only once something can have expired. */
  let nextExpiry = Infinity;
  const live = (key: string) => {
    const entry = entries.get(key);
    if (entry && entry.until <= now()) entries.delete(key);
    return entries.get(key);
  };
  /** Room for one more key, made by dropping expired entries only; false when none has expired. */
  const room = () => {
    if (entries.size < maxEntries) return true;
    const at = now();
    // Stryker disable next-line ConditionalExpression: a sweep before anything can have expired finds nothing; only its cost differs
    if (at < nextExpiry) return false;
    nextExpiry = Infinity;
    for (const [key, entry] of entries) {
      if (entry.until <= at) entries.delete(key);
      else nextExpiry = Math.min(nextExpiry, entry.until);
    }
    return entries.size < maxEntries;
  };
  const write = (key: string, value: string, ttlMs: number) => {
    if (!live(key) && !room()) {
      const seconds = Math.min(60, Math.max(1, Math.ceil((nextExpiry - now()) / 1000)));
      throw new DeviceRiskError(ERR_STORE_FULL, storeMessages.memoryFull(maxEntries), {
        retryAfter: seconds,
        operation: 'store',
      });
    }
    const until = now() + ttlMs;
    nextExpiry = Math.min(nextExpiry, until);
    entries.set(key, { value, until });
  };
  const store: Store = {
    get: async (key) => live(key)?.value,
    async set(key, value, ttlMs) {
      write(key, value, ttlMs);
    },
    async setIfAbsent(key, value, ttlMs) {
      if (live(key)) return false;
      write(key, value, ttlMs);
      return true;
    },
    async compareAndSet(key, expected, value, ttlMs) {
      if (live(key)?.value !== expected) return false;
      write(key, value, ttlMs);
      return true;
    },
    async compareAndDelete(key, expected) {
      if (live(key)?.value !== expected) return false;
      entries.delete(key);
      return true;
    },
    async delete(key) {
      entries.delete(key);
    },
  };
  memoryStores.add(store);
  return store;
}

/** How long a store call may take by default before it counts as failed, in ms. */
export const STORE_TIMEOUT_MS = 3000;

/**
 * The store behind a time limit: a call that has not settled within `timeoutMs` rejects
 * (`store_unavailable`), so that a Redis that hangs (paused, stopped by SIGSTOP, a network
 * that drops packets) is answered as one that is down, never by holding every request open.
 * The late call may still complete; each write the kit makes is one it may repeat.
 */
export function withTimeLimit(store: Store, timeoutMs = STORE_TIMEOUT_MS): Store {
  if (!(timeoutMs > 0)) throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, storeMessages.timeoutOption);
  const limited =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> =>
      settleWithin(
        () => call(...args),
        timeoutMs,
        () =>
          new DeviceRiskError(ERR_STORE_UNAVAILABLE, storeMessages.noAnswer(timeoutMs), {
            retryAfter: 1,
            operation: 'store',
          }),
      );
  return {
    get: limited((key) => store.get(key)),
    set: limited((key, value, ttlMs) => store.set(key, value, ttlMs)),
    setIfAbsent: limited((key, value, ttlMs) => store.setIfAbsent(key, value, ttlMs)),
    compareAndSet: limited((key, expected, value, ttlMs) => store.compareAndSet(key, expected, value, ttlMs)),
    compareAndDelete: limited((key, expected) => store.compareAndDelete(key, expected)),
    delete: limited((key) => store.delete(key)),
  };
}

/**
 * A store whose every call waits for `ready`: one opened later, such as the default queue's
 * file (the handler's keys beside its checkouts), or this process's memory where there is none.
 */
export function storeWhenReady(ready: Promise<Store>): Store {
  return {
    get: async (key) => (await ready).get(key),
    set: async (key, value, ttlMs) => (await ready).set(key, value, ttlMs),
    setIfAbsent: async (key, value, ttlMs) => (await ready).setIfAbsent(key, value, ttlMs),
    compareAndSet: async (key, expected, value, ttlMs) => (await ready).compareAndSet(key, expected, value, ttlMs),
    compareAndDelete: async (key, expected) => (await ready).compareAndDelete(key, expected),
    delete: async (key) => (await ready).delete(key),
  };
}

/** Seconds a browser waits before it posts again when Redis is full (maxmemory): room comes as keys expire. */
export const REDIS_FULL_RETRY_AFTER_S = 5;

/** A Redis at maxmemory that refused `what`: `store_full`, answered 503 with Retry-After, never blamed on the service. */
export const redisFull = (what: string, cause?: unknown): DeviceRiskError =>
  new DeviceRiskError(ERR_STORE_FULL, storeMessages.redisFull(what), {
    retryAfter: REDIS_FULL_RETRY_AFTER_S,
    operation: 'store',
    cause,
  });

/** A key's part made safe to join with ':' (client ids and Idempotency-Keys are free text). */
export const keyPart = (value: string): string => encodeURIComponent(value);

/**
 * Runs a store operation; a failure becomes `store_unavailable` (or `store_full` for a Redis at
 * its maxmemory) with a Retry-After, so that callers answer "try again" (503) rather than act
 * as if nothing were stored.
 */
export async function fromStore<T>(operation: Promise<T>, what: string): Promise<T> {
  try {
    return await operation;
  } catch (cause) {
    // Already said in the store's terms (full, or no answer in time): kept, with its Retry-After.
    // A store unfit for its guarantees (an evicting Redis) is a configuration to fix, not a retry.
    if (isStoreAway(cause) || (isDeviceRiskError(cause) && cause.code === ERR_INVALID_CONFIGURATION)) throw cause;
    // A Redis at maxmemory (a store on Redis other than createRedisStore lets its refusal through).
    if (isRedisFull(cause)) throw redisFull(what, cause);
    throw new DeviceRiskError(ERR_STORE_UNAVAILABLE, storeMessages.failed(what), {
      retryAfter: 1,
      operation: 'store',
      cause,
    });
  }
}
