// The store's pieces on their own: the memory store's bound (it never drops a live entry), the
// time limit around a given store, how store failures are said, and the claim that releases
// itself when it fails. (The Store contract on memory and a real Redis: server-store-redis.redis.test.ts.)
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { within } from '../../../src/server/time/deadline.js';
import { DeviceRiskError } from '../../../src/server/errors.js';
import {
  createMemoryStore,
  fromStore,
  storeWhenReady,
  withTimeLimit,
  type Store,
} from '../../../src/server/store/store.js';
import { claim } from '../../../src/server/store/lease.js';
import { BadUpstreamAnswerError, usableStatus } from '../../../src/server/proxy/upstream-answer.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('the memory store when full', () => {
  it('a key rewritten with a longer life leaves no room behind it: still full, still refused', async () => {
    let now = 1000;
    const store = createMemoryStore({ maxEntries: 2, now: () => now });
    await store.set('a', '1', 1000); // until 2000
    await store.set('b', '2', 5000); // until 6000
    await store.set('a', '3', 9000); // until 10000: nothing ends at 2000 any more
    now = 3000;
    await expect(store.set('c', '4', 1000)).rejects.toMatchObject({ code: 'store_full', retryAfter: 3 });
    expect([await store.get('a'), await store.get('b'), await store.get('c')]).toEqual(['3', '2', undefined]);
  });
});

describe('withTimeLimit', () => {
  const hanging: Store = {
    get: () => new Promise(() => {}),
    set: () => new Promise(() => {}),
    setIfAbsent: () => new Promise(() => {}),
    compareAndSet: () => new Promise(() => {}),
    compareAndDelete: () => new Promise(() => {}),
    delete: () => new Promise(() => {}),
  };

  it('every call of a store that hangs rejects at the limit: store_unavailable, Retry-After 1', async () => {
    vi.useFakeTimers();
    const limited = withTimeLimit(hanging, 500);
    const calls = [
      limited.get('k'),
      limited.set('k', 'v', 1),
      limited.setIfAbsent('k', 'v', 1),
      limited.compareAndSet('k', 'v', 'w', 1),
      limited.compareAndDelete('k', 'v'),
      limited.delete('k'),
    ];
    const settled = Promise.allSettled(calls);
    await vi.advanceTimersByTimeAsync(499);
    let done = false;
    void settled.then(() => (done = true));
    await Promise.resolve();
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    for (const result of await settled)
      expect(result).toMatchObject({
        status: 'rejected',
        reason: { code: 'store_unavailable', retryAfter: 1, operation: 'store' },
      });
  });

  it('passes every call and its answer through, and leaves no timer behind', async () => {
    const memory = createMemoryStore();
    const limited = withTimeLimit(memory);
    await limited.set('a', '1', 10_000);
    expect(await limited.get('a')).toBe('1');
    expect(await limited.setIfAbsent('a', '2', 10_000)).toBe(false);
    expect(await limited.setIfAbsent('b', '2', 10_000)).toBe(true);
    expect(await limited.compareAndSet('a', '1', '3', 10_000)).toBe(true);
    expect(await limited.get('a')).toBe('3');
    expect(await limited.compareAndDelete('a', '3')).toBe(true);
    await limited.delete('b');
    expect([await limited.get('a'), await limited.get('b')]).toEqual([undefined, undefined]);
    vi.useFakeTimers();
    await withTimeLimit(memory, 60_000).get('a');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a store that throws at once rejects with its own error', async () => {
    const broken = { ...createMemoryStore(), get: () => Promise.reject(new Error('refused')) };
    await expect(withTimeLimit(broken).get('k')).rejects.toThrow('refused');
  });

  it.each([0, -1, Number.NaN])('a limit of %s is refused', (ms) => {
    expect(() => withTimeLimit(createMemoryStore(), ms)).toThrow(
      expect.objectContaining({ code: 'invalid_configuration' }),
    );
  });
});

describe('storeWhenReady', () => {
  it('waits for the store to be ready, then passes every call and its answer through', async () => {
    let open!: (store: Store) => void;
    const store = storeWhenReady(new Promise<Store>((resolve) => (open = resolve)));
    const memory = createMemoryStore();
    let settled = false;
    const first = store.setIfAbsent('k', 'a', 60_000).then((taken) => {
      settled = true;
      return taken;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(settled).toBe(false);
    open(memory);
    expect(await first).toBe(true);
    expect(await store.get('k')).toBe('a');
    await store.set('k', 'b', 60_000);
    expect(await memory.get('k')).toBe('b');
    expect(await store.compareAndSet('k', 'b', 'c', 60_000)).toBe(true);
    expect(await store.compareAndDelete('k', 'x')).toBe(false);
    expect(await memory.get('k')).toBe('c');
    await store.delete('k');
    expect(await memory.get('k')).toBeUndefined();
  });
});

describe('fromStore', () => {
  it("keeps a failure already said in the store's terms, with its Retry-After", async () => {
    const full = new DeviceRiskError('store_full', 'full', { retryAfter: 7 });
    await expect(fromStore(Promise.reject(full), 'x')).rejects.toBe(full);
    const late = new DeviceRiskError('store_unavailable', 'late', { retryAfter: 1 });
    await expect(fromStore(Promise.reject(late), 'x')).rejects.toBe(late);
  });

  it('keeps a store found unfit for its guarantees as the configuration error it is, not a retry', async () => {
    const unfit = new DeviceRiskError('invalid_configuration', 'Redis may evict the store keys');
    await expect(fromStore(Promise.reject(unfit), 'x')).rejects.toBe(unfit);
  });

  it('says any other failure as store_unavailable, the cause kept out of JSON', async () => {
    const other = new DeviceRiskError('network_error', 'connection refused');
    const error = await fromStore(Promise.reject(other), 'token read').catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'store_unavailable', retryAfter: 1, operation: 'store', cause: other });
    expect(JSON.stringify(error)).not.toContain('connection refused');
    await expect(fromStore(Promise.reject(new Error('plain')), 'x')).rejects.toMatchObject({
      code: 'store_unavailable',
    });
  });
});

describe('claim', () => {
  it('a claim that failed sends its release behind it, with its own mark', async () => {
    const released: Array<[string, string]> = [];
    const store: Store = {
      ...createMemoryStore(),
      setIfAbsent: () => Promise.reject(new Error('timed out')),
      compareAndDelete: async (k, e) => {
        released.push([k, e]);
        return true;
      },
    };
    await expect(claim(store, 'lease', 'mark-1', 1000, 'lease')).rejects.toMatchObject({ code: 'store_unavailable' });
    expect(released).toEqual([['lease', 'mark-1']]);
  });

  it('a claim that answered sends no release', async () => {
    const memory = createMemoryStore();
    const released: string[] = [];
    const store: Store = {
      ...memory,
      compareAndDelete: async (k) => {
        released.push(k);
        return true;
      },
    };
    expect(await claim(store, 'lease', 'mark-1', 1000, 'lease')).toBe(true);
    expect(await claim(store, 'lease', 'mark-2', 1000, 'lease')).toBe(false);
    expect(released).toEqual([]);
  });
});

describe('within', () => {
  it('an aborted signal rejects at once with its reason, whatever the work does', async () => {
    const reason = new Error('too late');
    const signal = AbortSignal.abort(reason);
    await expect(within(new Promise(() => {}), signal)).rejects.toBe(reason);
    await expect(within(Promise.reject(new Error('ignored')), signal)).rejects.toBe(reason);
  });

  it('settles with the work, or with the abort that comes first, and leaves no listener', async () => {
    const controller = new AbortController();
    expect(await within(Promise.resolve('done'), controller.signal)).toBe('done');
    await expect(within(Promise.reject(new Error('failed')), controller.signal)).rejects.toThrow('failed');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    const pending = within(new Promise(() => {}), controller.signal);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    controller.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});

describe('what the proxy passes on', () => {
  it.each([
    [199, false],
    [200, true],
    [599, true],
    [600, false],
    [200.5, false],
  ])('status %s: %s', (status, usable) => {
    expect(usableStatus(status)).toBe(usable);
  });

  it('an unusable answer is a BadUpstreamAnswerError, by name', () => {
    expect(new BadUpstreamAnswerError('x').name).toBe('BadUpstreamAnswerError');
  });
});
