// A failover while the old master stays reachable (SENTINEL FAILOVER, as a network partition
// or an operator's switch does): clients still on the old master write there until they notice,
// and what the old master took is gone when it resyncs as a replica. With `confirmReplicas: 1`
// an add no replica confirmed is answered 503 (the browser posts again), never 202 and lost;
// the store's `confirmReplicas: 1` does the same for each key's record and lease, so that a
// job run again after the switch finds its check's record (docs/fleet.md#sentinel). Real redis-server: a master, a replica and a Sentinel.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../../src/emulator/index.js';
import { DeviceRiskError } from '../../../src/server/errors.js';
import { isHeldAnswer } from '../../../src/server/parts.js';
import { createBullmqQueue } from '../../../src/server/queue/bullmq.js';
import { createRedisStore } from '../../../src/server/store/redis.js';
import { startRedisSentinel, startRedis } from '../../support/redis-server.mjs';
import { haveRedis } from '../../support/redis.js';
import { checkoutFor, clientOn, fleetHandlerOn, orderTellingHandler } from '../../support/kit.js';

let emulator: Emulator | undefined;
const closers: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  if (haveRedis) emulator = await startEmulator({ accountRequestsPerSecond: 0 });
});
afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
  await emulator?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!haveRedis)('createBullmqQueue confirmReplicas', () => {
  it('refused at start unless a whole count on one master, with a time in range', () => {
    const connection = { host: '127.0.0.1', port: 1, lazyConnect: true };
    const cluster = Object.assign(new Redis({ lazyConnect: true }), { isCluster: true });
    closers.push(async () => cluster.disconnect());
    for (const bad of [
      { confirmReplicas: -1 },
      { confirmReplicas: 1.5 },
      { confirmReplicas: 17 },
      { confirmReplicas: 1, confirmTimeoutMs: 0 },
      { confirmReplicas: 1, confirmTimeoutMs: 10_001 },
    ])
      expect(() => createBullmqQueue({ connection, ...bad }), JSON.stringify(bad)).toThrow(
        expect.objectContaining({ code: 'invalid_configuration' }),
      );
    expect(() => createBullmqQueue({ connection: cluster, prefix: '{bbc}', confirmReplicas: 1 })).toThrow(
      /on Redis Cluster, WAIT would not reach/,
    );
  });

  it('a master with no replica to confirm: the add unconfirmed, and its retry found held but still unconfirmed', async () => {
    const server = await startRedis();
    const connection = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: null });
    const errors: unknown[] = [];
    const queue = createBullmqQueue({
      connection,
      prefix: 'retried',
      confirmReplicas: 1,
      confirmTimeoutMs: 100,
      onError: (error) => errors.push(error),
    });
    closers.push(async () => {
      await queue.close();
      connection.disconnect();
      await server.stop();
    });
    const job = {
      key: 'key-retried',
      fingerprint: 'f',
      blackbox: 'bb',
      customer: { customerInternalReference: 'o' },
      acceptedAt: 0,
    };
    expect(await queue.add(job)).toBe('unconfirmed');
    expect(await queue.add(job)).toBe('present-unconfirmed');
    expect(await queue.add({ ...job, fingerprint: 'g' })).toBe('conflict');
    expect(errors.map((e) => String((e as Error).message))).toEqual([
      expect.stringMatching(/confirmed by 0 of 1 replica within 100 ms/),
      expect.stringMatching(/confirmed by 0 of 1 replica within 100 ms/),
    ]);
  });

  it('a master with no replica to confirm: each checkout 503 store_unavailable, told, none 202; held all the same, checked once', async () => {
    const server = await startRedis();
    const connection = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: null });
    const storeClient = new Redis(server.port, '127.0.0.1', { enableOfflineQueue: false });
    const errors: unknown[] = [];
    const told: string[] = [];
    const queue = createBullmqQueue({
      connection,
      prefix: 'lonely',
      confirmReplicas: 1,
      confirmTimeoutMs: 100,
      onError: (error) => errors.push(error),
    });
    const handler = orderTellingHandler(
      { client: clientOn(emulator!), store: createRedisStore(storeClient, { prefix: 'lonely:' }), queue },
      errors,
      told,
    );
    closers.push(async () => {
      await handler.close();
      connection.disconnect();
      storeClient.disconnect();
      await server.stop();
    });
    // The check outlasts the add's wait for a replica: the answer is the add's, not the check's.
    emulator!.faults.latency('accountCreate', 1000);
    closers.push(async () => emulator!.faults.clear());
    const answer = await handler(checkoutFor('lonely-0001'));
    emulator!.faults.clear();
    expect([answer.status, answer.headers.get('retry-after')]).toEqual([503, '1']);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('store_unavailable');
    const codes = errors.map((e) => (e as DeviceRiskError).code);
    expect(codes).toContain('store_unavailable');
    expect(errors.map((e) => String((e as Error).message))).toEqual([
      expect.stringMatching(/confirmed by 0 of 1 replica within 100 ms/),
      expect.stringMatching(/held but not confirmed/),
    ]);
    // Written all the same, and it may run: a door in front keeps its order for it (the gateway's).
    expect(isHeldAnswer(answer)).toBe(true);
    await expect.poll(() => told, { timeout: 20_000, interval: 100 }).toEqual(['lonely-0001']);
    // The browser's retry under the key finds the check done: its decision, not a second check.
    const retry = await handler(checkoutFor('lonely-0001'));
    expect(retry.status).toBe(200);
    expect(
      emulator!.inspect.transactions().filter((tx) => tx.customerInternalReference === 'lonely-0001'),
    ).toHaveLength(1);
  });

  it('SENTINEL FAILOVER under traffic, the old master reachable: every checkout 202 at last, each checked once and told', async () => {
    const sentinel = await startRedisSentinel();
    closers.push(() => sentinel.stop());
    const { sentinels, name } = sentinel;
    const errors: unknown[] = [];
    const told: string[] = [];
    // failoverDetector: the clients move to the promoted master when the Sentinel says so.
    const storeClient = new Redis({ sentinels, name, enableOfflineQueue: false, failoverDetector: true });
    const bull = new Redis({ sentinels, name, maxRetriesPerRequest: null, failoverDetector: true });
    for (const client of [storeClient, bull]) client.on('error', () => {});
    // The keys' records and leases confirmed too: a record lost with the old master would let
    // the job, confirmed on the new one, make a second transaction.
    const store = createRedisStore(storeClient, { prefix: 'switch:', confirmReplicas: 1, confirmTimeoutMs: 500 });
    await store.ready();
    const queue = createBullmqQueue({
      connection: bull,
      prefix: 'switch',
      confirmReplicas: 1,
      confirmTimeoutMs: 500,
      onError: (e) => errors.push(e),
    });
    const handler = fleetHandlerOn(emulator!, { store, queue }, errors, told);
    closers.push(async () => {
      await handler.close();
      storeClient.disconnect();
      bull.disconnect();
    });
    /** As the browser package does: a 503 is posted again after a moment, for up to 30 s. */
    async function checkout(key: string): Promise<number> {
      const end = Date.now() + 30_000;
      for (;;) {
        const answer = await handler(checkoutFor(key));
        if (answer.status !== 503 || Date.now() > end) return answer.status;
        await sleep(200);
      }
    }
    // A checkout every 50 ms for 4 s, the failover ordered after the first second.
    const keys = Array.from({ length: 80 }, (_, i) => `switch-${String(i).padStart(4, '0')}`);
    const answers: Promise<number>[] = [];
    const switching = sleep(1000).then(() => sentinel.failover());
    for (const key of keys) {
      answers.push(checkout(key));
      await sleep(50);
    }
    await switching;
    expect(await Promise.all(answers)).toEqual(keys.map(() => 202));
    await expect.poll(() => [...told].sort(), { timeout: 60_000, interval: 500 }).toEqual([...keys].sort());
    const made = emulator!.inspect.transactions().filter((tx) => keys.includes(tx.customerInternalReference));
    expect(made.map((tx) => tx.customerInternalReference).sort()).toEqual([...keys].sort());
    expect(await sentinel.masterPort()).toBe(sentinel.replica.port);
  }, 120_000);
});
