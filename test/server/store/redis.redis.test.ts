// The server kit on a shared store: the Store contract (memory and a real redis-server),
// and tokens, Idempotency-Keys and callbacks across instances that share one Redis.
// The instances here are objects in one process; test/package/fleet.test.ts runs them as processes.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../../src/emulator/index.js';
import {
  createCallbackHandler,
  createDeviceRiskClient,
  createDeviceRiskHandler,
  createMemoryStore,
  toNodeHandler,
  type CallbackResult,
  type Store,
} from '../../../src/server/index.js';
import {
  createRedisStore,
  type RedisClientLike,
  type RedisStore,
  type RedisStoreOptions,
} from '../../../src/server/store/redis.js';
import { storeNamespace } from '../../../src/server/api/seal.js';
import { createClient, RESP_TYPES } from 'redis';
import { createClient as createClient4 } from 'redis4';
import { Redis as IoRedis } from 'ioredis';
import { connect, haveRedis, startRedisServer, type Client, type RedisServer } from '../../support/redis.js';
import { storeContract } from '../../support/store-contract.js';
import { freePort } from '../../support/processes.mjs';
import { BLACKBOX, SHOP, tokenSourceOn, UA } from '../../support/kit.js';

let redis: RedisServer;
const clients: Client[] = [];
const closers: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  if (haveRedis) redis = await startRedisServer();
});
afterAll(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
  for (const close of closers.splice(0)) await close().catch(() => {});
  await redis?.stop();
});

let prefixes = 0;
/** A store on the test's Redis, with a prefix of its own (each test starts empty). */
async function redisStore(prefix = `t${++prefixes}:`): Promise<RedisStore & { client: Client }> {
  const client = await connect(redis.url);
  clients.push(client);
  return Object.assign(createRedisStore(client, { prefix }), { client });
}

/** The same, through ioredis. */
async function ioredisStore(): Promise<Store> {
  const client = new IoRedis(redis.url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  client.on('error', () => {}); // it reconnects by itself; the tests see failures through the store
  await client.connect();
  closers.push(() => client.quit());
  return createRedisStore(client, { prefix: `io${++prefixes}:` });
}

const stores: Array<[string, () => Promise<Store>]> = [
  ['memory', async () => createMemoryStore()],
  ...(haveRedis
    ? ([
        ['node-redis', () => redisStore()],
        ['ioredis', () => ioredisStore()],
      ] as Array<[string, () => Promise<Store>]>)
    : []),
];

/** A callback handler's sweep and the work it started, run to their end: then how many `seen` holds. */
async function sweptCount(handler: { sweep(): Promise<unknown>; idle(): Promise<unknown> }, seen: unknown[]) {
  await handler.sweep();
  await handler.idle();
  return seen.length;
}

describe.each(stores)('the Store contract: %s', (_, make) => storeContract(make));

describe('createMemoryStore', () => {
  it('a value lives exactly its ttl on the given clock; an expired one is absent to every operation', async () => {
    let now = 1000;
    const store = createMemoryStore({ now: () => now });
    await store.set('k', 'v', 100);
    now = 1099;
    expect(await store.get('k')).toBe('v');
    now = 1100;
    expect(await store.get('k')).toBeUndefined();
    await store.set('k', 'v', 100);
    now = 1200;
    expect(await store.compareAndSet('k', 'v', 'w', 100)).toBe(false);
    expect(await store.compareAndDelete('k', 'v')).toBe(false);
    expect(await store.setIfAbsent('k', 'x', 100)).toBe(true);
    expect(await store.get('k')).toBe('x');
  });

  it('holds at most maxEntries and never drops a live entry: a new key is refused (store_full) until one expires', async () => {
    let now = 1000;
    const store = createMemoryStore({ maxEntries: 2, now: () => now });
    await store.set('a', '1', 1000);
    await store.set('b', '2', 5000);
    await store.set('a', '3', 1000); // rewriting a key takes no room
    expect(await store.compareAndSet('b', '2', '4', 5000)).toBe(true);
    const refused = await store.setIfAbsent('c', '5', 1000).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'store_full', retryAfter: 1, operation: 'store' });
    await expect(store.set('c', '5', 1000)).rejects.toMatchObject({ code: 'store_full' });
    expect([await store.get('a'), await store.get('b'), await store.get('c')]).toEqual(['3', '4', undefined]);
    now = 2000; // "a" has expired: its room is the new key's
    expect(await store.setIfAbsent('c', '5', 1000)).toBe(true);
    expect([await store.get('a'), await store.get('b'), await store.get('c')]).toEqual([undefined, '4', '5']);
    // Full again: the Retry-After says when the next entry ends (b, at 6000, 3 s away).
    await expect(store.set('d', '6', 1000)).rejects.toMatchObject({ code: 'store_full', retryAfter: 1 });
    now = 3000; // c has expired
    await store.set('d', '6', 10_000);
    await expect(store.set('e', '7', 1000)).rejects.toMatchObject({ code: 'store_full', retryAfter: 3 });
    // A deleted key frees its room at once.
    await store.delete('b');
    await store.set('e', '7', 1000);
    expect(await store.get('e')).toBe('7');
  });
});

describe.skipIf(!haveRedis)('createRedisStore', () => {
  it('namespaces every key by its prefix, and two prefixes never see each other', async () => {
    const a = await redisStore('shop-a:');
    const b = await redisStore('shop-b:');
    await a.set('k', 'from a', 10_000);
    expect(await b.get('k')).toBeUndefined();
    expect(await a.client.get('shop-a:k')).toBe('from a');
  });

  it('puts "bbc:" before every key by default', async () => {
    const client = await connect(redis.url);
    clients.push(client);
    await createRedisStore(client).set('default-prefix', 'v', 10_000);
    expect(await client.get('bbc:default-prefix')).toBe('v');
    expect(await client.pTTL('bbc:default-prefix')).toBeGreaterThan(9000);
  });

  it('reads a client that maps strings to buffers', async () => {
    const client = await connect(redis.url);
    clients.push(client);
    const buffers = client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
    await createRedisStore(buffers, { prefix: 'buf:' }).set('k', 'välue', 10_000);
    expect(await createRedisStore(buffers, { prefix: 'buf:' }).get('k')).toBe('välue');
  });

  it('refuses node-redis 4 (it ignores NX and PX) before it writes anything', async () => {
    const old = createClient4({ url: redis.url });
    await old.connect();
    try {
      const store = createRedisStore(old as never, { prefix: 'v4:' });
      await expect(store.setIfAbsent('k', 'v', 1000)).rejects.toMatchObject({
        code: 'invalid_configuration',
        message: expect.stringContaining('node-redis 5 or later, or ioredis 5 or later'),
      });
      expect(await old.keys('v4:*')).toEqual([]);
    } finally {
      await old.quit();
    }
  });

  it('refuses a Redis that may evict its keys, naming the setting; takes it once set to noeviction', async () => {
    const admin = await connect(redis.url);
    clients.push(admin);
    const store = await redisStore();
    try {
      for (const policy of ['allkeys-lru', 'volatile-ttl']) {
        await admin.configSet('maxmemory-policy', policy);
        await expect(store.ready()).rejects.toMatchObject({
          code: 'invalid_configuration',
          message: expect.stringContaining(`(maxmemory-policy ${policy})`),
        });
        await expect(store.set('k', 'v', 1000)).rejects.toThrow('Set maxmemory-policy noeviction');
      }
    } finally {
      await admin.configSet('maxmemory-policy', 'noeviction');
    }
    await store.set('k', 'v', 10_000);
    expect(await store.get('k')).toBe('v');
  });

  it('a ttl of 0.4 ms is one whole millisecond (Redis refuses PX 0 and fractions)', async () => {
    const store = await redisStore();
    await store.set('tiny', 'x', 0.4);
    expect(await store.setIfAbsent('tiny2', 'x', 0)).toBe(true);
    await new Promise((r) => setTimeout(r, 20));
    expect(await store.get('tiny')).toBeUndefined();
  });

  it('rejects while Redis is away, never answers "absent"', async () => {
    const store = await redisStore();
    await store.set('k', 'v', 10_000);
    await store.client.close();
    await expect(store.get('k')).rejects.toThrow();
    await expect(store.setIfAbsent('k', 'v', 1000)).rejects.toThrow();
  });

  // The clients as docs/fleet.md sets them up (offline queue off): they refuse every command
  // until connected, so the start-up check must wait for the connection, not fail on it.
  it('ready() right after creating an ioredis client (enableOfflineQueue: false) waits for it to connect', async () => {
    const client = new IoRedis(redis.url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    closers.push(() => client.quit());
    const store = createRedisStore(client, { prefix: `io-ready${++prefixes}:` });
    expect(client.status).toBe('connecting');
    await store.ready();
    await store.set('k', 'v', 10_000);
    expect(await store.get('k')).toBe('v');
  });

  it('ready() right after a node-redis connect() not yet awaited (disableOfflineQueue) waits for it', async () => {
    const client = createClient({ url: redis.url, disableOfflineQueue: true });
    client.on('error', () => {});
    const connecting = client.connect();
    closers.push(async () => {
      await connecting;
      await client.close();
    });
    const store = createRedisStore(client, { prefix: `nr-ready${++prefixes}:` });
    expect(client.isOpen && !client.isReady).toBe(true);
    await store.ready();
    await store.set('k', 'v', 10_000);
    expect(await store.get('k')).toBe('v');
  });

  it('confirmReplicas: a write no replica holds fails store_unavailable (both clients); one a replica holds counts', async () => {
    const io = new IoRedis(redis.url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    io.on('error', () => {});
    closers.push(() => io.quit());
    const nr = await connect(redis.url);
    clients.push(nr);
    for (const client of [io, nr] as RedisClientLike[]) {
      const store = createRedisStore(client, {
        prefix: `confirm${++prefixes}:`,
        confirmReplicas: 1,
        confirmTimeoutMs: 50,
      });
      // The test's Redis has no replica: 0 of 1, every kind of write.
      const unconfirmed = {
        code: 'store_unavailable',
        message: expect.stringContaining('confirmed by 0 of 1 replica within 50 ms'),
      };
      await expect(store.setIfAbsent('k', 'v', 10_000)).rejects.toMatchObject(unconfirmed);
      await expect(store.set('k', 'w', 10_000)).rejects.toMatchObject(unconfirmed);
      await expect(store.compareAndSet('k', 'w', 'x', 10_000)).rejects.toMatchObject(unconfirmed);
      await expect(store.compareAndDelete('k', 'x')).rejects.toMatchObject(unconfirmed);
      // A write that changed nothing waits for nothing; reads never wait.
      expect(await store.setIfAbsent('held', 'v', 10_000).catch(() => 'refused')).toBe('refused');
      expect(await store.setIfAbsent('held', 'v', 10_000)).toBe(false);
      expect(await store.compareAndSet('held', 'other', 'x', 10_000)).toBe(false);
      expect(await store.get('held')).toBe('v');
    }
    // With a replica attached, the same writes count.
    const replica = await startRedisServer({ args: ['--replicaof', '127.0.0.1', String(new URL(redis.url).port)] });
    closers.push(() => replica.stop());
    const store = createRedisStore(io, { prefix: `confirm${++prefixes}:`, confirmReplicas: 1, confirmTimeoutMs: 5000 });
    await expect
      .poll(async () => store.setIfAbsent('k', 'v', 10_000).catch(() => 'unconfirmed'), { timeout: 10_000 })
      .not.toBe('unconfirmed');
    expect(await store.compareAndSet('k', 'v', 'w', 10_000)).toBe(true);
  });

  it('confirmReplicas refused at creation: not a whole count, a time out of range, a Cluster, a client without any-command', () => {
    const io = new IoRedis({ lazyConnect: true });
    const bad: RedisStoreOptions[] = [
      { confirmReplicas: -1 },
      { confirmReplicas: 0.5 },
      { confirmReplicas: 17 },
      { confirmReplicas: 1, confirmTimeoutMs: 0 },
      { confirmReplicas: 1, confirmTimeoutMs: 10_001 },
    ];
    for (const options of bad)
      expect(() => createRedisStore(io, options), JSON.stringify(options)).toThrow(
        expect.objectContaining({ code: 'invalid_configuration' }),
      );
    const cluster = Object.assign(new IoRedis({ lazyConnect: true }), { isCluster: true });
    expect(() => createRedisStore(cluster, { confirmReplicas: 1 })).toThrow(/on Redis Cluster, WAIT would not reach/);
    const { get, set, del } = { get: async () => null, set: async () => 'OK', del: async () => 1 };
    const bare = { get, set, del, eval: async () => 1 };
    expect(() => createRedisStore(bare, { confirmReplicas: 1 })).toThrow(/can send any command/);
    expect(() => createRedisStore(bare)).not.toThrow();
  });

  it('a client that never connects: ready() rejects with store_unavailable after readyTimeoutMs', async () => {
    const port = await freePort(); // nothing listens there
    const io = new IoRedis(port, '127.0.0.1', { enableOfflineQueue: false, retryStrategy: () => 20 });
    io.on('error', () => {});
    const nr = createClient({
      url: `redis://127.0.0.1:${port}`,
      disableOfflineQueue: true,
      socket: { reconnectStrategy: () => 20 },
    });
    nr.on('error', () => {});
    void nr.connect().catch(() => {});
    try {
      for (const client of [io, nr]) {
        const started = Date.now();
        await expect(createRedisStore(client, { readyTimeoutMs: 300 }).ready()).rejects.toMatchObject({
          code: 'store_unavailable',
          message: expect.stringContaining('still connecting after 300 ms'),
        });
        expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      }
    } finally {
      io.disconnect();
      nr.destroy();
    }
  });
});

describe.skipIf(!haveRedis)('a fleet on one Redis (instances in one process)', () => {
  let emulator: Emulator;
  const servers: Server[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
    await emulator?.close();
  });
  // Every test of the fleet runs on its own emulated service, its account limit off (as the client's, in instance()).
  beforeEach(async () => {
    emulator = await startEmulator({ accountRequestsPerSecond: 0 });
  });

  /** An instance: its own token source, client and handlers, on the shared store. */
  function instance(
    store: Store,
    extra: {
      lockLeaseMs?: number;
      idempotencyLeaseMs?: number;
      idempotencyWaitMs?: number;
      tokenAttempts?: number;
      /** When each wait for the token would end, by the clock (the sleep itself is skipped). */
      tokenWakes?: number[];
      storeTimeoutMs?: number;
    } = {},
  ) {
    const tokenSource = tokenSourceOn(emulator, {
      store,
      sleep: async (ms) => void extra.tokenWakes?.push(Date.now() + ms),
      ...(extra.lockLeaseMs ? { lockLeaseMs: extra.lockLeaseMs } : {}),
      ...(extra.tokenAttempts ? { maxAttempts: extra.tokenAttempts } : {}),
      ...(extra.storeTimeoutMs ? { storeTimeoutMs: extra.storeTimeoutMs } : {}),
    });
    const client = createDeviceRiskClient({
      tokenSource,
      ...emulator.serviceUrls,
      userAgent: UA,
      maxAttempts: 1,
      sleep: async () => {},
      // The emulator's account limit is off here: so is the client's.
      limits: { accountRequestsPerSecond: 100, accountBurst: 50 },
    });
    const errors: unknown[] = [];
    const handler = createDeviceRiskHandler({
      answer: 'checked',
      client,
      store,
      allowedOrigins: [SHOP],
      workflowKey: 10020,
      resolveCustomer: (request) => ({ customerInternalReference: request.headers.get('x-order') ?? 'order-1' }),
      onError: (error) => errors.push(error),
      ...(extra.idempotencyLeaseMs ? { idempotencyLeaseMs: extra.idempotencyLeaseMs } : {}),
      ...(extra.idempotencyWaitMs ? { idempotencyWaitMs: extra.idempotencyWaitMs } : {}),
      ...(extra.storeTimeoutMs ? { storeTimeoutMs: extra.storeTimeoutMs } : {}),
    });
    return { tokenSource, client, handler, errors };
  }
  const post = (key: string, blackbox = BLACKBOX, order = 'order-1') =>
    new Request('https://shop.example/device-risk', {
      method: 'POST',
      headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': key, 'x-order': order },
      body: JSON.stringify({ blackbox }),
    });

  it('twenty instances starting together fetch one token', async () => {
    const store = await redisStore();
    const tokens = await Promise.all(Array.from({ length: 20 }, () => instance(store).tokenSource.getToken()));
    expect(new Set(tokens).size).toBe(1);
    expect(emulator.inspect.requests('token')).toBe(1);
  });

  it('a full Redis (noeviction): token calls fail at once as store_full, none reaches the service; then one does', async () => {
    const admin = await connect(redis.url);
    clients.push(admin);
    const { tokenSource } = instance(await redisStore());
    // Full: with a limit below what it holds, Redis refuses every write (OOM), whatever expires meanwhile.
    await admin.configSet('maxmemory', '1');
    try {
      for (let i = 0; i < 5; i++) {
        await expect(tokenSource.getToken()).rejects.toMatchObject({
          code: 'store_full',
          retryAfter: 5,
          message: expect.stringContaining('Redis is full (maxmemory)'),
        });
      }
      expect(emulator.inspect.requests('token')).toBe(0);
    } finally {
      await admin.configSet('maxmemory', '0');
    }
    await tokenSource.getToken();
    await tokenSource.getToken();
    expect(emulator.inspect.requests('token')).toBe(1);
  });

  it('a token lock whose holder died is taken over after its lease, not waited on for ever', async () => {
    const store = await redisStore();
    // A dead instance's lock: nobody renews it.
    const lockKey = `${await storeNamespace(emulator.clientId, emulator.clientSecret, emulator.tokenUrl)}:token-lock`;
    await store.set(lockKey, 'dead-instance', 300);
    const started = Date.now();
    expect(await instance(store, { lockLeaseMs: 300 }).tokenSource.getToken()).toEqual(expect.any(String));
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(emulator.inspect.requests('token')).toBe(1);
  });

  it('a 429 seen by one instance makes the others back off instead of asking again', async () => {
    const store = await redisStore();
    emulator.faults.fail('token', { status: 429, times: 1 }); // Retry-After: 1
    const asked = Date.now();
    // a gives up after its one attempt (and releases the lock); b learns of the 429 only from the store.
    await expect(instance(store, { tokenAttempts: 1 }).tokenSource.getToken()).rejects.toMatchObject({
      code: 'rate_limited',
      retryAfter: 1,
    });
    const wakes: number[] = [];
    expect(await instance(store, { tokenWakes: wakes }).tokenSource.getToken()).toEqual(expect.any(String));
    // b waited once, until what was left of the 1 s Retry-After had passed (by the clock: how
    // long a busy machine took to get b there is not the point; 50 ms for the TTL's rounding).
    expect(wakes).toHaveLength(1);
    expect(wakes[0]).toBeGreaterThanOrEqual(asked + 1000 - 50);
    expect(emulator.inspect.requests('token')).toBe(2); // the 429 and one success, after the wait
  });

  it('the token limit of 10 a second holds for the fleet', async () => {
    const store = await redisStore();
    const fleet = Array.from({ length: 4 }, () => instance(store).tokenSource);
    const started = Date.now();
    for (let i = 0; i < 13; i++) {
      await fleet[i % 4]!.invalidate();
      await fleet[i % 4]!.getToken();
    }
    expect(emulator.inspect.requests('token')).toBe(13); // no 429, no retry
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it('a retry on instance B after a failed upload on instance A resumes: one transaction, one upload', async () => {
    const store = await redisStore();
    const a = instance(store);
    const b = instance(store);
    emulator.faults.fail('upload', { status: 503 });
    expect((await a.handler(post('fleet-key-0001'))).status).toBe(503);
    const retried = await b.handler(post('fleet-key-0001'));
    expect(retried.status).toBe(200);
    expect(emulator.inspect.transactions()).toHaveLength(1);
    expect(emulator.inspect.transactions()[0]!.blackboxes).toEqual([BLACKBOX]);
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
    // A third try on A gets the stored answer.
    expect(await (await a.handler(post('fleet-key-0001'))).json()).toEqual(await retried.clone().json());
    expect(emulator.inspect.requests('finalize')).toBe(1);
  });

  it('the transaction token is sealed in the store: Redis never holds it in clear text', async () => {
    const store = await redisStore('sealed:');
    const a = instance(store);
    emulator.faults.fail('finalize', { status: 500 });
    await a.handler(post('fleet-key-seal'));
    const keys = await store.client.keys('sealed:*');
    const values = await Promise.all(keys.map((k) => store.client.get(k)));
    const record = values.find((v) => v?.includes('fingerprint'))!;
    const sealed = (JSON.parse(JSON.parse(record).transaction) as { token: string }).token;
    expect(sealed).toMatch(/^v1\./);
    const token = await a.client.openTransaction(JSON.parse(record).transaction).then((tx) => tx.token);
    expect(token.length).toBeGreaterThan(10);
    for (const value of values) expect(value).not.toContain(token);
    // Another client secret cannot open it.
    const other = tokenSourceOn(emulator, { clientSecret: 'another-secret' });
    await expect(other.unseal(sealed)).rejects.toMatchObject({ code: 'invalid_response' });
  });

  it("the same key on two instances at once: one transaction; the waiter gets the owner's answer", async () => {
    emulator.faults.latency('upload', 300);
    const store = await redisStore();
    const [a, b] = [instance(store), instance(store)];
    const answers = await Promise.all([a.handler(post('fleet-key-0002')), b.handler(post('fleet-key-0002'))]);
    expect(answers.map((r) => r.status)).toEqual([200, 200]);
    expect(await answers[0].json()).toEqual(await answers[1].json());
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
  });

  it('a working owner renews its lease: a step longer than the lease is not taken over', async () => {
    emulator.faults.latency('upload', 900);
    const store = await redisStore();
    const [a, b] = [instance(store, { idempotencyLeaseMs: 300 }), instance(store, { idempotencyLeaseMs: 300 })];
    const owner = a.handler(post('fleet-key-0007'));
    await new Promise((r) => setTimeout(r, 100));
    const waiter = await b.handler(post('fleet-key-0007'));
    expect([(await owner).status, waiter.status]).toEqual([200, 200]);
    expect(emulator.inspect.requests('upload')).toBe(1);
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
  });

  it('a waiter answers 409 with Retry-After when the owner takes longer than idempotencyWaitMs', async () => {
    emulator.faults.latency('upload', 600);
    const store = await redisStore();
    const [a, b] = [instance(store), instance(store, { idempotencyWaitMs: 200 })];
    const owner = a.handler(post('fleet-key-0003'));
    await new Promise((r) => setTimeout(r, 100));
    const waiter = await b.handler(post('fleet-key-0003'));
    expect(waiter.status).toBe(409);
    expect(waiter.headers.get('retry-after')).toBe('1');
    expect(await waiter.json()).toMatchObject({ error: { code: 'idempotency_key_in_use' } });
    expect((await owner).status).toBe(200);
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
  });

  it('another body with the same key is refused (422) on every instance', async () => {
    const store = await redisStore();
    const [a, b] = [instance(store), instance(store)];
    expect((await a.handler(post('fleet-key-0004'))).status).toBe(200);
    for (const other of [a, b]) {
      const refused = await other.handler(post('fleet-key-0004', BLACKBOX.replace('abc', 'abd')));
      expect(refused.status).toBe(422);
      expect(await refused.json()).toMatchObject({ error: { code: 'idempotency_key_reused' } });
    }
    expect((await b.handler(post('fleet-key-0004', BLACKBOX, 'order-2'))).status).toBe(422);
    expect(emulator.inspect.transactions()).toHaveLength(1);
  });

  it('a key whose owner died is taken over after its lease, resuming from the stored transaction', async () => {
    const store = await redisStore();
    const a = instance(store);
    emulator.faults.fail('upload', { status: 503 });
    await a.handler(post('fleet-key-0005')); // leaves a transaction in the record
    const leaseKey =
      (await store.client.keys('*fleet-key-0005*')).find((k) => !k.endsWith(':lease'))!.replace(/^t\d+:/, '') +
      ':lease';
    await store.set(leaseKey, 'dead-instance', 400);
    const started = Date.now();
    const b = instance(store, { idempotencyLeaseMs: 400 });
    const answer = await b.handler(post('fleet-key-0005'));
    expect(answer.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
  });

  it('on a Redis that may evict keys, a checkout is refused (500 invalid_configuration) before any call upstream', async () => {
    const admin = await connect(redis.url);
    clients.push(admin);
    const a = instance(await redisStore());
    await admin.configSet('maxmemory-policy', 'allkeys-lru');
    try {
      const refused = await a.handler(post('fleet-key-evict'));
      expect(refused.status).toBe(500);
      expect(await refused.json()).toMatchObject({ error: { code: 'invalid_configuration' } });
      expect(a.errors).toContainEqual(
        expect.objectContaining({ message: expect.stringContaining('Set maxmemory-policy noeviction') }),
      );
      expect(emulator.inspect.requests('accountCreate')).toBe(0);
    } finally {
      await admin.configSet('maxmemory-policy', 'noeviction');
    }
    expect((await a.handler(post('fleet-key-evict'))).status).toBe(200);
  });

  it('a checkout on ioredis: one transaction, and a retry gets the first answer', async () => {
    const store = await ioredisStore();
    const [a, b] = [instance(store), instance(store)];
    const first = await a.handler(post('fleet-key-io'));
    expect(first.status).toBe(200);
    const again = await b.handler(post('fleet-key-io'));
    expect(await again.json()).toEqual(await first.json());
    expect(emulator.inspect.transactions()).toHaveLength(1);
  });

  it('Redis frozen for longer than the lease while the create is out: the owner stops before its upload, and the retry resumes (one transaction)', async () => {
    const store = await redisStore();
    const a = instance(store, { idempotencyLeaseMs: 600, storeTimeoutMs: 200 });
    const b = instance(store, { idempotencyLeaseMs: 600, storeTimeoutMs: 200 });
    emulator.faults.latency('accountCreate', 1200);
    const first = a.handler(post('fleet-key-frozen'));
    await expect.poll(() => emulator.inspect.requests('accountCreate'), { timeout: 10_000 }).toBe(1);
    redis.pause();
    try {
      // Past the lease, with the create still out: no renewal can be confirmed.
      await new Promise((r) => setTimeout(r, 900));
    } finally {
      redis.resume();
    }
    const stopped = await first;
    expect([409, 503]).toContain(stopped.status);
    expect(stopped.headers.get('retry-after')).toBe('1');
    expect(emulator.inspect.requests('upload')).toBe(0);
    emulator.faults.latency('accountCreate', 0);
    expect((await b.handler(post('fleet-key-frozen'))).status).toBe(200);
    expect(emulator.inspect.transactions()).toHaveLength(1);
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
    expect(emulator.inspect.requests('upload')).toBe(1);
  });

  it('Redis stopped while the create is out: answered 503 long before the browser gives up; once Redis is back the made transaction is recorded and the retry resumes it', async () => {
    const store = await redisStore();
    const a = instance(store, { idempotencyLeaseMs: 1000, idempotencyWaitMs: 1000, storeTimeoutMs: 200 });
    emulator.faults.latency('accountCreate', 300);
    const started = performance.now();
    const first = a.handler(post('fleet-key-stopped'));
    await expect.poll(() => emulator.inspect.requests('accountCreate'), { timeout: 10_000 }).toBe(1);
    await redis.stop();
    let answer: Response;
    try {
      answer = await first;
    } finally {
      await redis.restart();
    }
    // The browser package gives its POST 10 s.
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(emulator.inspect.requests('upload')).toBe(0);
    emulator.faults.latency('accountCreate', 0);
    await expect
      .poll(async () => (await a.handler(post('fleet-key-stopped'))).status, { timeout: 30_000, interval: 200 })
      .toBe(200);
    expect(emulator.inspect.transactions()).toHaveLength(1);
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
    expect(emulator.inspect.requests('upload')).toBe(1);
    expect(a.errors).not.toContainEqual(expect.objectContaining({ code: 'orphaned_transaction' }));
  });

  it('while Redis is away: 503 store_unavailable with Retry-After, nothing sent upstream; then it recovers by itself', async () => {
    const store = await redisStore();
    const a = instance(store);
    await redis.stop();
    try {
      const down = await a.handler(post('fleet-key-0006'));
      expect(down.status).toBe(503);
      expect(down.headers.get('retry-after')).toBe('1');
      expect(await down.json()).toMatchObject({ error: { code: 'store_unavailable' } });
      expect(a.errors).toContainEqual(expect.objectContaining({ code: 'store_unavailable' }));
      expect(JSON.stringify(a.errors)).not.toContain(emulator.clientSecret);
      expect(emulator.inspect.requests('accountCreate')).toBe(0);
    } finally {
      await redis.restart();
    }
    await expect.poll(() => store.client.isReady).toBe(true);
    expect((await a.handler(post('fleet-key-0006'))).status).toBe(200);
    expect(emulator.inspect.transactions()).toHaveLength(1);
  });

  let pauser: Client | undefined;
  // A Redis that hangs, rather than refuses: every store call has a time limit, so the
  // request is answered 503 with Retry-After as with a Redis that is down. The clients are
  // set up as the README's (no offline queue), so a paused server leaves them connected.
  describe.each([
    ['frozen by SIGSTOP', async () => redis.pause(), async () => redis.resume()],
    // Every command waits out a pause, CLIENT UNPAUSE too: the pause ends by itself, and a PING
    // sent during it answers once it has.
    [
      'paused by CLIENT PAUSE',
      async () => {
        pauser = await connect(redis.url);
        clients.push(pauser);
        await pauser.sendCommand(['CLIENT', 'PAUSE', '3000', 'ALL']);
      },
      async () => void (await pauser!.ping()),
    ],
  ] as Array<[string, () => Promise<void>, () => Promise<void>]>)('while Redis is %s', (_, hang, release) => {
    it(
      'a checkout is answered 503 store_unavailable with Retry-After, and a callback 503; nothing is sent upstream',
      { timeout: 30_000 },
      async () => {
        const store = await redisStore();
        const a = instance(store, { storeTimeoutMs: 300 });
        const callbacks = createCallbackHandler({
          client: a.client,
          store,
          storeTimeoutMs: 300,
          allowedSources: 'any',
          onResult: () => {},
        });
        await hang();
        try {
          const answer = await a.handler(post('fleet-key-hang'));
          expect(answer.status).toBe(503);
          expect(answer.headers.get('retry-after')).toBe('1');
          expect(await answer.json()).toMatchObject({ error: { code: 'store_unavailable' } });
          const callback = await callbacks(
            new Request('https://shop.example/callback', {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify(callbackBody(emulator.retrievalUrl)),
            }),
          );
          expect(callback.status).toBe(503);
          expect(emulator.inspect.requests('accountCreate')).toBe(0);
        } finally {
          await release();
        }
        await expect.poll(() => store.client.isReady).toBe(true);
        expect((await a.handler(post('fleet-key-hang'))).status).toBe(200);
        expect(emulator.inspect.transactions()).toHaveLength(1);
      },
    );
  });

  it('a callback delivered to every instance calls onResult once for the fleet', async () => {
    const store = await redisStore();
    const results: CallbackResult[] = [];
    const urls: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { client } = instance(store);
      const handler = createCallbackHandler({
        client,
        store,
        allowedSources: 'any',
        onResult: async (r) => void results.push(r),
      });
      const server = createServer(toNodeHandler(handler));
      servers.push(server);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      urls.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`);
    }
    const { client } = instance(store);
    const tx = await client.createAccount({
      customerInternalReference: 'order-cb',
      workflowDefinition: { key: 10011 },
      callbackUrl: urls[0]!,
    });
    await client.uploadBlackbox(tx, BLACKBOX);
    await client.finalize(tx);
    await expect.poll(() => emulator.inspect.callbacks()[0]?.delivered).toBe(true);
    const body = JSON.stringify(emulator.inspect.callbacks()[0]!.body);
    const copies = await Promise.all(
      [...urls, ...urls].map((url) =>
        fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body }),
      ),
    );
    expect(copies.every((r) => r.status === 200)).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    expect(results.map((r) => r.workflowExecutionId)).toEqual([tx.workflowExecutionId]);
  });

  /** A finalized transaction on the emulator and its callback's body, as the service sends it. */
  async function processedCallback(store: Store) {
    const { client } = instance(store);
    const tx = await client.createAccount({
      customerInternalReference: 'order-sweep',
      workflowDefinition: { key: 10011 },
      callbackUrl: 'http://127.0.0.1:9/unused',
    });
    await client.uploadBlackbox(tx, BLACKBOX);
    await client.finalize(tx);
    await expect.poll(() => emulator.inspect.callbacks()[0]?.body).toBeTruthy();
    const body = JSON.stringify(emulator.inspect.callbacks()[0]!.body);
    const request = () =>
      new Request('https://shop.example/callback', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
    return { client, tx, request };
  }

  it('Redis loses its data (restarted without persistence): the documented outcome, a second transaction and a second onResult', async () => {
    // A Redis of its own, as one runs without appendonly (the later option wins).
    const volatile = await startRedisServer({ args: ['--appendonly', 'no'] });
    closers.push(() => volatile.stop());
    const client = await connect(volatile.url);
    clients.push(client);
    const store = Object.assign(createRedisStore(client, { prefix: 'lost:' }), { client });
    const a = instance(store);
    expect((await a.handler(post('fleet-key-lost', BLACKBOX, 'order-lost'))).status).toBe(200);
    const { request } = await processedCallback(store);
    const results: string[] = [];
    const callbacks = createCallbackHandler({
      client: a.client,
      store,
      allowedSources: 'any',
      onResult: (r) => void results.push(r.workflowExecutionId),
    });
    await callbacks(request());
    await callbacks.idle();
    await volatile.restart();
    await expect.poll(() => client.isReady).toBe(true);
    expect(await client.dbSize()).toBe(0);
    // The key is forgotten: its retry makes a transaction of its own, which nothing reports.
    expect((await a.handler(post('fleet-key-lost', BLACKBOX, 'order-lost'))).status).toBe(200);
    const made = emulator.inspect.transactions().filter((tx) => tx.customerInternalReference === 'order-lost');
    expect(made.map((tx) => tx.blackboxes.length)).toEqual([1, 1]);
    expect(a.errors).toEqual([]);
    // The callback's record is forgotten: a copy from the service calls onResult again.
    await callbacks(request());
    await callbacks.idle();
    expect(results).toHaveLength(2);
    expect(results[0]).toBe(results[1]);
    await callbacks.close();
  });

  it('an instance that dies inside onResult: another instance sweeps the callback a lease later and delivers it, once', async () => {
    const prefix = `sweep${++prefixes}:`;
    const [storeA, storeB] = [await redisStore(prefix), await redisStore(prefix)];
    const { client, tx, request } = await processedCallback(storeB);
    const calls: string[] = [];
    const a = createCallbackHandler({
      client,
      store: storeA,
      leaseMs: 600,
      allowedSources: 'any',
      onError: () => {},
      onResult: () => new Promise(() => calls.push('a')),
    });
    expect((await a(request())).status).toBe(200);
    await expect.poll(() => calls).toEqual(['a']);
    // Its process is gone: no renewal reaches Redis again.
    storeA.client.destroy();
    await a.close();
    const b = createCallbackHandler({
      client,
      store: storeB,
      leaseMs: 600,
      allowedSources: 'any',
      onResult: (r) => void calls.push(`b:${r.workflowExecutionId}:${JSON.stringify(r.details?.deviceRisk)}`),
    });
    await expect.poll(() => sweptCount(b, calls)).toBe(2);
    expect(calls[1]).toMatch(new RegExp(`^b:${tx.workflowExecutionId}:\\{.*"decision"`));
    expect(await sweptCount(b, calls)).toBe(2);
    await b.close();
  });

  it(
    'a retry that meets Redis stopped, whose instance then dies: swept after the restart (AOF) and delivered',
    { timeout: 30_000 },
    async () => {
      const store = await redisStore();
      const { client, request } = await processedCallback(store);
      const errors: unknown[] = [];
      let aCalls = 0;
      const a = createCallbackHandler({
        client,
        store,
        leaseMs: 500,
        storeTimeoutMs: 300,
        retryDelayMs: 200,
        allowedSources: 'any',
        onError: (e) => errors.push(e),
        onResult: () => {
          aCalls++;
          throw new Error('busy');
        },
      });
      // (A callback met by Redis stopped is answered 503 and delivered from memory: the
      // handler's stub tests. Here it is recorded, and its retry meets Redis stopped.)
      expect((await a(request())).status).toBe(200);
      await a.idle();
      expect(aCalls).toBe(1);
      // Redis goes away while the retry waits; the instance dies before Redis is back.
      await redis.stop();
      await new Promise((r) => setTimeout(r, 300));
      await a.close();
      await redis.restart();
      await expect.poll(() => store.client.isReady).toBe(true);
      const delivered: string[] = [];
      const b = createCallbackHandler({
        client,
        store,
        leaseMs: 500,
        allowedSources: 'any',
        onResult: (r) => void delivered.push(r.workflowExecutionId),
      });
      await expect.poll(() => sweptCount(b, delivered)).toBe(1);
      expect(aCalls).toBe(1);
      await b.close();
    },
  );
});

/** A well-formed callback for made-up ids, on the emulator's retrieval origin. */
function callbackBody(retrievalUrl: string) {
  const account = '0f6a1c2e-1111-4a4a-8b8b-000000000001';
  const execution = '0f6a1c2e-2222-4a4a-8b8b-000000000002';
  const origin = new URL(retrievalUrl).origin;
  return {
    callbackSentAt: new Date().toISOString(),
    workflowExecution: {
      id: execution,
      href: `${origin}/api/v1/accounts/${account}/workflow-executions/${execution}`,
      definitionKey: 10011,
      status: 'PROCESSED',
    },
    account: { id: account, href: `${origin}/api/v1/accounts/${account}` },
  };
}
