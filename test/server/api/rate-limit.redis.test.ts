// The service's limits kept by a fleet on a real redis-server: four instances, each with its
// own Redis client on one server, offered three times the documented limits for 10 s
// against the emulator at its default limits (as test/server/api/rate-limit.clock.test.ts
// does on one memory store).
import { describe, it } from 'vitest';
import { createRedisStore } from '../../../src/server/store/redis.js';
import type { Store } from '../../../src/server/index.js';
import { haveRedis, useRedisServer } from '../../support/redis.js';
import { expectWithinLimits, offerThreeTimesTheLimits } from '../../support/fleet-limits.js';

const redis = useRedisServer();

describe.skipIf(!haveRedis)('the limits of a fleet on one Redis', () => {
  it('the service refuses at most 10 % of the account requests and retrievals stay within 15 a second', async () => {
    const stores: Store[] = [];
    for (let i = 0; i < 4; i++) stores.push(createRedisStore(await redis.connect(), { prefix: 'limits:' }));
    expectWithinLimits(await offerThreeTimesTheLimits((i) => stores[i]!, 10));
  }, 30_000);
});
