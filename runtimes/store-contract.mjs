// The Store contract, as plain cases on node:assert: run by vitest through
// test/support/store-contract.ts (memory, node-redis, ioredis, Redis Cluster) and, as they
// are, in every runtime by runtimes/checks.mjs (Node 22, 24, 26, Deno 2, Bun 1), so that the
// same checks run everywhere. Waits are long enough that a busy machine does not expire a
// value before it is read.
import assert from 'node:assert/strict';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** `[name, async (store) => …]`: each case gets a fresh store and throws on a broken promise. */
export const STORE_CONTRACT = [
  [
    'get, set with a time to live, delete',
    async (store) => {
      assert.equal(await store.get('a'), undefined);
      await store.set('a', 'one', 10_000);
      assert.equal(await store.get('a'), 'one');
      await store.set('a', 'two', 10_000);
      assert.equal(await store.get('a'), 'two');
      await store.delete('a');
      assert.equal(await store.get('a'), undefined);
      await store.set('short', 'x', 40);
      await sleep(80);
      assert.equal(await store.get('short'), undefined);
    },
  ],
  [
    'setIfAbsent: of 50 concurrent claims exactly one wins, and the value lives for its ttl only',
    async (store) => {
      const won = await Promise.all(
        Array.from({ length: 50 }, (_, i) => store.setIfAbsent('claim', `owner-${i}`, 400)),
      );
      assert.equal(won.filter(Boolean).length, 1);
      assert.equal(await store.get('claim'), `owner-${won.indexOf(true)}`);
      await sleep(500);
      assert.equal(await store.setIfAbsent('claim', 'later', 1000), true);
    },
  ],
  [
    'compareAndSet and compareAndDelete act only on the expected value',
    async (store) => {
      assert.equal(await store.compareAndSet('k', 'v1', 'v2', 1000), false);
      assert.equal(await store.get('k'), undefined);
      await store.set('k', 'v1', 1000);
      assert.equal(await store.compareAndSet('k', 'other', 'v2', 1000), false);
      assert.equal(await store.get('k'), 'v1');
      const swaps = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.compareAndSet('k', 'v1', `v-${i}`, 1000)),
      );
      assert.equal(swaps.filter(Boolean).length, 1);
      const current = await store.get('k');
      assert.equal(await store.compareAndDelete('k', 'v1'), false);
      assert.equal(await store.get('k'), current);
      assert.equal(await store.compareAndDelete('k', current), true);
      assert.equal(await store.get('k'), undefined);
    },
  ],
  [
    'compareAndSet renews the time to live',
    async (store) => {
      // The renewal must land inside the first 400 ms: on a machine too busy for that, the set
      // is made again (a late renewal finds the key gone, which is right, and proves nothing).
      let setAt;
      for (let attempt = 1; ; attempt++) {
        setAt = Date.now();
        await store.set('lease', 'me', 400);
        const renewed = await store.compareAndSet('lease', 'me', 'me', 10_000);
        if (Date.now() - setAt < 300 || attempt === 5) {
          assert.equal(renewed, true);
          break;
        }
      }
      // Past the first time to live: only the renewal keeps the key.
      await sleep(Math.max(0, setAt + 500 - Date.now()));
      assert.equal(await store.get('lease'), 'me');
    },
  ],
];
