// What the queue on BullMQ costs in Redis, measured on a real redis-server with MEMORY USAGE:
// the bytes one queued checkout holds (its BullMQ job, its place in the queue, its capture
// nonce's claim; the key's record once checked), under the bound docs/fleet.md states, so that queue bound × bytes
// per job is the Redis memory a shop gives; and nothing outlives its purpose: a job goes
// once checked, a record and the counters carry a TTL.
import { Redis as IoRedis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeviceRiskTransaction } from '../../../src/server/api/device-risk-client.js';
import { createCaptureNonce, createDeviceRiskHandler, type DeviceRiskClient } from '../../../src/server/index.js';
import { createBullmqQueue, DEFAULT_BULLMQ_MAX_QUEUED, jobIdOf } from '../../../src/server/queue/bullmq.js';
import { defaultMaxQueued } from '../../../src/server/endpoint/settings.js';
import { TOLD_TTL_MS } from '../../../src/server/callbacks/told.js';
import { createRedisStore } from '../../../src/server/store/redis.js';
import { haveRedis, startRedisServer, type RedisServer } from '../../support/redis.js';
import { plainSealing, stubTransaction } from '../../support/stub-client.js';

const SHOP = 'https://shop.example';
/** The largest blackbox the vendor's script writes: up to about 4,000 characters (docs/fleet.md, What Redis holds). */
const BLACKBOX = '0400' + 'nVQ+/abcdefgh'.repeat(307) + '==';
/** That size, and a blackbox of its own for each order (the endpoint refuses one used twice). */
const blackboxFor = (order: string) =>
  BLACKBOX.slice(0, -2 - order.length) + order.replace(/[^A-Za-z0-9]/g, 'x') + '==';
/**
 * The bounds docs/fleet.md states (#what-redis-holds): one queued checkout with a 4,000-character
 * blackbox, the key's record a checked checkout leaves for `idempotencyTtlMs`, and its end seen.
 */
const MAX_BYTES_PER_QUEUED = 8 * 1024;
const MAX_BYTES_PER_RECORD = 1024;
/** What the server holds in no key once a queue and its worker start (docs/fleet.md#what-redis-holds). */
const MAX_BYTES_SERVER_OWN = 1536 * 1024;
/** The same with Redis's latency tracking off: the scripts and the connections' buffers. */
const MAX_BYTES_SERVER_OWN_UNTRACKED = 256 * 1024;
/** One command's latency histogram (Redis 7's `latency-tracking`). */
const MAX_BYTES_PER_HISTOGRAM = 32 * 1024;

/**
 * What a server of its own holds in no key once one queue and its worker ran a job
 * (`used_memory` after less before, less the keys), with Redis's `latency-tracking` set, and
 * how many commands it ran (each has its histogram when tracking is on).
 */
async function serverOwnMemory(latencyTracking: 'yes' | 'no') {
  // A server of its own: what BullMQ loads into it is loaded once per server.
  const fresh = await startRedisServer();
  const probe = new IoRedis(fresh.url);
  const connection = new IoRedis(fresh.url, { maxRetriesPerRequest: null });
  const queue = createBullmqQueue({ connection, name: 'own', concurrency: 1, onError: () => {} });
  const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await probe.info('memory'))![1]);
  try {
    await probe.config('SET', 'latency-tracking', latencyTracking);
    const before = await usedMemory();
    const done: string[] = [];
    queue.process(async ({ key }) => {
      done.push(key);
      return { done: true };
    });
    const job = {
      key: 'key-own',
      fingerprint: 'f',
      blackbox: 'bb',
      customer: { customerInternalReference: 'order-own' },
      acceptedAt: Date.now(),
    };
    expect(await queue.add(job)).toBe('added');
    await expect.poll(async () => (await queue.counts()).queued, { timeout: 10_000 }).toBe(0);
    expect(done).toEqual(['key-own']);
    const inKeys = total(await keys(probe, '*'));
    const own = (await usedMemory()) - before - inKeys;
    const commands = (await probe.info('commandstats'))
      .split('\n')
      .filter((line) => line.startsWith('cmdstat_')).length;
    return { own, inKeys, commands };
  } finally {
    await queue.close();
    connection.disconnect();
    probe.disconnect();
    await fresh.stop();
  }
}
/** A checked checkout's two entries in the ends seen for ten minutes (its add and its key). */
const MAX_BYTES_PER_END_SEEN = 512;
const CHECKOUTS = 200;

let redis: RedisServer;
beforeAll(async () => {
  if (haveRedis) redis = await startRedisServer();
});
afterAll(async () => {
  await redis?.stop();
});

const client = () => {
  let n = 0;
  return {
    retrievalOrigin: 'https://retrieval.example',
    clientId: 'client-1',
    accountTimeoutMs: 500,
    createAccount: async () => stubTransaction(++n),
    uploadBlackbox: async () => {},
    finalize: async () => {},
    status: async () => 'PROCESSED',
    details: async (tx: DeviceRiskTransaction) => ({ workflowExecutionId: tx.workflowExecutionId }),
    ...plainSealing,
  } as unknown as DeviceRiskClient;
};

const SECRET = 'a-nonce-secret-of-at-least-32-characters';
/** A checkout as the page posts it with replay protection on: its blackbox and its capture nonce. */
const post = async (i: number) => {
  const order = `order-${String(i).padStart(6, '0')}`;
  return new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: {
      origin: SHOP,
      'content-type': 'application/json',
      'idempotency-key': `key-memory-${String(i).padStart(6, '0')}`,
      'x-order': order,
    },
    body: JSON.stringify({
      blackbox: blackboxFor(order),
      nonce: await createCaptureNonce({ secret: SECRET, subject: order }),
    }),
  });
};

/** Every key of `pattern` with its MEMORY USAGE (all its samples) and its PTTL. */
async function keys(redisClient: IoRedis, pattern: string) {
  const found = new Map<string, { bytes: number; pttl: number }>();
  let cursor = '0';
  do {
    const [next, batch] = await redisClient.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    for (const key of batch) {
      const bytes = Number(await redisClient.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
      found.set(key, { bytes, pttl: await redisClient.pttl(key) });
    }
  } while (cursor !== '0');
  return found;
}
const total = (found: Map<string, { bytes: number }>) => [...found.values()].reduce((sum, k) => sum + k.bytes, 0);

describe.skipIf(!haveRedis)('createBullmqQueue in Redis memory', () => {
  it('one queued checkout costs less than the stated bytes; checked, its job goes and its record expires', async () => {
    const bull = new IoRedis(redis.url, { maxRetriesPerRequest: null });
    const storeClient = new IoRedis(redis.url, { maxRetriesPerRequest: 1 });
    const probe = new IoRedis(redis.url);
    const queue = createBullmqQueue({ connection: bull, name: 'memory', prefix: 'mem', onError: () => {} });
    const results: string[] = [];
    const handler = createDeviceRiskHandler({
      client: client(),
      allowedOrigins: [SHOP],
      workflowKey: 10020,
      store: createRedisStore(storeClient, { prefix: 'memstore:' }),
      queue,
      checkoutsPerAddress: false,
      checkoutsPerCustomer: false,
      resolveCustomer: (request) => ({
        customerInternalReference: request.headers.get('x-order')!,
        userReference: 'user-000001',
      }),
      nonceSecret: SECRET,
      onError: () => {},
      onResult: (details) => void results.push(String(details.workflowExecutionId)),
    });
    try {
      // The queue held, as in a backlog: every checkout waits in Redis.
      await queue.queue.pause();
      // The queue's fixed keys (its meta, its id counter, its event stream) come with the first job.
      expect((await handler(await post(-1))).status).toBe(202);
      const before = await keys(probe, 'mem:*');
      const storeBefore = total(await keys(probe, 'memstore:*'));
      for (let i = 0; i < CHECKOUTS; i++) expect((await handler(await post(i))).status).toBe(202);
      const queued = await keys(probe, 'mem:*');
      // Each job's own hash, what each added to the queue's lists, sets and event stream, and its
      // capture nonce's claim in the store (the one key admission writes before the queue).
      const perQueued =
        (total(queued) - total(before) + total(await keys(probe, 'memstore:*')) - storeBefore) / CHECKOUTS;
      console.log(`bytes per queued checkout: ${Math.round(perQueued)}`);
      expect(perQueued).toBeGreaterThan(BLACKBOX.length);
      expect(perQueued).toBeLessThan(MAX_BYTES_PER_QUEUED);
      // The job carries the rules that end it: gone once done; a failed one within a day.
      const job = await queue.queue.getJob(await jobIdOf('key-memory-000000'));
      expect(job?.opts.removeOnComplete).toBe(true);
      expect(job?.opts.removeOnFail).toEqual({ age: 24 * 3600 });

      await queue.queue.resume();
      await expect.poll(() => results.length, { timeout: 60_000, interval: 200 }).toBe(CHECKOUTS + 1);
      await expect.poll(async () => (await queue.counts()).queued, { timeout: 10_000 }).toBe(0);
      const left = await keys(probe, 'mem:*');
      console.log(`bytes the queue keeps once drained (its event stream, counters): ${total(left)}`);
      // No job hash is left: each went with its check.
      expect([...left.keys()].filter((key) => /:bbc-[0-9a-f]{64}$/.test(key))).toEqual([]);
      // The drained counter expires by itself (three minutes after the last check).
      const drained = left.get('mem:memory:bbc-drained')!;
      expect(drained.pttl).toBeGreaterThan(0);
      expect(drained.pttl).toBeLessThanOrEqual(180_000);
      // The runs counted (a job run twice counts once) expire too, eleven minutes after the last.
      const counted = left.get('mem:memory:bbc-counted')!;
      expect(counted.pttl).toBeGreaterThan(600_000);
      expect(counted.pttl).toBeLessThanOrEqual(660_000);
      const perEndSeen = counted.bytes / (CHECKOUTS + 1);
      console.log(`bytes per checked checkout's end seen: ${Math.round(perEndSeen)}`);
      expect(perEndSeen).toBeLessThan(MAX_BYTES_PER_END_SEEN);
      // The key's record answers a retry for `idempotencyTtlMs` (24 h), then goes; the decision's
      // told marker, and the order a late callback is told with, outlive the service's callback
      // retries (48 h): every store key has a TTL.
      const store = await keys(probe, 'memstore:*');
      expect(store.size).toBeGreaterThanOrEqual(CHECKOUTS);
      for (const [key, { pttl }] of store) {
        expect(pttl, key).toBeGreaterThan(0);
        expect(pttl, key).toBeLessThanOrEqual(/:(told|order):/.test(key) ? TOLD_TTL_MS : 24 * 3_600_000);
      }
      const perRecord = total(store) / (CHECKOUTS + 1);
      console.log(`bytes per checked checkout's record and markers: ${Math.round(perRecord)}`);
      expect(perRecord).toBeLessThan(MAX_BYTES_PER_RECORD);
    } finally {
      await handler.close();
      bull.disconnect();
      storeClient.disconnect();
      probe.disconnect();
    }
  });

  it("the server's own memory for a queue and its worker, in no key: under the stated bound, most of it Redis's latency histograms", async () => {
    const tracked = await serverOwnMemory('yes');
    // Redis 7 keeps a latency histogram for each command it has run (`latency-tracking`, on by
    // default): a figure per command name, whatever the queues or the checkouts.
    const untracked = await serverOwnMemory('no');
    console.log(
      `bytes the server holds in no key: ${tracked.own} with latency tracking, ${untracked.own} without, ` +
        `${tracked.commands} commands run (in keys: ${tracked.inKeys})`,
    );
    expect(tracked.own).toBeLessThan(MAX_BYTES_SERVER_OWN);
    expect(untracked.own).toBeGreaterThan(0);
    expect(untracked.own).toBeLessThan(MAX_BYTES_SERVER_OWN_UNTRACKED);
    expect(tracked.commands).toBeGreaterThan(0);
    expect((tracked.own - untracked.own) / tracked.commands).toBeLessThan(MAX_BYTES_PER_HISTOGRAM);
  });

  it('by default the fleet holds what drains within the trust bound (900), and refuses the next at once', async () => {
    // The memory queue's default bound at the client's default limits: one rule for both.
    expect(DEFAULT_BULLMQ_MAX_QUEUED).toBe(defaultMaxQueued({ client: {} as DeviceRiskClient }));
    expect(DEFAULT_BULLMQ_MAX_QUEUED).toBe(900);
    const connection = new IoRedis(redis.url, { maxRetriesPerRequest: null });
    const queue = createBullmqQueue({ connection, name: 'bound', onError: () => {} });
    const job = (i: number) => ({
      key: `key-bound-${i}`,
      fingerprint: `f-${i}`,
      blackbox: 'bb',
      customer: { customerInternalReference: `order-${i}` },
      acceptedAt: Date.now(),
    });
    try {
      for (let i = 0; i < DEFAULT_BULLMQ_MAX_QUEUED; i += 50)
        expect(new Set(await Promise.all(Array.from({ length: 50 }, (_, j) => queue.add(job(i + j)))))).toEqual(
          new Set(['added']),
        );
      expect(await queue.add(job(DEFAULT_BULLMQ_MAX_QUEUED))).toBe('full');
    } finally {
      await queue.close();
      connection.disconnect();
    }
  });
});
