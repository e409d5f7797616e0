// createBullmqQueue's refusals, without a Redis: a Redis Cluster connection needs a hash tag
// in the prefix (the queue on a real cluster: test/server/store/redis-cluster.redis.test.ts).
import { describe, expect, it } from 'vitest';
import { createBullmqQueue } from '../../../src/server/queue/bullmq.js';

describe('createBullmqQueue on Redis Cluster', () => {
  // What ioredis's Cluster has and its Redis has not: BullMQ tells them apart the same way.
  const cluster = { isCluster: true } as never;
  it.each([
    [undefined, '{bull}'],
    ['shop', '{shop}'],
    ['{}shop', '{shop}'],
  ])('refuses prefix %s at creation (invalid_configuration), naming %s', (prefix, fix) => {
    expect(() => createBullmqQueue({ connection: cluster, ...(prefix === undefined ? {} : { prefix }) })).toThrow(
      expect.objectContaining({
        code: 'invalid_configuration',
        message: expect.stringContaining(`prefix such as "${fix}"`),
      }),
    );
  });
});
