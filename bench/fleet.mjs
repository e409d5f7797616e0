// The fleet row of `npm run bench`: four endpoint instances (processes) on one Redis against
// the emulator, and beside it, in the same run, one instance on its memory store, with the
// same requests and the same faults; the cost of sharing is the difference.
import { startEmulator } from '../dist/emulator.js';
import { drive, startFleet } from '../scripts/fleet.mjs';
import { redisAvailable, startRedis } from '../scripts/redis.mjs';

const BLACKBOX = '0400' + 'nVQ+/abc'.repeat(150) + '==';
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

async function run({ instances, withRedis, requests, concurrency, tag, faults = true }) {
  const emulator = await startEmulator({ accountRequestsPerSecond: 0 });
  const redis = withRedis ? await startRedis() : undefined;
  const fleet = await startFleet(instances, {
    redisUrl: redis?.url,
    tokenUrl: emulator.tokenUrl,
    baseUrl: emulator.baseUrl,
    retrievalUrl: emulator.retrievalUrl,
    clientId: emulator.clientId,
    clientSecret: emulator.clientSecret,
    leaseMs: 2000,
  });
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
    for (const tx of emulator.inspect.transactions()) perKey.set(tx.customerInternalReference, (perKey.get(tx.customerInternalReference) ?? 0) + 1);
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
  const calmMemory = await run({ instances: 1, withRedis: false, requests: Math.round(requests / 2), concurrency: 4, tag: 'calm-memory', faults: false });
  const calmRedis = await run({ instances: 4, withRedis: true, requests: Math.round(requests / 2), concurrency: 4, tag: 'calm-redis', faults: false });
  return { redisAvailable: true, memory, unshared, redis, calmMemory, calmRedis };
}
