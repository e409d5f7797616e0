// Stores around another for the tests of what a piece of code keeps: one that notes every write
// it passes on (under which key, for how long: no blackbox, no intent it should not keep), and one
// that refuses the compare-and-set writes a test names (a store away for those).
import type { Store } from '../../src/server/index.js';

export interface StoreWrite {
  op: 'set' | 'setIfAbsent' | 'compareAndSet';
  key: string;
  value: string;
  ttlMs: number;
}

/** `inner` with its writes (set, setIfAbsent, compareAndSet) noted in `writes`, in their order. */
export function recordingStore(inner: Store): { store: Store; writes: StoreWrite[] } {
  const writes: StoreWrite[] = [];
  const store: Store = {
    ...inner,
    set: async (key, value, ttlMs) => {
      writes.push({ op: 'set', key, value, ttlMs });
      return inner.set(key, value, ttlMs);
    },
    setIfAbsent: async (key, value, ttlMs) => {
      writes.push({ op: 'setIfAbsent', key, value, ttlMs });
      return inner.setIfAbsent(key, value, ttlMs);
    },
    compareAndSet: async (key, expected, value, ttlMs) => {
      writes.push({ op: 'compareAndSet', key, value, ttlMs });
      return inner.compareAndSet(key, expected, value, ttlMs);
    },
  };
  return { store, writes };
}

/** `inner` whose compareAndSet rejects ("store away") the writes `refuse` names; the rest pass. */
export function refusingStore(inner: Store, refuse: (key: string, value: string) => boolean): Store {
  return {
    ...inner,
    compareAndSet: async (key, expected, value, ttlMs) =>
      refuse(key, value) ? Promise.reject(new Error('store away')) : inner.compareAndSet(key, expected, value, ttlMs),
  };
}
