// The in-process queue: arrival order, its bound, one job per key, retries that keep their
// place, a pause for the tenant's limit, and a close that waits for the running jobs.
import { describe, expect, it } from 'vitest';
import { createMemoryQueue, keptFor, type CheckJob } from '../../../src/server/queue/queue.js';
import { expectSignedInFirst } from '../../support/lanes.js';
import { expectFullAtLateAt } from '../../support/late-at.js';
import { expectReadingApart } from '../../support/reading.js';
import { expectArrivalOrder } from '../../support/arrival.js';
import { gatedRun } from '../../support/gated-run.js';

const job = (key: string, fingerprint = 'f', acceptedAt = 0, visitor?: string): CheckJob => ({
  key,
  fingerprint,
  blackbox: 'bb',
  customer: { customerInternalReference: 'c' },
  acceptedAt,
  ...(visitor === undefined ? {} : { visitor }),
});

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('createMemoryQueue', () => {
  it('runs jobs in arrival order, at most `concurrency` at once', async () => {
    const queue = createMemoryQueue({ concurrency: 2 });
    const { run, started, finish } = gatedRun();
    queue.process(run);
    for (const key of ['a', 'b', 'c', 'd']) expect(await queue.add(job(key))).toBe('added');
    await tick();
    expect(started).toEqual(['a', 'b']);
    await finish('b');
    expect(started).toEqual(['a', 'b', 'c']);
    await finish('a');
    await finish('c');
    await finish('d');
    expect(started).toEqual(['a', 'b', 'c', 'd']);
    expect(await queue.counts()).toEqual({ queued: 0, oldestAcceptedAt: undefined });
  });

  it("is fair across visitors: a flood's 50 jobs queued first, 5 honest visitors' jobs run within the first 6", async () => {
    const queue = createMemoryQueue({ concurrency: 1 });
    const order: string[] = [];
    for (let i = 1; i <= 50; i++) await queue.add(job(`flood-${i}`, 'f', i, 'address 2001:db8:66:1::/64'));
    for (let i = 1; i <= 5; i++) await queue.add(job(`honest-${i}`, 'f', 100 + i, `address 198.51.100.${i}`));
    queue.process(async (j) => {
      order.push(j.key);
      return { done: true };
    });
    await queue.idle();
    expect(order).toHaveLength(55);
    expect(order.slice(0, 6).sort()).toEqual(['flood-1', 'honest-1', 'honest-2', 'honest-3', 'honest-4', 'honest-5']);
    // Within a visitor, arrival order; the flood's n-th behind every visitor's first.
    expect(order.filter((k) => k.startsWith('flood'))).toEqual(Array.from({ length: 50 }, (_, i) => `flood-${i + 1}`));
    expect(await queue.counts()).toEqual({ queued: 0, oldestAcceptedAt: undefined });
  });

  it("takes turns as jobs come and go: a newcomer's first goes before a served visitor's next", async () => {
    const queue = createMemoryQueue({ concurrency: 1 });
    const { run, started, finish } = gatedRun();
    queue.process(run);
    for (const key of ['a1', 'a2', 'a3']) await queue.add(job(key, 'f', 0, 'a'));
    await tick();
    expect(started).toEqual(['a1']);
    await queue.add(job('b1', 'f', 0, 'b'));
    await finish('a1');
    await queue.add(job('c1', 'f', 0, 'c'));
    await queue.add(job('b2', 'f', 0, 'b'));
    await finish('b1');
    await finish('c1');
    await finish('a2');
    await finish('b2');
    await finish('a3');
    // a was served before b, so a2 before b2; a visitor whose jobs all left comes back as a newcomer.
    expect(started).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
    await queue.add(job('a4', 'f', 0, 'a'));
    await queue.add(job('a5', 'f', 0, 'a'));
    await queue.add(job('d1', 'f', 0, 'd'));
    await tick();
    await finish('a4');
    expect(started.slice(6)).toEqual(['a4', 'd1']);
    await finish('d1');
    await finish('a5');
  });

  it('holds one job per key: the same request is present, another under its key a conflict', async () => {
    const queue = createMemoryQueue();
    expect(await queue.add(job('k', 'f1'))).toBe('added');
    expect(await queue.add(job('k', 'f1'))).toBe('present');
    expect(await queue.add(job('k', 'f2'))).toBe('conflict');
    expect((await queue.counts()).queued).toBe(1);
  });

  it('two adds under one key at once, within one millisecond: one added, the other present or a conflict', async () => {
    const queue = createMemoryQueue();
    const other = await Promise.all([queue.add(job('k', 'f1', 5)), queue.add(job('k', 'f2', 5))]);
    expect(other).toEqual(['added', 'conflict']);
    const same = await Promise.all([queue.add(job('s', 'f1', 5)), queue.add(job('s', 'f1', 5))]);
    expect(same).toEqual(['added', 'present']);
    expect((await queue.counts()).queued).toBe(2);
  });

  it('refuses a job past maxQueued (full) and takes one again once a job left', async () => {
    const queue = createMemoryQueue({ maxQueued: 2, concurrency: 1 });
    const { run, finish } = gatedRun();
    expect(await queue.add(job('a', 'f', 10))).toBe('added');
    expect(await queue.add(job('b', 'f', 20))).toBe('added');
    expect(await queue.add(job('c'))).toBe('full');
    expect(await queue.counts()).toEqual({ queued: 2, oldestAcceptedAt: 10 });
    queue.process(run);
    await tick();
    await finish('a');
    expect(await queue.counts()).toEqual({ queued: 1, oldestAcceptedAt: 20 });
    expect(await queue.add(job('c'))).toBe('added');
  });

  /** A queue of one at a time on a clock the test moves (`clock.time`), gated jobs a then b added, a started. */
  async function aThenB(time: number) {
    const clock = { time };
    const queue = createMemoryQueue({ concurrency: 1, now: () => clock.time });
    const { run, started, finish } = gatedRun();
    queue.process(run);
    await queue.add(job('a'));
    await queue.add(job('b'));
    await tick();
    return { clock, queue, started, finish };
  }

  it('a job given up, its telling not kept, comes back with why (givenUp), kept through a run that throws', async () => {
    const queue = createMemoryQueue({ concurrency: 1 });
    const givenUp = { ending: 'failed', reason: 'request_rejected' } as const;
    const seen: unknown[] = [];
    queue.process(async (j) => {
      seen.push(j.givenUp);
      if (seen.length === 1) return { retryInMs: 1, givenUp };
      if (seen.length === 2) throw new Error('a run that throws');
      return { done: true };
    });
    await queue.add(job('a'));
    await queue.idle();
    expect(seen).toEqual([undefined, givenUp, givenUp]);
  });

  it('a job to retry keeps its place and waits its time; the others go on meanwhile', async () => {
    const { clock, queue, started, finish } = await aThenB(1000);
    await finish('a', { retryInMs: 30 });
    expect(started).toEqual(['a', 'b']);
    await finish('b');
    // a is not due yet: nothing starts until its time, then it runs again.
    expect(started).toEqual(['a', 'b']);
    clock.time += 30;
    await new Promise((r) => setTimeout(r, 40));
    expect(started).toEqual(['a', 'b', 'a']);
    await finish('a');
    await queue.idle();
  });

  it("a pause for the tenant's limit holds every job, the one that met it first when it ends", async () => {
    const { clock, started, finish } = await aThenB(0);
    await finish('a', { retryInMs: 20, pauseQueue: true });
    expect(started).toEqual(['a']);
    clock.time += 20;
    await new Promise((r) => setTimeout(r, 30));
    expect(started).toEqual(['a', 'a']);
    await finish('a');
    expect(started).toEqual(['a', 'a', 'b']);
    await finish('b');
  });

  it('a run that throws is tried again, not lost', async () => {
    let time = 0;
    const queue = createMemoryQueue({ now: () => time });
    let calls = 0;
    queue.process(async () => {
      calls++;
      if (calls === 1) throw new Error('boom');
      return { done: true };
    });
    await queue.add(job('a'));
    await tick();
    expect(calls).toBe(1);
    expect((await queue.counts()).queued).toBe(1);
    time += 1000;
    await new Promise((r) => setTimeout(r, 1010));
    expect(calls).toBe(2);
    await queue.idle();
  });

  /** A queue of `concurrency` whose runs wait for `finish(key)`, given jobs a and b: those it could start, started. */
  async function runningTwo(concurrency: number) {
    const queue = createMemoryQueue({ concurrency });
    const { run, started, finish } = gatedRun();
    queue.process(run);
    await queue.add(job('a'));
    await queue.add(job('b'));
    await tick();
    return { queue, started, finish };
  }

  it('close waits for the running jobs and starts no other', async () => {
    const { queue, started, finish } = await runningTwo(1);
    let closed = false;
    const closing = queue.close().then(() => (closed = true));
    await tick();
    expect(closed).toBe(false);
    await finish('a');
    await closing;
    expect(started).toEqual(['a']);
    expect((await queue.counts()).queued).toBe(1);
  });

  it('leftBehind: nothing before close; after it, the held jobs no run started (a retried one too), taken out, once', async () => {
    const queue = createMemoryQueue({ concurrency: 1 });
    const { run, started, finish } = gatedRun();
    queue.process(run);
    for (const key of ['a', 'b', 'c']) await queue.add(job(key));
    await tick();
    await finish('a', { retryInMs: 60_000 });
    await tick();
    expect(queue.leftBehind()).toEqual([]);
    expect(started).toEqual(['a', 'b']);
    const closed = queue.close();
    await finish('b');
    await closed;
    expect(
      queue
        .leftBehind()
        .map((j) => j.key)
        .sort(),
    ).toEqual(['a', 'c']);
    expect(await queue.counts()).toEqual({ queued: 0, oldestAcceptedAt: undefined });
    expect(queue.leftBehind()).toEqual([]);
  });

  it('idle resolves at once when nothing is held', async () => {
    await createMemoryQueue().idle();
  });

  it('idle resolves once the last job held has left, not before', async () => {
    const { queue, finish } = await runningTwo(2);
    let idle = false;
    const waiting = queue.idle().then(() => (idle = true));
    await finish('a');
    expect(idle).toBe(false);
    await finish('b');
    await waiting;
    expect(idle).toBe(true);
  });
});

describe('keptFor: what a retry keeps with its job', () => {
  const held = job('k', 'f', 1);
  const givenUp = { ending: 'failed', reason: 'upstream_error' } as const;

  it('nothing new: no job to write (a queue writes none)', () => {
    expect(keptFor(held, { retryInMs: 1 })).toBeUndefined();
    expect(keptFor({ ...held, reading: 2 }, { retryInMs: 1, reading: 2 })).toBeUndefined();
    // A retry that says neither keeps what the job has.
    expect(keptFor({ ...held, reading: 2, untoldSince: 5 }, { retryInMs: 1 })).toBeUndefined();
  });

  it('a new count of reads, 0 too, or why it was given up: the job with it', () => {
    expect(keptFor(held, { retryInMs: 1, reading: 0 })).toEqual({ ...held, reading: 0 });
    expect(keptFor({ ...held, reading: 1 }, { retryInMs: 1, reading: 2 })).toEqual({ ...held, reading: 2 });
    expect(keptFor(held, { retryInMs: 0, givenUp })).toEqual({ ...held, givenUp });
    expect(Object.keys(keptFor(held, { retryInMs: 0, givenUp })!)).not.toContain('reading');
  });

  it("when onResult first failed: kept once, never moved by a later retry's", () => {
    expect(keptFor(held, { retryInMs: 1, reading: 0, untoldSince: 5 })).toEqual({
      ...held,
      reading: 0,
      untoldSince: 5,
    });
    expect(
      keptFor({ ...held, reading: 0, untoldSince: 5 }, { retryInMs: 1, reading: 0, untoldSince: 5 }),
    ).toBeUndefined();
    expect(Object.keys(keptFor(held, { retryInMs: 1, reading: 1 })!)).not.toContain('untoldSince');
  });
});

describe('createMemoryQueue, signed-in shoppers first', () => {
  it('runs signed-in checkouts ahead of guests, by turns, and sheds guests first at the bound', async () => {
    await expectSignedInFirst((maxQueued) => createMemoryQueue({ maxQueued, concurrency: 1 }));
  });

  it("keeps one visitor's arrival order when its count fell meanwhile", async () => {
    await expectArrivalOrder(() => createMemoryQueue({ concurrency: 1 }));
  });

  it('leaves a job only reading its decision out of the checks waiting', async () => {
    await expectReadingApart(() => createMemoryQueue({ concurrency: 3 }));
  });

  it("is full at the late check's lateAt, counting the running jobs too", async () => {
    await expectFullAtLateAt(() => createMemoryQueue({ concurrency: 1 }));
  });
});
