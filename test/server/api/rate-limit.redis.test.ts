// The service's limits kept by a fleet on a real redis-server: four instances, each with its
// own Redis client on one server, offered three times the documented limits for 10 s
// against the emulator at its default limits (as test/server/api/rate-limit.clock.test.ts
// does on one memory store).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisStore } from '../../../src/server/store/redis.js';
import type { Store } from '../../../src/server/index.js';
import { connect, haveRedis, startRedisServer, type Client, type RedisServer } from '../../support/redis.js';
import { offerThreeTimesTheLimits } from '../../support/fleet-limits.js';

let redis: RedisServer;
const clients: Client[] = [];
beforeAll(async () => {
  if (haveRedis) redis = await startRedisServer();
});
afterAll(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
  await redis?.stop();
});

describe.skipIf(!haveRedis)('the limits of a fleet on one Redis', () => {
  it('the service refuses at most 10 % of the account requests and retrievals stay within 15 a second', async () => {
    const stores: Store[] = [];
    for (let i = 0; i < 4; i++) {
      const client = await connect(redis.url);
      clients.push(client);
      stores.push(createRedisStore(client, { prefix: 'limits:' }));
    }
    const load = await offerThreeTimesTheLimits((i) => stores[i]!, 10);
    expect(load.accountRequests, JSON.stringify(load)).toBeGreaterThanOrEqual(8);
    expect(load.accountWaitedOut, JSON.stringify(load)).toBeGreaterThan(0);
    expect(load.accountRefused / load.accountRequests, JSON.stringify(load)).toBeLessThanOrEqual(0.1);
    expect(load.retrievalRequests, JSON.stringify(load)).toBeGreaterThanOrEqual(100);
    expect(load.retrievalsInBusiestSecond, JSON.stringify(load)).toBeLessThanOrEqual(15);
    expect(load.retrievalRefused / load.retrievalRequests, JSON.stringify(load)).toBeLessThanOrEqual(0.1);
  }, 30_000);
});
