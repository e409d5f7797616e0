// The queue engines' shared case of an add's `lateAt` (docs/fleet.md#many-addresses), run on
// the memory queue, the file queue and BullMQ alike: the add counts every job held, the running
// ones too, and is `full` at `lateAt`, whatever the endpoint's late check read before.
import { expect } from 'vitest';
import type { CheckQueue } from '../../src/server/queue/queue.js';
import { queuedJob } from './queued-job.js';

const job = (key: string) => queuedJob(key);

/**
 * `make()` gives a new queue of one engine, concurrency 1, bound far away, not yet processing.
 * Two jobs held, the first of them running: an add at `lateAt` 2 is `full` and holds nothing;
 * at 3 it is held; without one only the queue's bound counts.
 */
export async function expectFullAtLateAt(make: () => CheckQueue, timeoutMs = 5000): Promise<void> {
  const queue = make();
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const started: string[] = [];
  try {
    expect(await queue.add(job('a'), 5)).toBe('added');
    expect(await queue.add(job('b'), 5)).toBe('added');
    queue.process(async ({ key }) => {
      started.push(key);
      await released;
      return { done: true };
    });
    await expect.poll(() => started, { timeout: timeoutMs }).toEqual(['a']);
    expect(await queue.add(job('c'), 2)).toBe('full');
    expect((await queue.counts()).queued).toBe(2);
    expect(await queue.add(job('c'), 3)).toBe('added');
    expect(await queue.add(job('d'), 3)).toBe('full');
    expect(await queue.add(job('d'))).toBe('added');
    expect((await queue.counts()).queued).toBe(4);
  } finally {
    release();
    await queue.close();
  }
}
