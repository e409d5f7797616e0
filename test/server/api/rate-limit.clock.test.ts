// The service's limits kept by a fleet (src/server/api/rate-limit.ts) on the real clock:
// four instances sharing one memory store, offered three times the documented limits for
// 10 s against the emulator at its default limits. test/server/api/rate-limit.redis.test.ts
// runs the same on a real redis-server.
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../../src/server/index.js';
import { offerThreeTimesTheLimits } from '../../support/fleet-limits.js';

describe('the limits of a fleet sharing a store', () => {
  it('the service refuses at most 10 % of the account requests and retrievals stay within 15 a second', async () => {
    const store = createMemoryStore();
    const load = await offerThreeTimesTheLimits(() => store, 10);
    // Some got through, and the excess was held back by the clients, not sent to be refused.
    expect(load.accountRequests, JSON.stringify(load)).toBeGreaterThanOrEqual(8);
    expect(load.accountWaitedOut, JSON.stringify(load)).toBeGreaterThan(0);
    expect(load.accountRefused / load.accountRequests, JSON.stringify(load)).toBeLessThanOrEqual(0.1);
    expect(load.retrievalRequests, JSON.stringify(load)).toBeGreaterThanOrEqual(100);
    expect(load.retrievalsInBusiestSecond, JSON.stringify(load)).toBeLessThanOrEqual(15);
    expect(load.retrievalRefused / load.retrievalRequests, JSON.stringify(load)).toBeLessThanOrEqual(0.1);
  }, 30_000);
});
