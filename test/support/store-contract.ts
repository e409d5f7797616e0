// The Store contract, for every store and client the kit supports: run by
// test/server-store-redis.redis.test.ts (memory, node-redis, ioredis) and
// test/server-store-redis-cluster.redis.test.ts (both clients on a Redis Cluster).
// Waits are long enough that a busy machine does not expire a value before it is read.
import { expect, it } from 'vitest';
import type { Store } from '../../src/server/index.js';

export function storeContract(make: () => Promise<Store>): void {
  it('get, set with a time to live, delete', async () => {
    const store = await make();
    expect(await store.get('a')).toBeUndefined();
    await store.set('a', 'one', 10_000);
    expect(await store.get('a')).toBe('one');
    await store.set('a', 'two', 10_000);
    expect(await store.get('a')).toBe('two');
    await store.delete('a');
    expect(await store.get('a')).toBeUndefined();
    await store.set('short', 'x', 40);
    await new Promise((r) => setTimeout(r, 80));
    expect(await store.get('short')).toBeUndefined();
  });

  it('setIfAbsent: of 50 concurrent claims exactly one wins, and the value lives for its ttl only', async () => {
    const store = await make();
    const won = await Promise.all(Array.from({ length: 50 }, (_, i) => store.setIfAbsent('claim', `owner-${i}`, 400)));
    expect(won.filter(Boolean)).toHaveLength(1);
    expect(await store.get('claim')).toBe(`owner-${won.indexOf(true)}`);
    await new Promise((r) => setTimeout(r, 500));
    expect(await store.setIfAbsent('claim', 'later', 1000)).toBe(true);
  });

  it('compareAndSet and compareAndDelete act only on the expected value', async () => {
    const store = await make();
    expect(await store.compareAndSet('k', 'v1', 'v2', 1000)).toBe(false);
    expect(await store.get('k')).toBeUndefined();
    await store.set('k', 'v1', 1000);
    expect(await store.compareAndSet('k', 'other', 'v2', 1000)).toBe(false);
    expect(await store.get('k')).toBe('v1');
    const swaps = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.compareAndSet('k', 'v1', `v-${i}`, 1000)),
    );
    expect(swaps.filter(Boolean)).toHaveLength(1);
    const current = (await store.get('k'))!;
    expect(await store.compareAndDelete('k', 'v1')).toBe(false);
    expect(await store.get('k')).toBe(current);
    expect(await store.compareAndDelete('k', current)).toBe(true);
    expect(await store.get('k')).toBeUndefined();
  });

  it('compareAndSet renews the time to live', async () => {
    const store = await make();
    // The renewal must land inside the first 400 ms: on a machine too busy for that, the set
    // is made again (a late renewal finds the key gone, which is right, and proves nothing).
    let setAt = 0;
    for (let attempt = 1; ; attempt++) {
      setAt = Date.now();
      await store.set('lease', 'me', 400);
      const renewed = await store.compareAndSet('lease', 'me', 'me', 10_000);
      if (Date.now() - setAt < 300 || attempt === 5) {
        expect(renewed).toBe(true);
        break;
      }
    }
    // Past the first time to live: only the renewal keeps the key.
    await new Promise((r) => setTimeout(r, Math.max(0, setAt + 500 - Date.now())));
    expect(await store.get('lease')).toBe('me');
  });
}
