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
import { DeviceRiskError, ERR_STORE_UNAVAILABLE } from './errors.js';

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

export interface MemoryStoreOptions {
  /** Entries kept at most; the oldest written go first. Default 100000. */
  maxEntries?: number;
  now?: () => number;
}

/** The default: this process's memory. One instance only; a fleet needs a shared store. */
export function createMemoryStore(options: MemoryStoreOptions = {}): Store {
  const now = options.now ?? Date.now;
  const maxEntries = options.maxEntries ?? 100_000;
  const entries = new Map<string, { value: string; until: number }>();
  const live = (key: string) => {
    const entry = entries.get(key);
    if (entry && entry.until <= now()) entries.delete(key);
    return entries.get(key);
  };
  const write = (key: string, value: string, ttlMs: number) => {
    // Re-inserted at the end: the Map's order is the order of writes, oldest first.
    entries.delete(key);
    entries.set(key, { value, until: now() + ttlMs });
    for (const oldest of entries.keys()) {
      if (entries.size <= maxEntries) break;
      entries.delete(oldest);
    }
  };
  return {
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
}

/** A key's part made safe to join with ':' (client ids and Idempotency-Keys are free text). */
export const keyPart = (value: string): string => encodeURIComponent(value);

/** A value no other writer can produce: the owner mark of a claim or a lease. */
export function ownerMark(): string {
  return crypto.randomUUID();
}

/**
 * Runs a store operation; a failure becomes `store_unavailable` with a Retry-After, so that
 * callers answer "try again" (503) rather than act as if nothing were stored.
 */
export async function fromStore<T>(operation: Promise<T>, what: string): Promise<T> {
  try {
    return await operation;
  } catch (cause) {
    throw new DeviceRiskError(ERR_STORE_UNAVAILABLE, `the shared store failed (${what}); retry shortly`, { retryAfter: 1, operation: 'store', cause });
  }
}
