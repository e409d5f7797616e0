// The file queue (src/server/queue/file.ts) when its file refuses to mark a job's end (a full
// disk): told once, asked again every second with the lease kept, and done once there is
// room; a close meanwhile does not wait for the room, and the job stays held for a next run. An
// onError that fails itself is logged: nothing unhandled, the queue polling on.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeviceRiskError } from '../../../src/server/errors.js';
import { createFileQueue } from '../../../src/server/queue/file.js';
import { queuedJob } from '../../support/queued-job.js';
import { rowsOf } from '../../support/sqlite.js';

let full = false;
/** The ends of a job the file was asked to mark. */
let attempts = 0;
/** Claims of a job the file refuses from now on (an I/O error). */
let claimFaults = 0;
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
        claim(owner: string, leaseMs: number) {
          if (claimFaults > 0) {
            claimFaults--;
            throw new DeviceRiskError('store_unavailable', 'disk I/O error', { retryAfter: 1 });
          }
          return rows.claim(owner, leaseMs);
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

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const newPath = () => join(mkdtempSync(join(tmpdir(), 'bbc-file-queue-')), 'data.sqlite');

function watch() {
  const unhandled: unknown[] = [];
  const uncaught: unknown[] = [];
  const onU = (r: unknown) => void unhandled.push(r);
  const onE = (e: unknown) => void uncaught.push(e);
  process.on('unhandledRejection', onU);
  process.on('uncaughtException', onE);
  return {
    unhandled,
    uncaught,
    off() {
      process.off('unhandledRejection', onU);
      process.off('uncaughtException', onE);
    },
  };
}

describe('createFileQueue with an onError that fails (errors.ts, safeOnError)', () => {
  afterEach(() => {
    full = false;
    claimFaults = 0;
    vi.restoreAllMocks();
  });

  it.each([
    [
      'throws',
      () => {
        throw new Error('logger broke');
      },
    ],
    ['rejects', () => Promise.reject(new Error('sink down'))],
  ] as const)(
    'a job end the file refuses once, onError %s: nothing unhandled, the job done once, run once',
    async (_, onError) => {
      vi.spyOn(console, 'error').mockImplementation(() => {});
      const w = watch();
      const path = newPath();
      full = true;
      const queue = createFileQueue({ path, leaseMs: 600, onError: onError as never });
      let runs = 0;
      try {
        await queue.add(queuedJob('a', { acceptedAt: 1 }));
        queue.process(async () => {
          runs++;
          return { done: true };
        });
        await pause(300);
        full = false; // room again
        await pause(2500);
        expect(w.unhandled).toEqual([]);
        expect(w.uncaught).toEqual([]);
        expect(heldIn(path)).toBe(0);
        expect(runs).toBe(1);
      } finally {
        await queue.close().catch(() => {});
        w.off();
      }
    },
  );

  it('a claim the file refuses once, onError throws: no uncaught exception, and the queue keeps polling (the job runs)', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const w = watch();
    const path = newPath();
    const queue = createFileQueue({
      path,
      onError: () => {
        throw new Error('logger broke');
      },
    });
    let runs = 0;
    try {
      queue.process(async () => {
        runs++;
        return { done: true };
      });
      await pause(50);
      claimFaults = 1; // the next poll's claim fails (I/O error), once
      await pause(700);
      // Added by another process (straight into the file): found by polling only.
      const other = createFileQueue({ path });
      await other.add(queuedJob('b', { acceptedAt: 1 }));
      await other.close();
      await pause(1500);
      expect(w.uncaught).toEqual([]);
      expect(w.unhandled).toEqual([]);
      expect(runs).toBe(1);
    } finally {
      await queue.close().catch(() => {});
      w.off();
    }
  });
});
