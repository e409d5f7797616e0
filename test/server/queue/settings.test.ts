// The memory queue's settings: each option refused when the queue is made, naming it.
import { describe, expect, it } from 'vitest';
import { createMemoryQueue } from '../../../src/server/queue/queue.js';
import { MEMORY_QUEUE_OPTIONS } from '../../../src/server/queue/settings.js';

describe('MEMORY_QUEUE_OPTIONS', () => {
  it.each<[keyof typeof MEMORY_QUEUE_OPTIONS, unknown]>([
    ['maxQueued', 0],
    ['concurrency', 2.5],
    ['now', 'now'],
  ])('a bad %s is invalid_configuration naming it', (name, value) => {
    expect(() => createMemoryQueue({ [name]: value })).toThrow(
      expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining(`${name} must be`) }),
    );
  });

  it('takes its defaults from the table', async () => {
    const queue = createMemoryQueue({ maxQueued: 1 });
    const job = (key: string) => ({
      key,
      fingerprint: 'f',
      blackbox: 'b',
      customer: { customerInternalReference: 'c' },
      acceptedAt: 0,
    });
    expect(await queue.add(job('a'))).toBe('added');
    expect(await queue.add(job('b'))).toBe('full');
    expect(MEMORY_QUEUE_OPTIONS.maxQueued.default).toBe(10_000);
    await queue.close();
  });
});
