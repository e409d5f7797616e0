// The store's list of callbacks not yet handled: buckets changed by compare-and-set, so that
// instances listing and unlisting at once lose no entry.
import { describe, expect, it } from 'vitest';
import { PENDING_BUCKETS, bucketOf, pendingList } from '../../../src/server/callbacks/pending.js';
import { createMemoryStore, type Store } from '../../../src/server/index.js';

const keysInOneBucket = (count: number) => {
  const keys: string[] = [];
  for (let n = 0; keys.length < count; n++) if (bucketOf(`k${n}`) === 0) keys.push(`k${n}`);
  return keys;
};

describe('the pending list', () => {
  it('spreads keys over its buckets, the same on every instance', () => {
    const seen = new Set(Array.from({ length: 500 }, (_, n) => bucketOf(`key-${n}`)));
    expect(seen.size).toBe(PENDING_BUCKETS);
    expect(bucketOf('a:b:c')).toBe(bucketOf('a:b:c'));
    expect(Math.max(...seen)).toBe(PENDING_BUCKETS - 1);
  });

  it('lists a key once, dated again when added again; an emptied bucket is deleted', async () => {
    let clock = 1000;
    const store = createMemoryStore();
    const list = pendingList(store, 'ns', 60_000, () => clock);
    await list.add('x');
    clock = 2000;
    await list.add('x');
    await list.add('y');
    expect((await list.entries()).sort((a, b) => a.key.localeCompare(b.key))).toEqual([
      { key: 'x', at: 2000 },
      { key: 'y', at: 2000 },
    ]);
    await list.remove('x');
    await list.remove('x');
    await list.remove('y');
    expect(await list.entries()).toEqual([]);
    for (let bucket = 0; bucket < PENDING_BUCKETS; bucket++)
      expect(await store.get(`ns:pending:${bucket}`)).toBeUndefined();
  });

  it('remove with a date takes off only the entry listed then', async () => {
    let clock = 1000;
    const list = pendingList(createMemoryStore(), 'ns', 60_000, () => clock);
    await list.add('x');
    clock = 2000;
    await list.add('x');
    await list.remove('x', 1000);
    expect(await list.entries()).toEqual([{ key: 'x', at: 2000 }]);
    await list.remove('x', 2000);
    expect(await list.entries()).toEqual([]);
  });

  it('instances changing one bucket at once lose nothing', async () => {
    const store = createMemoryStore();
    const keys = keysInOneBucket(12);
    const lists = keys.map(() => pendingList(store, 'ns', 60_000, () => 1));
    await Promise.all(keys.map((key, n) => lists[n]!.add(key)));
    expect((await lists[0]!.entries()).map((e) => e.key).sort()).toEqual([...keys].sort());
    await Promise.all(keys.slice(0, 6).map((key, n) => lists[n]!.remove(key)));
    expect((await lists[0]!.entries()).map((e) => e.key).sort()).toEqual(keys.slice(6).sort());
  });

  it('a bucket changed under 20 writes in a row is store_unavailable with a Retry-After', async () => {
    const inner = createMemoryStore();
    let writes = 0;
    // Another writer changes the bucket between every read and write.
    const store: Store = {
      ...inner,
      get: async (key) => {
        await inner.set(key, JSON.stringify([{ key: `other-${writes}`, at: 1 }]), 60_000);
        return inner.get(key);
      },
      compareAndSet: async (...args) => {
        writes++;
        await inner.set(args[0], '[]', 60_000);
        return inner.compareAndSet(...args);
      },
    };
    await expect(pendingList(store, 'ns', 60_000, () => 1).add('x')).rejects.toMatchObject({
      code: 'store_unavailable',
      retryAfter: 1,
      operation: 'store',
    });
    expect(writes).toBe(20);
  });

  it('a store that fails is store_unavailable', async () => {
    const store: Store = { ...createMemoryStore(), get: () => Promise.reject(new Error('down')) };
    await expect(pendingList(store, 'ns', 60_000, () => 1).entries()).rejects.toMatchObject({
      code: 'store_unavailable',
    });
  });
});
