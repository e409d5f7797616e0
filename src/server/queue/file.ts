/**
 * The queue that outlives its process: every accepted job is a row of a SQLite file
 * (sqlite/database.ts), committed before `add` answers `added`. Several processes on one file
 * (an overlapping deploy, two handlers) share it safely: a process claims a job in a
 * transaction under a lease (its expiry in the row), renewed while the check runs; a job
 * whose holder died is taken again once its lease lapses. The memory queue's turns: each
 * visitor's n-th job waits behind every visitor's first. Node, Deno and Bun (node:sqlite;
 * runtimes/checks.mjs). A handler given no queue keeps one in its data directory (default.ts).
 */
import { systemNow, unrefd } from '../time/clock.js';
import { isDeviceRiskError, onErrorOf } from '../errors.js';
import { checkOptions } from '../options-table.js';
import { openDatabase } from '../sqlite/database.js';
import { ownerMark } from '../store/lease.js';
import {
  keptFor,
  type AddResult,
  type CheckJob,
  type CheckQueue,
  type JobRun,
  type MemoryQueueOptions,
} from './queue.js';
import { FILE_QUEUE_OPTIONS } from './settings.js';
import { QUEUE_SCHEMA, queueRows } from './file-rows.js';

export interface FileQueueOptions extends MemoryQueueOptions {
  /**
   * The database file (SQLite): made when missing (0600, its directory 0700), read at start.
   * Several queues, of this process or others, may share it: each job is run by one at a time.
   */
  path: string;
  /** How long a claimed job is held by its process without a renewal (renewed every third), in ms. Default 10000. */
  leaseMs?: number;
  /** Told what fails while jobs are run (a full disk, a damaged file). Default one line on console.error. */
  onError?: (error: unknown) => void;
}

/** How often a queue looks for jobs another process added or left, in ms. */
const POLL_MS = 500;

/**
 * A queue in the SQLite file at `path`. `added` only after the commit; a full disk or an I/O
 * error rejects `add` (store_full, store_unavailable: 503) and holds nothing. A job run to its
 * end stays as done for a day, so that the same key posted again is `present`, not run twice.
 * Everything accepted is checked at least once: a job whose process died while its check ran
 * is run again after its lease.
 */
export function createFileQueue(options: FileQueueOptions): CheckQueue & { idle(): Promise<void> } {
  checkOptions(options, FILE_QUEUE_OPTIONS);
  const maxQueued = options.maxQueued ?? FILE_QUEUE_OPTIONS.maxQueued.default;
  const concurrency = options.concurrency ?? FILE_QUEUE_OPTIONS.concurrency.default;
  const leaseMs = options.leaseMs ?? FILE_QUEUE_OPTIONS.leaseMs.default;
  const now = options.now ?? systemNow;
  const onError = onErrorOf(options.onError);
  const rows = queueRows(openDatabase(options.path, QUEUE_SCHEMA), now);
  const me = ownerMark();
  let run: ((job: CheckJob) => Promise<JobRun>) | undefined;
  let running = 0;
  let closed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let failing = false;
  const runs = new Set<Promise<void>>();
  /** The keys of the jobs running in this process. */
  const active = new Set<string>();
  const idleWaiters: Array<() => void> = [];

  /** A failure of the file while running jobs: told once until a write to it succeeds again. */
  function told(error: unknown): void {
    const first = !failing;
    failing = true;
    if (first) onError(error);
  }
  const wrote = () => void (failing = false);

  function pump(): void {
    clearTimeout(timer);
    timer = undefined;
    if (!run || closed) return;
    try {
      while (running < concurrency) {
        const job = rows.claim(me, leaseMs);
        if (!job) break;
        wrote();
        // Its lease lapsed while it runs here (the clock stepped past a renewal): claimed back, not run twice.
        if (!active.has(job.key)) start(job);
      }
      if (idleWaiters.length > 0 && rows.counts().queued === 0) for (const wake of idleWaiters.splice(0)) wake();
    } catch (error) {
      told(error);
    }
    // Another process may add or leave jobs: looked for again, without keeping the process alive.
    timer = unrefd(setTimeout(pump, POLL_MS));
  }

  function start(job: CheckJob): void {
    running++;
    active.add(job.key);
    const renewal = unrefd(
      setInterval(() => {
        try {
          rows.renew(job.key, me, leaseMs);
        } catch (error) {
          told(error);
        }
      }, leaseMs / 3),
    );
    const going = run!(job)
      .catch((): JobRun => ({ retryInMs: 1000 }))
      .then((result) => settle(job, result))
      .finally(() => {
        clearInterval(renewal);
        running--;
        active.delete(job.key);
        runs.delete(going);
        if (!closed) queueMicrotask(pump);
      });
    runs.add(going);
  }

  /**
   * Writes how the run ended; a file that refuses it (a full disk) is asked again every second,
   * the lease renewed meanwhile, until close: then the lease lapses and the job runs again.
   */
  async function settle(job: CheckJob, result: JobRun): Promise<void> {
    for (;;) {
      try {
        if (result.done) rows.finish(job.key, me);
        else rows.retry(job.key, me, result.retryInMs, result.pauseQueue === true, keptFor(job, result));
        wrote();
        return;
      } catch (error) {
        told(error);
        if (!isDeviceRiskError(error) || closed) return;
        rows.renewQuietly(job.key, me, leaseMs);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  }

  return {
    add(job, lateAt): Promise<AddResult> {
      if (closed) return Promise.resolve('full');
      try {
        const added = rows.add(job, maxQueued, lateAt);
        if (added === 'added') queueMicrotask(pump);
        return Promise.resolve(added);
      } catch (error) {
        return Promise.reject(error);
      }
    },
    process(work) {
      run = work;
      pump();
    },
    counts: () => {
      try {
        return Promise.resolve(rows.counts());
      } catch (error) {
        return Promise.reject(error);
      }
    },
    idle: () =>
      new Promise<void>((resolve) => {
        idleWaiters.push(resolve);
        queueMicrotask(pump);
      }),
    async close() {
      if (closed) return;
      closed = true;
      clearTimeout(timer);
      await Promise.all(runs);
      rows.close();
    },
  };
}
