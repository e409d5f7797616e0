// The service's limits kept by a fleet (src/server/api/rate-limit.ts) on the real clock:
// four instances sharing one memory store, offered three times the documented limits for
// 10 s against the emulator at its default limits. test/server/api/rate-limit.redis.test.ts
// runs the same on a real redis-server.
import { describe, it } from 'vitest';
import { createMemoryStore } from '../../../src/server/index.js';
import { expectWithinLimits, offerThreeTimesTheLimits } from '../../support/fleet-limits.js';

describe('the limits of a fleet sharing a store', () => {
  it('the service refuses at most 10 % of the account requests and retrievals stay within 15 a second', async () => {
    const store = createMemoryStore();
    expectWithinLimits(await offerThreeTimesTheLimits(() => store, 10));
  }, 30_000);
});
