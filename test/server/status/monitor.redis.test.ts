// Two status monitors on one real redis-server, as two instances of a fleet: one reporter,
// the other taking over within the lease when the first stops; the series in Redis holds
// both writers' samples, and concurrent writers lose no count.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStatusMonitor, type StatusMonitor } from '../../../src/server/status/monitor.js';
import { createRedisStore } from '../../../src/server/store/redis.js';
import { recordQueue } from '../../../src/server/metrics.js';
import { connect, haveRedis, startRedisServer, type Client, type RedisServer } from '../../support/redis.js';

let redis: RedisServer;
let client: Client;
const monitors: StatusMonitor[] = [];
beforeAll(async () => {
  if (!haveRedis) return;
  redis = await startRedisServer();
  client = await connect(redis.url);
});
afterAll(async () => {
  for (const monitor of monitors) await monitor.close();
  await client?.close();
  await redis?.stop();
});

describe.skipIf(!haveRedis)('status monitors on one Redis', () => {
  it('one reporter at a time, a successor within the lease; every sample counted once', async () => {
    const store = createRedisStore(client, { prefix: 'status-test:' });
    const make = (instanceId: string) => {
      const monitor = createStatusMonitor({ store, instanceId, sampleIntervalMs: 1000, onError: () => {} });
      monitors.push(monitor);
      return monitor;
    };
    const a = make('a');
    await a.sample();
    const b = make('b');
    await b.sample();
    expect([a.reporter, b.reporter]).toEqual([true, false]);

    // Both write at once, many times: compare-and-set keeps every increase, once (both monitors read this process's counters).
    const before = (await a.series()).minutes.reduce((n, m) => n + (m.counts['queue|event=refused'] ?? 0), 0);
    recordQueue('refused');
    await Promise.all([a.sample(), b.sample(), a.sample(), b.sample()]);
    recordQueue('refused');
    await Promise.all([b.sample(), a.sample()]);
    const after = (await b.series()).minutes.reduce((n, m) => n + (m.counts['queue|event=refused'] ?? 0), 0);
    expect(after - before).toBe(2);

    await a.close();
    await expect.poll(() => b.reporter, { timeout: 8000 }).toBe(true);
  });
});
