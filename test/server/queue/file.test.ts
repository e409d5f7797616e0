// The file queue: what add answered `added` for is on disk before the answer, a job run to its
// end is marked done, and a new queue on the same path (the next process) runs what was left,
// in order, once; a torn last line is skipped and the journal stays bounded.
import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { createFileQueue } from '../../../src/server/queue/file.js';
import type { CheckJob, JobRun } from '../../../src/server/queue/queue.js';

const job = (key: string, fingerprint = 'f'): CheckJob => ({
  key,
  fingerprint,
  blackbox: 'bb',
  customer: { customerInternalReference: `order-${key}` },
  acceptedAt: 1,
});
const journal = () => join(mkdtempSync(join(tmpdir(), 'bbc-file-queue-')), 'queue.jsonl');
/** createFileQueue as a new process has it: its module loaded afresh, holding none of this one's locks. */
async function nextProcess(): Promise<typeof createFileQueue> {
  vi.resetModules();
  return (await import('../../../src/server/queue/file.js')).createFileQueue;
}

describe('createFileQueue', () => {
  it('a queue dropped without close (a killed process): the next one on the path runs what was left, in order, once', async () => {
    const path = journal();
    const first = createFileQueue({ path, concurrency: 1 });
    for (const key of ['a', 'b', 'c', 'd']) expect(await first.add(job(key))).toBe('added');
    expect(await first.add(job('b'))).toBe('present');
    expect(await first.add(job('b', 'other'))).toBe('conflict');
    // On disk before add answered.
    expect(readFileSync(path, 'utf8').split('\n').filter(Boolean)).toHaveLength(4);
    const ran: string[] = [];
    // The first process checks one and dies in the middle of the second (never finished).
    first.process(async (j): Promise<JobRun> => {
      ran.push(j.key);
      if (j.key === 'b') return new Promise<JobRun>(() => {});
      return { done: true };
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(ran).toEqual(['a', 'b']);
    // While it lives, no other queue of this process takes its journal.
    expect(() => createFileQueue({ path })).toThrow(
      expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining(`${path} is held`) }),
    );

    // Its lock names this pid, which no queue of the next process holds: taken over.
    const next = await nextProcess();
    const second = next({ path, concurrency: 1 });
    expect(await second.counts()).toMatchObject({ queued: 3, oldestAcceptedAt: 1 });
    const again: string[] = [];
    second.process(async (j) => {
      again.push(j.key);
      return { done: true };
    });
    await second.idle();
    expect(again).toEqual(['b', 'c', 'd']);
    await second.close();
    // Closed: its lock released, the next queue of that process takes the path.
    const third = next({ path });
    expect((await third.counts()).queued).toBe(0);
    expect(readFileSync(path, 'utf8')).toBe('');
    await third.close();
  });

  it('a torn last line (a kill mid-write) is skipped; a job to retry stays; close keeps the held jobs on disk', async () => {
    const path = journal();
    const first = createFileQueue({ path, concurrency: 1 });
    await first.add(job('a'));
    await first.add(job('b'));
    first.process(async (j) => (j.key === 'a' ? { retryInMs: 60_000 } : { done: true }));
    await new Promise((r) => setTimeout(r, 20));
    await first.close();
    appendFileSync(path, '{"add":{"key":"c","finger');
    const second = createFileQueue({ path });
    expect((await second.counts()).queued).toBe(1);
    expect(readFileSync(path, 'utf8')).toBe(JSON.stringify({ add: job('a') }) + '\n');
    await second.close();
  });

  it('the journal is compacted: past twice the jobs held plus 1000 lines it is rewritten to the held ones', async () => {
    const path = journal();
    const queue = createFileQueue({ path, concurrency: 8 });
    queue.process(async () => ({ done: true }));
    for (let i = 0; i < 1500; i++) await queue.add(job(`k${i}`));
    await queue.idle();
    const size = readFileSync(path, 'utf8').split('\n').filter(Boolean).length;
    expect(size).toBeLessThanOrEqual(1001);
    await queue.close();
    const next = createFileQueue({ path });
    expect((await next.counts()).queued).toBe(0);
    await next.close();
  });

  it('full past maxQueued, nothing written for it', async () => {
    const path = journal();
    const queue = createFileQueue({ path, maxQueued: 1 });
    expect(await queue.add(job('a'))).toBe('added');
    expect(await queue.add(job('b'))).toBe('full');
    expect(readFileSync(path, 'utf8').split('\n').filter(Boolean)).toHaveLength(1);
    await queue.close();
    // Closed twice (a handler's close() called again on a second signal): nothing more happens.
    await queue.close();
  });
});
