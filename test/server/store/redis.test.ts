// createRedisStore against fake clients written here: which client shape it speaks, and its
// start-up check, each way it can refuse (the same check on a real Redis, node-redis 4 and an
// evicting policy: server-store-redis.redis.test.ts).
import { describe, expect, it } from 'vitest';
import { createRedisStore } from '../../../src/server/store/redis.js';

interface FakeOptions {
  policy?: string;
  /** As node-redis 4 does with node-redis 5's options. */
  ignoresNx?: boolean;
  ignoresPx?: boolean;
  /** What PTTL answers for the check's key, in place of its real time to live. */
  pttl?: number;
  /** Answers null to every SET NX, as a client that never writes would. */
  refusesNx?: boolean;
  /** What GET answers for the store's own keys (not the check's). */
  getReply?: (value: string | undefined) => unknown;
  /** Fails the check's scripts this many times first, as a dropped connection would. */
  evalFailures?: number;
}

/** A node-redis-shaped client on a Map; `checks` counts the start-up checks that began. */
function fakeNodeRedis(options: FakeOptions = {}) {
  const values = new Map<string, { value: string; ttl: number }>();
  let evalFailures = options.evalFailures ?? 0;
  const state = { values, checks: 0, policy: options.policy ?? 'noeviction' };
  const client = {
    get: async (key: string) => {
      const value = values.get(key)?.value;
      return key.includes('store-check:') || !options.getReply ? (value ?? null) : options.getReply(value);
    },
    set: async (key: string, value: string, set: { expiration: { type: 'PX'; value: number }; condition?: 'NX' }) => {
      if (key.includes('store-check:') && !values.has(key)) state.checks++;
      if (set.condition === 'NX' && options.refusesNx) return null;
      if (set.condition === 'NX' && !options.ignoresNx && values.has(key)) return null;
      values.set(key, { value, ttl: options.ignoresPx ? -1 : set.expiration.value });
      return 'OK';
    },
    del: async (key: string) => Number(values.delete(key)),
    eval: async (script: string, { keys: [key] }: { keys: string[]; arguments: string[] }) => {
      if (evalFailures > 0) {
        evalFailures--;
        throw new Error('Socket closed unexpectedly');
      }
      if (script.includes('PTTL')) return options.pttl ?? values.get(key!)?.ttl ?? -2;
      if (script.includes('INFO')) return `# Memory\r\nused_memory:1024\r\nmaxmemory_policy:${state.policy}\r\n`;
      throw new Error(`unexpected script ${script}`);
    },
  };
  return { client, state };
}

describe('createRedisStore: the client', () => {
  it('refuses something that is neither node-redis nor ioredis, with a typed error', () => {
    expect(() => createRedisStore({ get() {}, set() {} } as never)).toThrow(
      expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining('del()') }),
    );
    expect(() => createRedisStore(undefined as never)).toThrow(
      expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining('get()') }),
    );
  });

  it('refuses a GET reply that is neither a string nor bytes', async () => {
    const { client } = fakeNodeRedis({ getReply: () => 42 });
    await expect(createRedisStore(client).get('k')).rejects.toMatchObject({
      code: 'invalid_configuration',
      message: expect.stringContaining('answered GET with neither a string nor bytes'),
    });
  });

  it('speaks ioredis, told by its call(): positional SET options and EVAL with a key count', async () => {
    const sent: unknown[][] = [];
    const values = new Map<string, string>();
    const client = {
      call: async () => 'unused',
      get: async (key: string) => values.get(key) ?? null,
      set: async (key: string, value: string, ...rest: unknown[]) => {
        sent.push(['set', key, value, ...rest]);
        if (rest.includes('NX') && values.has(key)) return null;
        values.set(key, value);
        return 'OK';
      },
      del: async (key: string) => Number(values.delete(key)),
      eval: async (script: string, numberOfKeys: number, ...rest: string[]) => {
        sent.push(['eval', numberOfKeys, ...rest]);
        if (script.includes('PTTL')) return 59_000;
        if (script.includes('INFO')) return 'maxmemory_policy:noeviction\r\n';
        return 1;
      },
    };
    const store = createRedisStore(client, { prefix: 'io:' });
    expect(await store.setIfAbsent('a', 'v', 1000.2)).toBe(true);
    expect(await store.setIfAbsent('a', 'w', 1000)).toBe(false);
    await store.set('b', 'v', 0.3);
    expect(await store.compareAndSet('a', 'v', 'x', 500)).toBe(true);
    expect(sent.filter((call) => !call.some((part) => String(part).includes('store-check')))).toEqual([
      ['set', 'io:a', 'v', 'PX', 1001, 'NX'],
      ['set', 'io:a', 'w', 'PX', 1000, 'NX'],
      ['set', 'io:b', 'v', 'PX', 1],
      ['eval', 1, 'io:a', 'v', 'x', '500'],
    ]);
  });
});

describe('createRedisStore: the start-up check', () => {
  it('passes a fit client once, for every operation after it, and leaves no key behind', async () => {
    const { client, state } = fakeNodeRedis();
    const store = createRedisStore(client);
    await Promise.all([store.get('a'), store.set('b', 'v', 1000), store.ready()]);
    await store.setIfAbsent('c', 'v', 1000);
    expect(await store.get('absent')).toBeUndefined();
    expect(state.checks).toBe(1);
    expect([...state.values.keys()].sort()).toEqual(['bbc:b', 'bbc:c']);
  });

  it.each([
    ['every operation', (store: ReturnType<typeof createRedisStore>) => store.setIfAbsent('k', 'v', 1000)],
    ['ready()', (store: ReturnType<typeof createRedisStore>) => store.ready()],
  ])('refuses a client that ignores NX, as node-redis 4 does (%s), and writes nothing', async (_, use) => {
    const { client, state } = fakeNodeRedis({ ignoresNx: true });
    const store = createRedisStore(client);
    await expect(use(store)).rejects.toMatchObject({
      code: 'invalid_configuration',
      message: expect.stringMatching(/ignored SET \.\.\. NX \(node-redis 4.*node-redis 5 or later, or ioredis 5/),
    });
    await expect(store.get('k')).rejects.toMatchObject({ code: 'invalid_configuration' });
    expect(state.values.size).toBe(0);
  });

  it('refuses a client whose SET NX never writes', async () => {
    const { client } = fakeNodeRedis({ refusesNx: true });
    await expect(createRedisStore(client).ready()).rejects.toThrow('ignored SET ... NX');
  });

  it.each([0, 60_001])('refuses a time to live of %i ms where 60000 was set', async (pttl) => {
    const { client } = fakeNodeRedis({ pttl });
    await expect(createRedisStore(client).ready()).rejects.toThrow('ignored SET ... PX');
  });

  it('takes a time to live of exactly what was set', async () => {
    const { client } = fakeNodeRedis({ pttl: 60_000 });
    await createRedisStore(client).ready();
  });

  it('refuses a client that ignores PX: its keys would never expire', async () => {
    const { client, state } = fakeNodeRedis({ ignoresPx: true });
    await expect(createRedisStore(client).set('k', 'v', 1000)).rejects.toMatchObject({
      code: 'invalid_configuration',
      message: expect.stringContaining('ignored SET ... PX, so keys would never expire'),
    });
    expect(state.values.size).toBe(0);
  });

  it.each([
    'allkeys-lru',
    'allkeys-lfu',
    'allkeys-random',
    'volatile-lru',
    'volatile-lfu',
    'volatile-random',
    'volatile-ttl',
  ])('refuses a Redis whose maxmemory-policy is %s, naming the setting to use', async (policy) => {
    const { client } = fakeNodeRedis({ policy });
    await expect(createRedisStore(client).get('k')).rejects.toMatchObject({
      code: 'invalid_configuration',
      message: expect.stringContaining(`(maxmemory-policy ${policy}): leases and records would vanish`),
    });
    await expect(createRedisStore(client).ready()).rejects.toThrow(/Set maxmemory-policy noeviction/);
  });

  it('refuses a Redis whose policy it cannot read', async () => {
    const { client } = fakeNodeRedis({ policy: '' });
    client.eval = async (script: string) => (script.includes('PTTL') ? 1000 : null) as never;
    await expect(createRedisStore(client).ready()).rejects.toThrow('maxmemory-policy unknown');
  });

  it('checks again after a refusal: a Redis set to noeviction since is taken', async () => {
    const { client, state } = fakeNodeRedis({ policy: 'allkeys-lru' });
    const store = createRedisStore(client);
    await expect(store.set('k', 'v', 1000)).rejects.toMatchObject({ code: 'invalid_configuration' });
    state.policy = 'noeviction';
    await store.set('k', 'v', 1000);
    expect(await store.get('k')).toBe('v');
    expect(state.checks).toBe(2);
  });

  it('a check the connection cut off rejects with that failure, and the next operation checks again', async () => {
    const { client, state } = fakeNodeRedis({ evalFailures: 1 });
    const store = createRedisStore(client);
    await expect(store.get('k')).rejects.toThrow('Socket closed unexpectedly');
    expect(state.values.size).toBe(0);
    expect(await store.setIfAbsent('k', 'v', 1000)).toBe(true);
    expect(state.checks).toBe(2);
  });
});

describe('createRedisStore: a client still connecting', () => {
  /** A fit client whose connection state the test sets: ioredis's `status`, or node-redis's `isOpen`/`isReady`. */
  function connectingClient(state: { status?: string; isOpen?: boolean; isReady?: boolean }) {
    const fake = fakeNodeRedis();
    return { ...fake, client: Object.assign(fake.client, state) };
  }
  const settled = async (promise: Promise<unknown>) => {
    let done = false;
    void promise.then(
      () => (done = true),
      () => (done = true),
    );
    await new Promise((resolve) => setTimeout(resolve, 40));
    return done;
  };

  it.each(['connecting', 'connect', 'reconnecting'])(
    'ioredis status %s: the check waits until the client is ready, then runs',
    async (status) => {
      const { client, state } = connectingClient({ status });
      const ready = createRedisStore(client).ready();
      expect(await settled(ready)).toBe(false);
      expect(state.checks).toBe(0);
      client.status = 'ready';
      await ready;
      expect(state.checks).toBe(1);
    },
  );

  it.each(['ready', 'wait', 'end', 'close'])(
    'ioredis status %s: not waited for, the check runs at once',
    async (status) => {
      const { client, state } = connectingClient({ status });
      await createRedisStore(client, { readyTimeoutMs: 1 }).ready();
      expect(state.checks).toBe(1);
    },
  );

  it('node-redis open but not ready: waited for; never opened or closed: not waited for', async () => {
    const opening = connectingClient({ isOpen: true, isReady: false });
    const ready = createRedisStore(opening.client).ready();
    expect(await settled(ready)).toBe(false);
    opening.client.isReady = true;
    await ready;
    expect(opening.state.checks).toBe(1);
    for (const state of [
      { isOpen: false, isReady: false },
      { isOpen: true, isReady: true },
    ]) {
      const other = connectingClient(state);
      await createRedisStore(other.client, { readyTimeoutMs: 1 }).ready();
      expect(other.state.checks).toBe(1);
    }
  });

  it('past readyTimeoutMs: store_unavailable naming it, for ready() and an operation; the next call waits again', async () => {
    const { client, state } = connectingClient({ status: 'reconnecting' });
    const store = createRedisStore(client, { readyTimeoutMs: 60 });
    const started = Date.now();
    const expected = { code: 'store_unavailable', message: expect.stringContaining('still connecting after 60 ms') };
    await expect(store.ready()).rejects.toMatchObject(expected);
    expect(Date.now() - started).toBeGreaterThanOrEqual(55);
    await expect(store.get('k')).rejects.toMatchObject(expected);
    expect(state.checks).toBe(0);
    client.status = 'ready';
    expect(await store.get('k')).toBeUndefined();
    expect(state.checks).toBe(1);
  });

  it('by default (10 s) a connection that takes a while is waited for', async () => {
    const { client } = connectingClient({ status: 'connecting' });
    const ready = createRedisStore(client).ready();
    expect(await settled(ready)).toBe(false);
    client.status = 'end';
    await ready;
  });

  it.each([0, -1, Number.NaN])('refuses readyTimeoutMs %s at creation', (readyTimeoutMs) => {
    expect(() => createRedisStore(fakeNodeRedis().client, { readyTimeoutMs })).toThrow(
      expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining('readyTimeoutMs') }),
    );
  });
});
