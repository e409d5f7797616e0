// The queue engines' shared case of a job held only to read its decision (CheckJob.reading,
// docs/fleet.md#the-queue), run on the memory queue, the file queue and BullMQ alike: it is not
// among the checks waiting (counts, the oldest, the add's `lateAt`), its next run knows it, and
// it leaves nothing behind when it ends.
import { expect } from 'vitest';
import type { CheckJob, CheckQueue } from '../../src/server/queue/queue.js';
import { queuedJob } from './queued-job.js';

const job = (key: string, acceptedAt: number) => queuedJob(key, { acceptedAt });

/**
 * `make()` gives a new queue of one engine, concurrency 3, not yet processing. Job a comes back
 * in 1 s only to read, then again 0.5 s later, and reads until let go with b and c; e and f run
 * until the end. Every add is bounded at 2 checks (`lateAt`).
 */
export async function expectReadingApart(make: () => CheckQueue, timeoutMs = 5000): Promise<void> {
  const queue = make();
  const runs: CheckJob[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let releaseLast!: () => void;
  const lastReleased = new Promise<void>((resolve) => (releaseLast = resolve));
  const poll = { timeout: timeoutMs };
  try {
    expect(await queue.add(job('a', 1000), 2)).toBe('added');
    queue.process(async (run) => {
      runs.push(run);
      if (run.key !== 'a') {
        await (run.key < 'e' ? released : lastReleased);
        return { done: true };
      }
      // 0 reads scheduled (it only tells its decision: no falsy count is taken for none), then 1.
      if (run.reading === undefined) return { retryInMs: 1000, reading: 0 };
      if (run.reading === 0) return { retryInMs: 500, reading: 1 };
      await released;
      return { done: true };
    });
    // Only reading now: no check waits, none is the oldest, and the bound of 2 has room for two.
    await expect.poll(async () => (await queue.counts()).queued, poll).toBe(0);
    expect((await queue.counts()).oldestAcceptedAt).toBeUndefined();
    expect(await queue.add(job('b', 2000), 2)).toBe('added');
    expect(await queue.add(job('c', 3000), 2)).toBe('added');
    expect(await queue.add(job('d', 4000), 2)).toBe('full');
    expect(await queue.counts()).toMatchObject({ queued: 2, oldestAcceptedAt: 2000 });
    // Its next run knows it only reads, and how many reads were scheduled.
    await expect
      .poll(() => runs.filter((run) => run.key === 'a').map((run) => run.reading), poll)
      .toEqual([undefined, 0, 1]);
    release();
    await expect.poll(async () => (await queue.counts()).queued, poll).toBe(0);
    await expect.poll(() => runs.length, poll).toBe(5);
    // Nothing of it stays counted apart: the bound of 2 is whole again.
    expect(await queue.add(job('e', 5000), 2)).toBe('added');
    expect(await queue.add(job('f', 6000), 2)).toBe('added');
    expect(await queue.add(job('g', 7000), 2)).toBe('full');
  } finally {
    release();
    releaseLast();
    await queue.close();
  }
}
