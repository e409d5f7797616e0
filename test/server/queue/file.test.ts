// The file queue (src/server/queue/file.ts): what add answered `added` for is committed to the
// SQLite file before the answer, a job run to its end is marked done (its key stays taken), and
// a new queue on the same file (the next process) runs what was left, in order, once; queues
// sharing one file (two processes) run each job once; a damaged file is named at start.
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFileQueue } from '../../../src/server/queue/file.js';
import type { CheckJob, JobRun } from '../../../src/server/queue/queue.js';
import { rowsOf } from '../../support/sqlite.js';
import { expectSignedInFirst } from '../../support/lanes.js';

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
