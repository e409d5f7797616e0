// The file queue (src/server/queue/file.ts): what add answered `added` for is committed to the
// SQLite file before the answer, a job run to its end is marked done (its key stays taken), and
// a new queue on the same file (the next process) runs what was left, in order, once; queues
// sharing one file (two processes) run each job once; a damaged file is named at start.
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { createFileQueue } from '../../../src/server/queue/file.js';
import type { CheckJob, JobRun } from '../../../src/server/queue/queue.js';
import { expectSignedInFirst } from '../../support/lanes.js';
import { expectFullAtLateAt } from '../../support/late-at.js';
import { expectReadingApart } from '../../support/reading.js';
import { expectArrivalOrder } from '../../support/arrival.js';
import { gatedRun } from '../../support/gated-run.js';
import { faultyEngine, rowsOf, sqliteError } from '../../support/sqlite.js';

const job = (key: string, fingerprint = 'f', visitor?: string): CheckJob => ({
  key,
  fingerprint,
  blackbox: 'bb',
  customer: { customerInternalReference: `order-${key}` },
  acceptedAt: 1,
  ...(visitor ? { visitor } : {}),
});
const databaseIn = () => join(mkdtempSync(join(tmpdir(), 'bbc-file-queue-')), 'data.sqlite');
/** The jobs held in the file, as another process reads them. */
function heldIn(path: string): string[] {
  return rowsOf(path, 'SELECT key FROM queue_jobs WHERE done_at IS NULL ORDER BY seq').map((row) => String(row.key));
}

describe('createFileQueue', () => {
  it('a queue dropped without close (a killed process): the next one on the file runs what was left, in order, once', async () => {
    const path = databaseIn();
    const first = createFileQueue({ path, concurrency: 1, leaseMs: 60_000 });
    for (const key of ['a', 'b', 'c', 'd']) expect(await first.add(job(key))).toBe('added');
    expect(await first.add(job('b'))).toBe('present');
    expect(await first.add(job('b', 'other'))).toBe('conflict');
    // In the file before add answered.
    expect(heldIn(path)).toEqual(['a', 'b', 'c', 'd']);
    const ran: string[] = [];
    // The first process checks one and dies in the middle of the second (never finished).
    first.process(async (j): Promise<JobRun> => {
      ran.push(j.key);
      if (j.key === 'b') return new Promise<JobRun>(() => {});
      return { done: true };
    });
    await expect.poll(() => ran).toEqual(['a', 'b']);

    // The next process, past b's lease: b, c and d, once each; a (done) stays taken.
    const second = createFileQueue({ path, concurrency: 1, now: () => Date.now() + 61_000 });
    expect(await second.counts()).toMatchObject({ queued: 3, oldestAcceptedAt: 1 });
    const again: string[] = [];
    second.process(async (j) => {
      again.push(j.key);
      return { done: true };
    });
    await second.idle();
    expect(again).toEqual(['b', 'c', 'd']);
    expect(await second.add(job('a'))).toBe('present');
    await second.close();
    const third = createFileQueue({ path });
    expect((await third.counts()).queued).toBe(0);
    expect(heldIn(path)).toEqual([]);
    await third.close();
  });

  it('a job to retry stays; close keeps the held jobs in the file', async () => {
    const path = databaseIn();
    const first = createFileQueue({ path, concurrency: 1 });
    await first.add(job('a'));
    await first.add(job('b'));
    const ran: string[] = [];
    first.process(async (j) => {
      ran.push(j.key);
      return j.key === 'a' ? { retryInMs: 60_000 } : { done: true };
    });
    await expect.poll(() => ran).toEqual(['a', 'b']);
    await first.close();
    const second = createFileQueue({ path });
    expect((await second.counts()).queued).toBe(1);
    expect(heldIn(path)).toEqual(['a']);
    await second.close();
  });

  it('a job given up, its telling not kept, comes back with why (givenUp), to the next process too', async () => {
    const path = databaseIn();
    const first = createFileQueue({ path, concurrency: 1 });
    await first.add(job('a'));
    const givenUp = { ending: 'stale', reason: 'blackbox_stale', lastError: 'upstream_error' } as const;
    const seen: unknown[] = [];
    first.process(async (j) => {
      seen.push(j.givenUp);
      return { retryInMs: 60_000, givenUp };
    });
    await expect.poll(() => seen.length, { timeout: 10_000 }).toBe(1);
    await first.close();
    // The next process, a minute later: the job is due, as its file holds it.
    const second = createFileQueue({ path, now: () => Date.now() + 61_000 });
    second.process(async (j) => {
      seen.push(j.givenUp);
      return { done: true };
    });
    await expect.poll(() => seen, { timeout: 10_000 }).toEqual([undefined, givenUp]);
    await expect.poll(async () => (await second.counts()).queued, { timeout: 10_000 }).toBe(0);
    await second.close();
  }, 30_000);

  it('takes turns by visitor, as the memory queue does', async () => {
    const path = databaseIn();
    const queue = createFileQueue({ path, concurrency: 1 });
    for (const [key, visitor] of [
      ['x1', 'x'],
      ['x2', 'x'],
      ['x3', 'x'],
      ['y1', 'y'],
      ['z1', 'z'],
      ['y2', 'y'],
    ] as const)
      await queue.add(job(key, 'f', visitor));
    const ran: string[] = [];
    queue.process(async (j) => {
      ran.push(j.key);
      return { done: true };
    });
    await queue.idle();
    expect(ran).toEqual(['x1', 'y1', 'z1', 'x2', 'y2', 'x3']);
    await queue.close();
  });

  it('two queues on one file (two processes): every job run once, none twice', async () => {
    const path = databaseIn();
    const a = createFileQueue({ path, concurrency: 2 });
    const b = createFileQueue({ path, concurrency: 2 });
    const ran: string[] = [];
    const work = async (j: CheckJob): Promise<JobRun> => {
      ran.push(j.key);
      await new Promise((r) => setTimeout(r, 5));
      return { done: true };
    };
    a.process(work);
    b.process(work);
    const keys = Array.from({ length: 40 }, (_, i) => `k${i}`);
    const answers = await Promise.all(keys.map((key, i) => (i % 2 ? a : b).add(job(key))));
    expect(answers.every((answer) => answer === 'added')).toBe(true);
    // The same key through the other queue: held already.
    expect(await a.add(job('k0'))).toBe('present');
    await expect.poll(() => ran.length, { timeout: 15_000 }).toBe(40);
    expect([...ran].sort()).toEqual([...keys].sort());
    await Promise.all([a.close(), b.close()]);
  });

  it('full past maxQueued, nothing written for it', async () => {
    const path = databaseIn();
    const queue = createFileQueue({ path, maxQueued: 1 });
    expect(await queue.add(job('a'))).toBe('added');
    expect(await queue.add(job('b'))).toBe('full');
    expect(heldIn(path)).toEqual(['a']);
    await queue.close();
    // Closed twice (a handler's close() called again on a second signal): nothing more happens.
    await queue.close();
  });

  it('its file is 0600 in a directory it made 0700', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'bbc-file-queue-')), 'made');
    const path = join(dir, 'data.sqlite');
    const queue = createFileQueue({ path });
    await queue.add(job('a'));
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const file of [path, `${path}-wal`, `${path}-shm`]) expect(statSync(file).mode & 0o777).toBe(0o600);
    await queue.close();
  });

  it('a damaged file is named at start, with what to do', () => {
    const path = databaseIn();
    writeFileSync(path, 'SQLite format 3\0' + 'garbage'.repeat(200));
    expect(() => createFileQueue({ path })).toThrow(
      expect.objectContaining({
        code: 'invalid_configuration',
        message: expect.stringContaining(`${path} is damaged (file is not a database). Stop every process`),
      }),
    );
  });
});

describe('createFileQueue, signed-in shoppers first', () => {
  it('runs signed-in checkouts ahead of guests, by turns, and sheds guests first at the bound', async () => {
    await expectSignedInFirst((maxQueued) => createFileQueue({ path: databaseIn(), maxQueued, concurrency: 1 }));
  });

  it("keeps one visitor's arrival order when its count fell meanwhile", async () => {
    await expectArrivalOrder(() => createFileQueue({ path: databaseIn(), concurrency: 1 }));
  });

  it('leaves a job only reading its decision out of the checks waiting', async () => {
    await expectReadingApart(() => createFileQueue({ path: databaseIn(), concurrency: 3 }));
  });

  it("is full at the late check's lateAt, counting the running jobs too", async () => {
    await expectFullAtLateAt(() => createFileQueue({ path: databaseIn(), concurrency: 1 }));
  });

  it('keeps the signed-in visitors only while they hold jobs', async () => {
    const path = databaseIn();
    const queue = createFileQueue({ path, concurrency: 1 });
    await queue.add({ ...job('s1', 'f', 'account s'), lane: 'signed-in' });
    expect(rowsOf(path, 'SELECT visitor FROM queue_signed_in')).toEqual([{ visitor: 'visitor account s' }]);
    queue.process(async () => ({ done: true }));
    await queue.idle();
    expect(rowsOf(path, 'SELECT visitor FROM queue_signed_in')).toEqual([]);
    await queue.close();
  });
});

describe('the file queue at work', () => {
  it('runs at most `concurrency` jobs at once, the next as soon as one ends', async () => {
    const queue = createFileQueue({ path: databaseIn(), concurrency: 1 });
    for (const key of ['a', 'b']) await queue.add(job(key));
    const work = gatedRun();
    queue.process(work.run);
    await expect.poll(() => work.started).toEqual(['a']);
    work.release('a');
    await expect.poll(() => work.started).toEqual(['a', 'b']);
    work.release('b');
    await queue.idle();
    await queue.close();
  });

  /** A few turns of the event loop (no timer: the queue's polls are faked and never fire). */
  const turns = async () => {
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  };

  it('idle waits for the job under way, and a job added once processing started runs at once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval', 'clearTimeout', 'clearInterval'] });
    try {
      const queue = createFileQueue({ path: databaseIn(), concurrency: 1 });
      const work = gatedRun();
      queue.process(work.run);
      // Nothing waited: no poll (its timer never fires here) is needed for the job to start.
      expect(await queue.add(job('a'))).toBe('added');
      await turns();
      expect(work.started).toEqual(['a']);
      let idle = false;
      const waited = queue.idle().then(() => (idle = true));
      await turns();
      expect(idle).toBe(false);
      // The next job starts when one ends, not at the next poll.
      await queue.add(job('b'));
      await turns();
      expect(work.started).toEqual(['a']);
      work.release('a');
      await turns();
      expect(work.started).toEqual(['a', 'b']);
      work.release('b');
      await waited;
      await queue.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it("a run that meets the tenant's limit pauses every job, not only its own", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval', 'clearTimeout', 'clearInterval'] });
    try {
      const queue = createFileQueue({ path: databaseIn(), concurrency: 1 });
      for (const key of ['a', 'b']) await queue.add(job(key));
      const ran: string[] = [];
      queue.process(async (j) => {
        ran.push(j.key);
        return j.key === 'a' ? { retryInMs: 60_000, pauseQueue: true } : { done: true };
      });
      await turns();
      expect(ran).toEqual(['a']);
      await queue.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('a run that throws is tried again a second later, not at the end of its lease', async () => {
    const errors: unknown[] = [];
    const queue = createFileQueue({ path: databaseIn(), leaseMs: 60_000, onError: (error) => errors.push(error) });
    await queue.add(job('a'));
    let runs = 0;
    queue.process(async () => {
      if (++runs === 1) throw new Error('a bug in the check');
      return { done: true };
    });
    await queue.idle();
    expect(runs).toBe(2);
    expect(errors).toEqual([]);
    await queue.close();
  });

  it("renews a running job's lease every third of it: another process never takes it meanwhile", async () => {
    const path = databaseIn();
    const first = createFileQueue({ path, leaseMs: 300 });
    await first.add(job('a'));
    const work = gatedRun();
    first.process(work.run);
    await expect.poll(() => work.started).toEqual(['a']);
    const other: string[] = [];
    const second = createFileQueue({ path, leaseMs: 300 });
    second.process(async (j) => {
      other.push(j.key);
      return { done: true };
    });
    const leaseAt = () => Number(rowsOf(path, 'SELECT lease_until FROM queue_jobs')[0]!.lease_until);
    const start = leaseAt();
    // Renewed past two of the other's polls (every 500 ms).
    await expect.poll(leaseAt, { timeout: 10_000 }).toBeGreaterThan(start + 1200);
    expect(other).toEqual([]);
    work.release('a');
    await first.idle();
    await Promise.all([first.close(), second.close()]);
  });

  it("a clock stepped past a running job's lease (NTP, a resumed VM): its own process claims it back, never runs it twice", async () => {
    const path = databaseIn();
    let clock = Date.now();
    const queue = createFileQueue({ path, now: () => clock, concurrency: 4, leaseMs: 10_000 });
    await queue.add(job('a'));
    const work = gatedRun();
    queue.process(work.run);
    await expect.poll(() => work.started).toEqual(['a']);
    const leaseAt = () => Number(rowsOf(path, 'SELECT lease_until FROM queue_jobs')[0]!.lease_until);
    const before = leaseAt();
    // Past the lease before a renewal (every third of it): the next poll finds it free.
    clock += 11_000;
    await expect.poll(leaseAt, { timeout: 5_000 }).toBeGreaterThan(before + 10_000);
    expect(work.started).toEqual(['a']);
    work.release('a');
    await queue.idle();
    await queue.close();
  });

  it('after close, takes nothing (full) and closes once', async () => {
    const queue = createFileQueue({ path: databaseIn() });
    await queue.close();
    expect(await queue.add(job('a'))).toBe('full');
    await queue.close();
  });

  it('a full disk rejects add and counts (503), and is told once while jobs run, again after a write succeeds', async () => {
    const engine = faultyEngine();
    const errors: unknown[] = [];
    const queue = engine.opening(() => createFileQueue({ path: databaseIn(), onError: (error) => errors.push(error) }));
    const full = () => sqliteError(13, 'database or disk is full');
    engine.state.fail = full();
    await expect(queue.add(job('a'))).rejects.toMatchObject({ code: 'store_full' });
    engine.state.fail = full();
    await expect(queue.counts()).rejects.toMatchObject({ code: 'store_full' });
    expect(await queue.add(job('a'))).toBe('added');
    // The look for a job fails at each poll: told once.
    engine.state.fail = full();
    queue.process(async () => ({ done: true }));
    await expect.poll(() => errors.length).toBe(1);
    engine.state.fail = full();
    await expect.poll(() => engine.state.fail).toBeUndefined();
    expect(errors).toHaveLength(1);
    // A job taken is a write that succeeded: the next failure is told again.
    await queue.idle();
    engine.state.fail = full();
    await expect.poll(() => errors.length).toBe(2);
    await queue.close();
  });
});
