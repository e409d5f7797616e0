// The queue engines' shared case of signed-in shoppers first (docs/server.md#signed-in-shoppers-first),
// run on the memory queue, the file queue and BullMQ alike: signed-in jobs ahead of every guest's,
// by turns among accounts; guests refused at nine tenths of the bound, signed-in ones up to it.
import { expect } from 'vitest';
import type { CheckJob, CheckQueue, Lane } from '../../src/server/queue/queue.js';

const laneJob = (key: string, visitor: string, lane?: Lane): CheckJob => ({
  key,
  fingerprint: `f-${key}`,
  blackbox: 'bb',
  customer: { customerInternalReference: `order-${key}` },
  acceptedAt: Date.now(),
  visitor,
  ...(lane ? { lane } : {}),
});

/**
 * `make(maxQueued)` gives a new queue of one engine, concurrency 1, not yet processing. Guests
 * queued first run after the signed-in shoppers queued later: the accounts by turns (a1, b1,
 * a2), then the guests by theirs. At a bound of 10, the 10th guest is `full` while a signed-in
 * checkout still goes in, up to the bound; a checkout of neither lane fills the whole bound.
 */
export async function expectSignedInFirst(make: (maxQueued: number) => CheckQueue, timeoutMs = 5000): Promise<void> {
  const queue = make(100);
  try {
    for (const [key, visitor] of [
      ['x1', 'address x'],
      ['x2', 'address x'],
      ['y1', 'address y'],
    ])
      expect(await queue.add(laneJob(key!, visitor!, 'guest'))).toBe('added');
    for (const [key, visitor] of [
      ['a1', 'account a'],
      ['a2', 'account a'],
      ['b1', 'account b'],
    ])
      expect(await queue.add(laneJob(key!, visitor!, 'signed-in'))).toBe('added');
    const ran: string[] = [];
    queue.process(async (job) => {
      ran.push(job.key);
      return { done: true };
    });
    await expect.poll(() => ran.length, { timeout: timeoutMs }).toBe(6);
    expect(ran).toEqual(['a1', 'b1', 'a2', 'x1', 'y1', 'x2']);
  } finally {
    await queue.close();
  }

  const bounded = make(10);
  try {
    for (let i = 1; i <= 9; i++) expect(await bounded.add(laneJob(`g${i}`, `address ${i}`, 'guest'))).toBe('added');
    expect(await bounded.add(laneJob('g10', 'address 10', 'guest'))).toBe('full');
    expect(await bounded.add(laneJob('s1', 'account s', 'signed-in'))).toBe('added');
    expect(await bounded.add(laneJob('s2', 'account t', 'signed-in'))).toBe('full');
  } finally {
    await bounded.close();
  }

  const whole = make(10);
  try {
    for (let i = 1; i <= 10; i++) expect(await whole.add(laneJob(`n${i}`, `address ${i}`))).toBe('added');
    expect(await whole.add(laneJob('n11', 'address 11'))).toBe('full');
  } finally {
    await whole.close();
  }
}
