// The Redis store on a real Redis Cluster: three masters (redis-server with cluster-enabled,
// joined by redis-cli --cluster create), reached through node-redis createCluster and ioredis
// Cluster. Every operation touches one key, so no hash tags are needed: the keys of one
// checkout, one callback and the pending list land on all three masters, and still hold.
// BullMQ is another matter: its scripts touch several keys of the queue at once, so its prefix
// needs a hash tag, and the queue lives on one master; checkouts through it, end to end.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, createCluster } from 'redis';
import { Cluster } from 'ioredis';
import { startEmulator, type Emulator } from '../../../src/emulator/index.js';
import {
  createCallbackHandler,
  createDeviceRiskClient,
  createDeviceRiskHandler,
  createTokenSource,
  type Store,
} from '../../../src/server/index.js';
import { createRedisStore } from '../../../src/server/store/redis.js';
import { createBullmqQueue } from '../../../src/server/queue/bullmq.js';
import { startRedisCluster } from '../../support/redis-server.mjs';
import { haveRedis } from '../../support/redis.js';
import { checkoutFor, fleetHandlerOn } from '../../support/kit.js';
import { storeContract } from '../../support/store-contract.js';
import { callbackBodyOf } from '../../support/callback-body.js';

let cluster: Awaited<ReturnType<typeof startRedisCluster>> | undefined;
const closers: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  if (haveRedis) cluster = await startRedisCluster(3);
}, 60_000);
afterAll(async () => {
  for (const close of closers.splice(0)) await close().catch(() => {});
  await cluster?.stop();
});

let prefixes = 0;
async function nodeRedisCluster(prefix = `c${++prefixes}:`): Promise<Store> {
  const client = createCluster({ rootNodes: cluster!.rootNodes });
  client.on('error', () => {});
  await client.connect();
  closers.push(() => client.close());
  return createRedisStore(client, { prefix });
}
async function ioredisCluster(prefix = `io${++prefixes}:`): Promise<Store> {
  const client = new Cluster(
    cluster!.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
    { lazyConnect: true, enableOfflineQueue: false, redisOptions: { maxRetriesPerRequest: 0 } },
  );
  client.on('error', () => {});
  await client.connect();
  closers.push(() => client.quit());
  return createRedisStore(client, { prefix });
}

/** How many keys under `prefix` each master holds. */
async function keysPerMaster(prefix: string): Promise<number[]> {
  return Promise.all(
    cluster!.nodes.map(async (node) => {
      const admin = createClient({ url: node.url });
      await admin.connect();
      try {
        return (await admin.keys(`${prefix}*`)).length;
      } finally {
        await admin.close();
      }
    }),
  );
}

describe.skipIf(!haveRedis)('the Store contract on a 3-master Redis Cluster', () => {
  describe('node-redis createCluster', () => storeContract(() => nodeRedisCluster()));
  describe('ioredis Cluster', () => storeContract(() => ioredisCluster()));
});

describe.skipIf(!haveRedis)('a fleet on a 3-master Redis Cluster', () => {
  let emulator: Emulator | undefined;
  afterAll(async () => emulator?.close());

  function instance(store: Store) {
    const tokenSource = createTokenSource({
      clientId: emulator!.clientId,
      clientSecret: emulator!.clientSecret,
      tokenUrl: emulator!.tokenUrl,
      userAgent: 'AcmeShop Checkout/1.0',
      store,
    });
    const client = createDeviceRiskClient({
      tokenSource,
      ...emulator!.serviceUrls,
      userAgent: 'AcmeShop Checkout/1.0',
      // The emulator's account limit is off here: so is the client's (12 checkouts at once).
      limits: { accountRequestsPerSecond: 100, accountBurst: 50 },
    });
    const handler = createDeviceRiskHandler({
      answer: 'checked',
      client,
      store,
      allowedOrigins: ['https://shop.example'],
      workflowKey: 10020,
      reportStatus: false,
      resolveCustomer: (request) => ({ customerInternalReference: request.headers.get('x-order')! }),
    });
    return { client, handler };
  }

  it.each([
    ['node-redis', nodeRedisCluster],
    ['ioredis', ioredisCluster],
  ])(
    '%s: checkouts on two instances at once make one transaction per key; a callback whose instance died is swept by the other; the keys span every master',
    async (_, connect) => {
      emulator ??= await startEmulator({ accountRequestsPerSecond: 0 });
      const prefix = `fleet${++prefixes}:`;
      const [a, b] = [instance(await connect(prefix)), instance(await connect(prefix))];
      const keys = Array.from({ length: 12 }, (_, n) => `cluster-${prefix}${n}`);
      const answers = await Promise.all(
        keys.flatMap((key) => [a.handler(checkoutFor(key)), b.handler(checkoutFor(key))]),
      );
      expect(answers.map((r) => r.status).filter((s) => s !== 200)).toEqual([]);
      const made = emulator.inspect.transactions().filter((tx) => keys.includes(tx.customerInternalReference));
      expect(made.map((tx) => tx.customerInternalReference).sort()).toEqual([...keys].sort());
      expect(made.every((tx) => tx.blackboxes.length === 1)).toBe(true);

      // A callback: instance A fails in onResult and dies; B's sweep delivers it.
      const tx = made[0]!;
      const body = callbackBodyOf(tx, emulator.retrievalUrl);
      const request = () =>
        new Request('https://shop.example/callback', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
      const delivered: string[] = [];
      const options = { store: await connect(prefix), allowedSources: 'any' as const, leaseMs: 300, onError: () => {} };
      const dying = createCallbackHandler({
        ...options,
        client: a.client,
        onResult: () => {
          throw new Error('busy');
        },
      });
      expect((await dying(request())).status).toBe(200);
      await dying.idle();
      await dying.close();
      const survivor = createCallbackHandler({
        ...options,
        client: b.client,
        onResult: (r) => void delivered.push(r.workflowExecutionId),
      });
      await expect
        .poll(async () => {
          await survivor.sweep();
          await survivor.idle();
          return delivered;
        })
        .toEqual([tx.workflowExecutionId]);
      await survivor.close();
      // Not on one node by chance: each master holds some of the fleet's keys.
      expect((await keysPerMaster(prefix)).every((count) => count > 0)).toBe(true);
    },
  );

  it('refuses a cluster whose node may evict the store keys, naming the setting', async () => {
    const admins = await Promise.all(
      cluster!.nodes.map(async (node) => {
        const admin = createClient({ url: node.url });
        await admin.connect();
        return admin;
      }),
    );
    try {
      for (const admin of admins) await admin.configSet('maxmemory-policy', 'allkeys-lru');
      for (const connect of [nodeRedisCluster, ioredisCluster]) {
        const store = (await connect()) as Store & { ready(): Promise<void> };
        await expect(store.ready()).rejects.toMatchObject({
          code: 'invalid_configuration',
          message: expect.stringContaining('maxmemory-policy noeviction'),
        });
      }
    } finally {
      for (const admin of admins) {
        await admin.configSet('maxmemory-policy', 'noeviction');
        await admin.close();
      }
    }
  });
});

describe.skipIf(!haveRedis)('ready() on a 3-master Redis Cluster, right after creating the client', () => {
  it('ioredis Cluster (enableOfflineQueue: false) and node-redis createCluster (connect() not awaited): it waits', async () => {
    const io = new Cluster(
      cluster!.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
      { enableOfflineQueue: false },
    );
    io.on('error', () => {});
    closers.push(() => io.quit());
    const nr = createCluster({ rootNodes: cluster!.rootNodes });
    nr.on('error', () => {});
    const connecting = nr.connect();
    closers.push(async () => {
      await connecting;
      await nr.close();
    });
    for (const client of [io, nr]) {
      const store = createRedisStore(client, { prefix: `ready${++prefixes}:` });
      await store.ready();
      await store.set('k', 'v', 10_000);
      expect(await store.get('k')).toBe('v');
    }
  });
});

describe.skipIf(!haveRedis)('BullMQ on a 3-master Redis Cluster', () => {
  let emulator: Emulator | undefined;
  afterAll(async () => emulator?.close());
  const nodes = () => cluster!.nodes.map((n) => ({ host: '127.0.0.1', port: n.port }));

  it('refuses a Cluster connection whose prefix has no hash tag, at creation, naming the fix', async () => {
    const bull = new Cluster(nodes(), { lazyConnect: true });
    try {
      for (const prefix of [undefined, 'shop']) {
        expect(() => createBullmqQueue({ connection: bull, ...(prefix ? { prefix } : {}) })).toThrow(
          expect.objectContaining({
            code: 'invalid_configuration',
            message: expect.stringContaining(`prefix such as "{${prefix ?? 'bull'}}"`),
          }),
        );
      }
    } finally {
      bull.disconnect();
    }
  });

  it('two instances, the store and the queue ({tag} prefix) on the cluster: every checkout accepted, checked once and told; no CROSSSLOT; the queue on one master', async () => {
    emulator ??= await startEmulator({ accountRequestsPerSecond: 0 });
    const n = ++prefixes;
    const storePrefix = `bq${n}:`;
    const queuePrefix = `{bbc${n}}`;
    const errors: unknown[] = [];
    const told: string[] = [];
    const instance = () => {
      // As docs/fleet.md sets them up: the store's client fails fast, BullMQ's retries for ever.
      const storeClient = new Cluster(nodes(), { enableOfflineQueue: false });
      const bull = new Cluster(nodes(), { redisOptions: { maxRetriesPerRequest: null } });
      for (const client of [storeClient, bull]) client.on('error', (error) => errors.push(error));
      const store = createRedisStore(storeClient, { prefix: storePrefix });
      const queue = createBullmqQueue({
        connection: bull,
        prefix: queuePrefix,
        concurrency: 2,
        onError: (error) => errors.push(error),
      });
      const handler = fleetHandlerOn(emulator!, { store, queue }, errors, told);
      closers.push(async () => {
        await handler.close();
        await Promise.all([storeClient.quit(), bull.quit()]);
      });
      return { store, handler };
    };
    const [a, b] = [instance(), instance()];
    // Right after creating the clients, as a start-up script would.
    await Promise.all([a.store.ready(), b.store.ready()]);
    const keys = Array.from({ length: 10 }, (_, i) => `bullmq-cluster-${n}-${i}`);
    // Each key posted to both instances at once: one job, one transaction. Both are accepted: 202,
    // or 200 with its reference when the first one's check finished before the second arrived.
    const answers = await Promise.all(
      keys.flatMap((key) => [a.handler(checkoutFor(key)), b.handler(checkoutFor(key))]),
    );
    expect(
      answers.map((r) => [202, 200].includes(r.status)),
      await answers[0]!.clone().text(),
    ).toEqual(keys.flatMap(() => [true, true]));
    expect(answers.filter((r) => r.status === 202).length).toBeGreaterThanOrEqual(keys.length);
    await expect.poll(() => [...told].sort(), { timeout: 30_000 }).toEqual([...keys].sort());
    const made = emulator.inspect.transactions().filter((tx) => keys.includes(tx.customerInternalReference));
    expect(made.map((tx) => tx.customerInternalReference).sort()).toEqual([...keys].sort());
    expect(made.every((tx) => tx.blackboxes.length === 1)).toBe(true);
    expect(errors.map(String).filter((e) => e.includes('CROSSSLOT'))).toEqual([]);
    expect(errors).toEqual([]);
    // The queue's keys on the master of its tag's slot; the store's on every master.
    expect((await keysPerMaster(queuePrefix)).filter((count) => count > 0)).toHaveLength(1);
    expect((await keysPerMaster(storePrefix)).every((count) => count > 0)).toBe(true);
  });
});
