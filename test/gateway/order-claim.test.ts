// An order's claim (src/gateway/order-claim.ts) on a store whose answers race other checkouts:
// a claim given back between the two reads is claimed again; one that keeps changing hands is
// refused after two rounds rather than tried for ever.
import { describe, expect, it } from 'vitest';
import { orderClaims } from '../../src/gateway/order-claim.js';
import { createMemoryStore } from '../../src/server/index.js';

/** A memory store whose first `taken` set-if-absent calls answer false, the key read as absent. */
function racing(taken: number) {
  const memory = createMemoryStore();
  const asked: string[] = [];
  return {
    asked,
    store: {
      ...memory,
      setIfAbsent: (key: string, value: string, ttlMs: number) => {
        asked.push('setIfAbsent');
        return taken-- > 0 ? Promise.resolve(false) : memory.setIfAbsent(key, value, ttlMs);
      },
      get: (key: string) => {
        asked.push('get');
        return memory.get(key);
      },
    },
  };
}

describe('orderClaims', () => {
  it('a claim given back between its two reads (another checkout refused) is claimed in a second round', async () => {
    const { store, asked } = racing(1);
    const claim = await orderClaims(store).claim('order-1', 'key-1');
    expect(claim.refused).toBe(false);
    expect(asked).toEqual(['setIfAbsent', 'get', 'setIfAbsent']);
    expect(await claim.keep()).toBe(true);
  });

  it('a claim kept is kept again by a retry under its key, and given back by no refused attempt', async () => {
    const store = createMemoryStore();
    const claims = orderClaims(store);
    const first = await claims.claim('order-1', 'key-1');
    const retry = await claims.claim('order-1', 'key-1');
    expect([first.refused, retry.refused]).toEqual([false, false]);
    expect(await first.keep()).toBe(true);
    expect(await retry.keep()).toBe(true);
    // Its value the mark still, as every version of the gateway reads it (a fleet mid-upgrade).
    expect(await store.get('gateway:order-claim:order-1')).toBe('key-1');
    await first.release();
    expect((await claims.claim('order-1', 'key-2')).refused).toBe(true);
    expect((await claims.claim('order-1', 'key-1')).refused).toBe(false);
    // The kept mark is the order's own: the same key refused for another order (the kit's 422) gives that one back.
    await (await claims.claim('order-2', 'key-1')).release();
    expect((await claims.claim('order-2', 'key-2')).refused).toBe(false);
  });

  it("a retry's keep between a refused attempt's read of the kept mark and its delete: the claim is held again", async () => {
    const memory = createMemoryStore();
    let gate: (() => void) | undefined;
    let readKept!: () => void;
    const readingKept = new Promise<void>((resolve) => (readKept = resolve));
    const store = {
      ...memory,
      // The refused attempt's delete waits (one store round trip) until the retry has kept the claim.
      compareAndDelete: async (key: string, value: string) => {
        if (gate === undefined) await new Promise<void>((resolve) => (gate = resolve));
        return memory.compareAndDelete(key, value);
      },
      get: async (key: string) => {
        const value = await memory.get(key);
        if (key.endsWith(':kept')) readKept();
        return value;
      },
    };
    const claims = orderClaims(store);
    const owner = await claims.claim('order-1', 'key-A');
    const retry = await claims.claim('order-1', 'key-A');
    const releasing = owner.release();
    await readingKept;
    expect(await retry.keep()).toBe(true);
    gate!();
    await releasing;
    // Another checkout of the order (another tab): refused, the order accepted once.
    expect((await claims.claim('order-1', 'key-B')).refused).toBe(true);
  });

  it('a claim that changes hands under both rounds is refused, never tried for ever', async () => {
    const { store, asked } = racing(2);
    const claim = await orderClaims(store).claim('order-1', 'key-1');
    expect(claim.refused).toBe(true);
    expect(asked).toEqual(['setIfAbsent', 'get', 'setIfAbsent', 'get']);
    // Refused: it has nothing to give back.
    await expect(claim.release()).resolves.toBeUndefined();
  });
});
