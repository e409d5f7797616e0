// The file queue (src/server/queue/file.ts) when its file refuses to mark a job's end (a full
// disk): told once, asked again every second with the lease kept, and done once there is
// room; a close meanwhile does not wait for the room, and the job stays held for a next run.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { DeviceRiskError } from '../../../src/server/errors.js';
import { createFileQueue } from '../../../src/server/queue/file.js';
import { queuedJob } from '../../support/queued-job.js';
import { rowsOf } from '../../support/sqlite.js';

let full = false;
/** The ends of a job the file was asked to mark. */
let attempts = 0;
vi.mock('../../../src/server/queue/file-rows.js', async (original) => {
  const actual = await original<typeof import('../../../src/server/queue/file-rows.js')>();
  return {
    ...actual,
    queueRows(...args: Parameters<typeof actual.queueRows>) {
      const rows = actual.queueRows(...args);
      return {
        ...rows,
        finish(key: string, owner: string) {
          attempts++;
          if (full) throw new DeviceRiskError('store_full', 'the disk is full', { retryAfter: 5 });
          rows.finish(key, owner);
        },
      };
    },
  };
});

const job = queuedJob('a', { acceptedAt: 1 });
const heldIn = (path: string) => rowsOf(path, 'SELECT key FROM queue_jobs WHERE done_at IS NULL').length;

describe('createFileQueue on a file that refuses the end of a job', () => {
  it('told once, asked again until there is room, then done', async () => {
    full = true;
    attempts = 0;
    const path = join(mkdtempSync(join(tmpdir(), 'bbc-file-queue-')), 'data.sqlite');
    const errors: unknown[] = [];
    const queue = createFileQueue({ path, onError: (error) => void errors.push(error) });
    await queue.add(job);
    let runs = 0;
    queue.process(async () => {
      runs++;
      return { done: true };
    });
    // Asked again every second, while the queue looks for jobs every half second: told once all the same.
    await expect.poll(() => attempts, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    expect(errors).toEqual([expect.objectContaining({ code: 'store_full' })]);
    full = false;
    await queue.idle();
    expect(heldIn(path)).toBe(0);
    expect([runs, errors.length]).toEqual([1, 1]);
    await queue.close();
  });

  it('a close while it still refuses returns, and the job stays held', async () => {
    full = true;
    const path = join(mkdtempSync(join(tmpdir(), 'bbc-file-queue-')), 'data.sqlite');
    const errors: unknown[] = [];
    const queue = createFileQueue({ path, onError: (error) => void errors.push(error) });
    await queue.add(job);
    queue.process(async () => ({ done: true }));
    await expect.poll(() => errors.length).toBe(1);
    await queue.close();
    expect(heldIn(path)).toBe(1);
    full = false;
  });
});
