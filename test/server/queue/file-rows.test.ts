// The file queue's rows (src/server/queue/file-rows.ts) on a data file, as another process
// reads it: the visitors' turns kept and dropped, a job's lease renewed and given back, the
// tenant's pause, a claim that finds nothing taking no writer's lock, and each failure naming
// what the queue was doing.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CheckJob } from '../../../src/server/queue/queue.js';
import { QUEUE_SCHEMA, queueRows } from '../../../src/server/queue/file-rows.js';
import { openDatabase } from '../../../src/server/sqlite/database.js';
import { faultyEngine, rowsOf, sqliteError } from '../../support/sqlite.js';

const job = (key: string, visitor?: string): CheckJob => ({
  key,
  fingerprint: 'f',
  blackbox: 'bb',
  customer: { customerInternalReference: `order-${key}` },
  acceptedAt: 7,
  ...(visitor ? { visitor } : {}),
});

function rowsOn(engine?: ReturnType<typeof faultyEngine>) {
  const path = join(mkdtempSync(join(tmpdir(), 'bbc-file-rows-')), 'data.sqlite');
  let clock = 1000;
  const open = () => openDatabase(path, QUEUE_SCHEMA);
  const rows = queueRows(engine ? engine.opening(open) : open(), () => clock);
  const read = (sql: string) => rowsOf(path, sql);
  return { rows, path, read, at: (to: number) => (clock = to) };
}

describe("the file queue's rows", () => {
  it('keep a turn per visitor (a job without one is its own), dropped once none of its jobs is held', () => {
    const { rows, read } = rowsOn();
    rows.add(job('a', 'v1'), 10);
    rows.add(job('b'), 10);
    expect(read('SELECT key, visitor FROM queue_jobs ORDER BY seq')).toEqual([
      { key: 'a', visitor: 'visitor v1' },
      { key: 'b', visitor: 'job b' },
    ]);
    const claimed = rows.claim('me', 60_000)!;
    expect(claimed).toEqual(job('a', 'v1'));
    rows.finish('a', 'me');
    expect(read('SELECT visitor FROM queue_visitors')).toEqual([{ visitor: 'job b' }]);
    // Done: its key stays taken, its job's text is not kept.
    expect(read("SELECT job, done_at FROM queue_jobs WHERE key = 'a'")).toEqual([{ job: '{}', done_at: 1000 }]);
  });

  it('a visitor with jobs left goes behind the others once one of its jobs finished', () => {
    const { rows, read } = rowsOn();
    rows.add(job('a1', 'v1'), 10);
    rows.add(job('a2', 'v1'), 10);
    rows.add(job('b1', 'v2'), 10);
    rows.claim('me', 60_000);
    rows.finish('a1', 'me');
    expect(read('SELECT visitor, served FROM queue_visitors ORDER BY turn')).toEqual([
      { visitor: 'visitor v2', served: 0 },
      { visitor: 'visitor v1', served: 1 },
    ]);
  });

  it('a job only reading: its key in queue_reading, by its lease holder only, and out of it when done', () => {
    const { rows, read } = rowsOn();
    rows.add(job('a'), 10);
    rows.add(job('b'), 10);
    rows.claim('me', 60_000);
    rows.retry('a', 'someone else', 1000, false, { ...job('a'), reading: 0 });
    expect(read('SELECT key FROM queue_reading')).toEqual([]);
    rows.retry('a', 'me', 0, false, { ...job('a'), reading: 0 });
    expect(read('SELECT key FROM queue_reading')).toEqual([{ key: 'a' }]);
    expect(rows.counts()).toEqual({ queued: 1, oldestAcceptedAt: 7 });
    // Read again: kept once; done: gone.
    expect(rows.claim('me', 60_000)).toEqual({ ...job('a'), reading: 0 });
    rows.retry('a', 'me', 0, false, { ...job('a'), reading: 1 });
    expect(read('SELECT key FROM queue_reading')).toEqual([{ key: 'a' }]);
    rows.claim('me', 60_000);
    rows.finish('a', 'me');
    expect(read('SELECT key FROM queue_reading')).toEqual([]);
    expect(rows.counts()).toEqual({ queued: 1, oldestAcceptedAt: 7 });
  });

  it('finish by another than the lease holder changes nothing', () => {
    const { rows, read } = rowsOn();
    rows.add(job('a'), 10);
    rows.claim('me', 60_000);
    rows.finish('a', 'someone else');
    expect(read('SELECT lease_owner, done_at FROM queue_jobs')).toEqual([{ lease_owner: 'me', done_at: null }]);
  });

  it("renew moves the holder's lease on; another's renewal does not", () => {
    const { rows, read, at } = rowsOn();
    rows.add(job('a'), 10);
    rows.claim('me', 500);
    at(1400);
    rows.renew('a', 'me', 500);
    rows.renew('a', 'someone else', 60_000);
    rows.renewQuietly('a', 'me', 600);
    expect(read('SELECT lease_until FROM queue_jobs')).toEqual([{ lease_until: 2000 }]);
  });

  it('retry gives the lease back and holds the job until its time; with pause, every job', () => {
    const { rows, read, at } = rowsOn();
    rows.add(job('a'), 10);
    rows.add(job('b'), 10);
    rows.claim('me', 60_000);
    rows.retry('a', 'me', 5000, false);
    expect(read("SELECT not_before, lease_owner, lease_until FROM queue_jobs WHERE key = 'a'")).toEqual([
      { not_before: 6000, lease_owner: null, lease_until: 0 },
    ]);
    expect(rows.claim('me', 60_000)?.key).toBe('b');
    rows.retry('b', 'me', 3000, true);
    rows.retry('b', 'me', 1000, true);
    // The pause is the later of the two: nothing is due before it.
    expect(read('SELECT until FROM queue_pause')).toEqual([{ until: 4000 }]);
    at(5999);
    expect(rows.claim('me', 60_000)?.key).toBe('b');
    at(6000);
    expect(rows.claim('me', 60_000)?.key).toBe('a');
  });

  it('a pause holds every job until it ends', () => {
    const { rows, at } = rowsOn();
    rows.add(job('a'), 10);
    rows.add(job('b'), 10);
    rows.claim('me', 60_000);
    rows.retry('a', 'me', 2000, true);
    at(2999);
    expect(rows.claim('me', 60_000)).toBeUndefined();
    at(3000);
    expect(rows.claim('me', 60_000)?.key).toBe('a');
  });

  it('a claim that finds nothing due takes no writer lock; one that loses a race finds nothing', () => {
    const engine = faultyEngine();
    const { rows, path } = rowsOn(engine);
    expect(rows.claim('me', 60_000)).toBeUndefined();
    expect(engine.state.executed).not.toContain('BEGIN IMMEDIATE');
    rows.add(job('a'), 10);
    // Due, but its visitor's row gone between the look and the claim (another process).
    rowsOf(path, 'DELETE FROM queue_visitors');
    expect(rows.claim('me', 60_000)).toBeUndefined();
  });

  it('counts what is held, the oldest accepted first; none held: no oldest', () => {
    const { rows } = rowsOn();
    expect(rows.counts()).toEqual({ queued: 0, oldestAcceptedAt: undefined });
    rows.add(job('a'), 10);
    expect(rows.counts()).toEqual({ queued: 1, oldestAcceptedAt: 7 });
  });

  it('close closes the file', () => {
    const engine = faultyEngine();
    const { rows } = rowsOn(engine);
    rows.close();
    expect(engine.state.closed).toBe(1);
  });

  it.each([
    ['add', 'the queue took a checkout', (rows: ReturnType<typeof queueRows>) => rows.add(job('z'), 10)],
    ['claim', 'the queue looked for a job', (rows: ReturnType<typeof queueRows>) => rows.claim('me', 1000)],
    ['renew', 'the queue renewed a lease', (rows: ReturnType<typeof queueRows>) => rows.renew('a', 'me', 1000)],
    ['finish', 'the queue marked a job done', (rows: ReturnType<typeof queueRows>) => rows.finish('a', 'me')],
    ['retry', 'the queue put a job back', (rows: ReturnType<typeof queueRows>) => rows.retry('a', 'me', 1, false)],
    ['counts', 'the queue counted its jobs', (rows: ReturnType<typeof queueRows>) => rows.counts()],
  ])('%s on a full disk is store_full naming what the queue did', (_, what, call) => {
    const engine = faultyEngine();
    const { rows } = rowsOn(engine);
    rows.add(job('a'), 10);
    engine.state.fail = sqliteError(13, 'database or disk is full');
    expect(() => call(rows)).toThrow(
      expect.objectContaining({ code: 'store_full', message: expect.stringContaining(`: ${what} was refused`) }),
    );
  });

  it('a claim that fails once it found a job names that', () => {
    const engine = faultyEngine();
    const { rows } = rowsOn(engine);
    rows.add(job('a'), 10);
    // The look succeeds; the claim's own read fails.
    engine.state.fail = sqliteError(13, 'database or disk is full');
    engine.state.skip = 1;
    expect(() => rows.claim('me', 1000)).toThrow(
      expect.objectContaining({ message: expect.stringContaining(': the queue took its next job was refused') }),
    );
  });

  it('renewQuietly lets a failure pass: the lease lapses, and another takes the job then', () => {
    const engine = faultyEngine();
    const { rows, at } = rowsOn(engine);
    rows.add(job('a'), 10);
    rows.claim('me', 1000);
    engine.state.fail = sqliteError(13, 'database or disk is full');
    at(1500);
    expect(() => rows.renewQuietly('a', 'me', 1000)).not.toThrow();
    // Not renewed (a renewal would hold it to 2500): free at 2000, when the first lease ends.
    at(1999);
    expect(rows.claim('other', 1000)).toBeUndefined();
    at(2000);
    expect(rows.claim('other', 1000)?.key).toBe('a');
  });
});
