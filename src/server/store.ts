/**
 * Where the server kit keeps state that must outlive a request: callback records today,
 * and what a fleet of instances shares. Values are strings (JSON), so that any key-value
 * store can hold them. A store must guarantee:
 * - `setIfAbsent` is atomic: of two concurrent calls with one key, exactly one gets true;
 * - a value lives at least `ttlMs`, and is gone after it (a little later is fine);
 * - `get` after a completed `set` sees the value (read your writes).
 */
export interface Store {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /** Sets the value only when the key holds none; true when this call set it. */
  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  delete(key: string): Promise<void>;
}

/** The default: this process's memory. One instance only; a fleet needs a shared store. */
export function createMemoryStore(now: () => number = Date.now): Store {
  const entries = new Map<string, { value: string; until: number }>();
  const live = (key: string) => {
    const entry = entries.get(key);
    if (entry && entry.until <= now()) entries.delete(key);
    return entries.get(key);
  };
  return {
    get: async (key) => live(key)?.value,
    async set(key, value, ttlMs) {
      entries.set(key, { value, until: now() + ttlMs });
    },
    async setIfAbsent(key, value, ttlMs) {
      if (live(key)) return false;
      entries.set(key, { value, until: now() + ttlMs });
      return true;
    },
    async delete(key) {
      entries.delete(key);
    },
  };
}
