// An Idempotency-Key's record written by one attempt (src/server/endpoint/key-record.ts, fencedRecord): each
// write replaces only the version this attempt wrote; a full store is said at once, a store away
// is waited for; nothing is left running.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fencedRecord } from '../../../src/server/endpoint/key-record.js';
import { createMemoryStore, type Store } from '../../../src/server/store/store.js';

const KEY = 'client-1:idempotency:key-1';

function recordOn(store: Store, stored?: string) {
  return fencedRecord(
    { store, recordKey: KEY, ttlMs: 60_000, read: async () => ({ stored: await store.get(KEY) }) },
    stored,
  );
}

afterEach(() => {
  vi.useRealTimers();
});

describe('fencedRecord', () => {
  it('a record another attempt replaced is not written over: idempotency_key_in_use, Retry-After 1', async () => {
    const store = createMemoryStore();
    const mine = recordOn(store);
    await mine.replace({ fingerprint: 'fp' }, 1000);
    await store.set(KEY, JSON.stringify({ fingerprint: 'fp', uploaded: true }), 60_000);
    await expect(mine.replace({ fingerprint: 'fp', result: undefined }, 1000)).rejects.toMatchObject({
      code: 'idempotency_key_in_use',
      retryAfter: 1,
      operation: 'store',
    });
    expect(JSON.parse((await store.get(KEY))!)).toEqual({ fingerprint: 'fp', uploaded: true });
  });

  it('a full store is said at once, not tried again', async () => {
    const full = createMemoryStore({ maxEntries: 1 });
    await full.set('other', 'x', 60_000);
    const writes: string[] = [];
    const store: Store = {
      ...full,
      setIfAbsent: async (k, v, t) => {
        writes.push(v);
        return full.setIfAbsent(k, v, t);
      },
    };
    await expect(recordOn(store).replace({ fingerprint: 'fp' }, 5000)).rejects.toMatchObject({ code: 'store_full' });
    expect(writes).toHaveLength(1);
  });

  it('a write leaves no timer behind, nor does one that answers in the background', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const record = recordOn(createMemoryStore());
    await record.replace({ fingerprint: 'fp' }, 1000);
    await record.replace({ fingerprint: 'fp', uploaded: true }, 1000, { answerWithinMs: 500, onGiveUp: () => {} });
    expect(vi.getTimerCount()).toBe(0);
  });
});
