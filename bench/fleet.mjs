// The fleet row of `npm run bench`: four endpoint instances (processes) on one Redis against
// the emulator, and beside it, in the same run, one instance on its memory store, with the
// same requests and the same faults; the cost of sharing is the difference.
import { startEmulator } from '../dist/emulator.js';
import { blackboxFor, drive, fleetConfig, startFleet } from '../test/support/fleet.mjs';
import { redisAvailable, startRedis } from '../test/support/redis-server.mjs';

/** A contracted limit far above what one machine offers: the kit's own throughput, not the tenant's. */
const UNLIMITED = { accountRequestsPerSecond: 1000, accountBurst: 50, retrievalsPerSecond: 1000 };

const BLACKBOX = '0400' + 'nVQ+/abc'.repeat(150) + '==';
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

async function run({ instances, withRedis, requests, concurrency, tag, faults = true }) {
  const emulator = await startEmulator({ accountRequestsPerSecond: 0 });
  const redis = withRedis ? await startRedis() : undefined;
  const fleet = await startFleet(instances, fleetConfig(emulator, { redisUrl: redis?.url, leaseMs: 2000 }));
  try {
    const keys = Array.from({ length: requests }, (_, i) => `${tag}-${String(i).padStart(6, '0')}`);
    const started = performance.now();
    const results = await drive({
      fleet,
      keys,
      concurrency,
      blackbox: BLACKBOX,
      // The fleet test's faults: 429 on account create, 503 on upload, dropped finalize answers.
      onProgress: (done) => {
        if (!faults) return;
        if (done % 20 === 5) emulator.faults.fail('accountCreate', { status: 429, times: 2 });
        if (done % 20 === 10) emulator.faults.fail('upload', { status: 503, times: 2 });
        if (done % 20 === 15) emulator.faults.fail('finalize', { drop: true, times: 2 });
      },
    });
    const seconds = (performance.now() - started) / 1000;
    const ms = results.map((r) => r.ms).sort((a, b) => a - b);
    const perKey = new Map();
    for (const tx of emulator.inspect.transactions())
      perKey.set(tx.customerInternalReference, (perKey.get(tx.customerInternalReference) ?? 0) + 1);
    return {
      instances,
      store: withRedis ? 'redis' : 'memory',
      faults,
      requests,
      concurrency,
      rps: requests / seconds,
      p50: quantile(ms, 0.5),
      p99: quantile(ms, 0.99),
      lost: results.filter((r) => !r.ok).length,
      maxTransactionsPerKey: Math.max(...perKey.values()),
      keysWithoutTransaction: requests - perKey.size,
      tokenRequests: emulator.inspect.requests('token'),
      retries: results.reduce((n, r) => n + r.statuses.length - 1, 0),
    };
  } finally {
    await fleet.stop();
    await redis?.stop();
    await emulator.close();
  }
}

export async function benchFleet({ requests, concurrency }) {
  if (!redisAvailable()) return { redisAvailable: false };
  // One instance on memory: the baseline. Four instances each on its own memory: the
  // same CPU contention as the Redis fleet (so the difference is the cost of sharing), and
  // what a fleet without a shared store does to Idempotency-Keys and tokens.
  const memory = await run({ instances: 1, withRedis: false, requests, concurrency, tag: 'memory' });
  const unshared = await run({ instances: 4, withRedis: false, requests, concurrency, tag: 'unshared' });
  const redis = await run({ instances: 4, withRedis: true, requests, concurrency, tag: 'redis' });
  // The cost of sharing per request, without the faults' retry waits and the queueing of 64
  // concurrent requests on a small machine: 4 at a time, no faults.
  const calmMemory = await run({
    instances: 1,
    withRedis: false,
    requests: Math.round(requests / 2),
    concurrency: 4,
    tag: 'calm-memory',
    faults: false,
  });
  const calmRedis = await run({
    instances: 4,
    withRedis: true,
    requests: Math.round(requests / 2),
    concurrency: 4,
    tag: 'calm-redis',
    faults: false,
  });
  return { redisAvailable: true, memory, unshared, redis, calmMemory, calmRedis };
}

/**
 * The store's own cost, without process contention: one endpoint in this process, the same
 * requests one after another, on its memory store and on Redis, alternating in rounds.
 */
export async function benchStoreCost({ requests = 300, rounds = 3 } = {}) {
  if (!redisAvailable()) return undefined;
  const { createClient } = await import('redis');
  const { createDeviceRiskClient, createDeviceRiskHandler, createMemoryStore, createTokenSource } =
    await import('../dist/server.js');
  const { createRedisStore } = await import('../dist/server-redis.js');
  const emulator = await startEmulator({ accountRequestsPerSecond: 0 });
  const redis = await startRedis();
  const client = createClient({ url: redis.url, disableOfflineQueue: true });
  client.on('error', () => {});
  await client.connect();
  const userAgent = 'AcmeShop Checkout/1.0';
  const handlerOn = (store) => {
    const tokenSource = createTokenSource({
      clientId: emulator.clientId,
      clientSecret: emulator.clientSecret,
      tokenUrl: emulator.tokenUrl,
      userAgent,
      store,
    });
    // The emulator's limits are off here: the client's raised to match, so that the kit is measured.
    const deviceRisk = createDeviceRiskClient({
      tokenSource,
      ...emulator.serviceUrls,
      userAgent,
      limits: UNLIMITED,
    });
    return createDeviceRiskHandler({
      // The endpoint's own throughput: the check within the request, the service's limits off.
      answer: 'checked',
      client: deviceRisk,
      store,
      allowedOrigins: ['https://shop.example'],
      workflowKey: 10011,
      reportStatus: false,
      resolveCustomer: (r) => ({ customerInternalReference: r.headers.get('x-order') }),
      // The load comes from one address: admission is measured apart.
      checkoutsPerAddress: false,
    });
  };
  const handlers = {
    memory: handlerOn(createMemoryStore()),
    redis: handlerOn(createRedisStore(client, { prefix: 'bench:' })),
  };
  const times = { memory: [], redis: [] };
  try {
    for (let round = 0; round < rounds; round++) {
      for (const [name, handler] of Object.entries(handlers)) {
        for (let i = 0; i < requests; i++) {
          const key = `${name}-${round}-${i}-key`;
          const started = performance.now();
          const response = await handler(
            new Request('https://shop.example/device-risk', {
              method: 'POST',
              headers: {
                origin: 'https://shop.example',
                'content-type': 'application/json',
                'idempotency-key': key,
                'x-order': key,
              },
              body: JSON.stringify({ blackbox: blackboxFor(BLACKBOX, key) }),
            }),
          );
          await response.text();
          if (i > 10) times[name].push(performance.now() - started); // after the warm-up (token, keys, JIT)
        }
      }
    }
  } finally {
    await client.close();
    await redis.stop();
    await emulator.close();
  }
  const summary = (list) => {
    const sorted = [...list].sort((a, b) => a - b);
    return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) };
  };
  return { requests: times.memory.length, memory: summary(times.memory), redis: summary(times.redis) };
}
