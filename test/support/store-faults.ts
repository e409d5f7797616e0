// A store that fails one read, as a shared store away for a moment does.
import { DeviceRiskError } from '../../src/server/errors.js';
import { createMemoryStore, type Store } from '../../src/server/store/store.js';

/** A memory store whose `nth` read fails with `store_unavailable` (asking `retryAfter` s); every other read answers. */
export function storeAwayAtRead(nth: number, retryAfter: number): Store {
  const memory = createMemoryStore();
  let reads = 0;
  return {
    ...memory,
    get: async (key: string) => {
      if (++reads === nth) throw new DeviceRiskError('store_unavailable', 'store away', { retryAfter });
      return memory.get(key);
    },
  };
}
