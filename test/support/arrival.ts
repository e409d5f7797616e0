// The queue engines' shared case of arrival order within one visitor (docs/fleet.md#the-queue),
// run on the memory queue, the file queue and BullMQ alike: a visitor's job added after its
// first ones ran waits behind its older ones still held, never ahead of them (at the trust
// bound those would go stale behind every newcomer).
import { expect } from 'vitest';
import type { CheckQueue } from '../../src/server/queue/queue.js';
import { queuedJob } from './queued-job.js';

const job = (key: string) => queuedJob(key, { visitor: 'address 192.0.2.0/24' });

/** `make()` gives a new queue of one engine, concurrency 1, not yet processing. */
export async function expectArrivalOrder(make: () => CheckQueue, timeoutMs = 5000): Promise<void> {
  const queue = make();
  const runs: string[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  try {
    for (const key of ['a1', 'a2', 'a3', 'a4', 'a5']) expect(await queue.add(job(key))).toBe('added');
    queue.process(async ({ key }) => {
      runs.push(key);
      if (key === 'a3') await released;
      return { done: true };
    });
    // a1 and a2 ran, a3 runs: three held. The next one comes behind a4 and a5.
    await expect.poll(() => runs, { timeout: timeoutMs }).toEqual(['a1', 'a2', 'a3']);
    expect(await queue.add(job('a6'))).toBe('added');
    release();
    await expect.poll(() => runs, { timeout: timeoutMs }).toEqual(['a1', 'a2', 'a3', 'a4', 'a5', 'a6']);
  } finally {
    release();
    await queue.close();
  }
}
