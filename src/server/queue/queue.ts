/**
 * The checks the endpoint has accepted and not yet run: held until the service's limits let
 * them through (docs/fleet.md#the-queue), fairly across visitors (each visitor's n-th waits
 * behind every visitor's first), in arrival order within one visitor. One small interface, two engines:
 * this process's memory (one instance, `createMemoryQueue`) and BullMQ on the fleet's Redis
 * (`blackbox-capture/server/bullmq`).
 */
import { systemNow, type Now } from '../time/clock.js';
import type { CustomerMapping } from '../endpoint/check.js';
import { checkOptions } from '../options-table.js';
import { MEMORY_QUEUE_OPTIONS } from './settings.js';
import type { QueueEvent } from '../status/names.js';

/**
 * A customer as a job holds it: resolveCustomer's CustomerMapping, with its own transaction,
 * if any, sealed (client.sealTransaction), so that the job stays plain JSON.
 */
export type QueuedCustomer = Omit<CustomerMapping, 'transaction'> & { transaction?: string };

/** One accepted checkout. Plain JSON: a shared queue stores it as it is. */
export interface CheckJob {
  /** The Idempotency-Key (or one the endpoint made for a request without): one job per key. */
  key: string;
  /** SHA-256 of the origin, the customer and the blackbox: the same key with another request is refused. */
  fingerprint: string;
  blackbox: string;
  customer: QueuedCustomer;
  /** When the endpoint accepted it (epoch ms): past the trust bound it is not uploaded. */
  acceptedAt: number;
  /**
   * Who posted it: the shop's visitor (`visitor`), the caller's network (`addressPrefix`), or
   * its customer when neither is known. Every queue takes turns by it; none: the job is a
   * visitor of its own.
   */
  visitor?: string;
  /**
   * `signed-in`: run ahead of every other held job (by turns among signed-in visitors); `guest`:
   * refused at `guestBound` of the queue's bound. Absent: neither (docs/server.md#signed-in-shoppers-first).
   */
  lane?: Lane;
  /**
   * Given up, and its telling not yet kept (the gateway's outbox refused it): the next run,
   * on any instance, only tells it again, and never checks it (queued.ts).
   */
  givenUp?: GivenUp;
  /**
   * Checked (uploaded and finalized): it waits only to read its decision, or to tell it, and
   * needs no account request. It is not among the checks waiting: not in `counts().queued` nor
   * the bounds of `add` (docs/fleet.md#the-queue). The count is the reads after the first that
   * were scheduled (queued.ts): a restart, or another instance, goes on with the schedule.
   */
  reading?: number;
  /**
   * When `onResult` first failed to take its decision (epoch ms): the job tells it again until
   * half the life of its key's record has passed since, then tells the order it has none (queued.ts).
   */
  untoldSince?: number;
}

/** Why a checkout will never be checked, as its NotCheckedError tells it (queued.ts). */
export interface GivenUp {
  /** How the job leaves the queue once told: dropped past the trust bound, or failed for good. */
  ending: Extract<QueueEvent, 'stale' | 'failed'>;
  /** The kit's code for why: `blackbox_stale`, or the failure's code. */
  reason: string;
  /** The code of the last failed try, for a checkout given up past the trust bound. */
  lastError?: string;
}

export type Lane = 'signed-in' | 'guest';
/** Where a checkout waits: its visitor's turns, in its lane (the endpoint's admission decides it). */
export type QueuePlace = Pick<CheckJob, 'visitor' | 'lane'>;

/** The share of a queue's bound guests may fill: the last tenth is kept for signed-in shoppers. */
export const GUEST_SHARE = 0.9;

/**
 * The jobs a queue may hold when `job` comes, past which it is `full`: `maxQueued`, a guest nine
 * tenths of it; fewer when `lateAt` (add's) is lower.
 */
export const boundFor = (job: Pick<CheckJob, 'lane'>, maxQueued: number, lateAt = Infinity): number =>
  Math.min(lateAt, job.lane === 'guest' ? Math.floor(maxQueued * GUEST_SHARE) : maxQueued);

/**
 * What `add` did: held it, found it already held (same request), found another request under
 * its key, or had no room; or held it without the confirmation asked for (Redis WAIT short of
 * its replicas, told to the queue's onError): the job may run, or a failover may take it back.
 * `present-unconfirmed`: found it held, and still without that confirmation (a retry of an
 * `unconfirmed` add): not yet safe to answer 202 either. `unanswered`: the add failed or its
 * job could not be read back after it, so it may be held all the same (a connection cut after
 * Redis ran the add): neither held nor refused, answered as an add that did not answer in time.
 */
export type AddResult =
  'added' | 'present' | 'conflict' | 'full' | 'unconfirmed' | 'present-unconfirmed' | 'unanswered';

/**
 * How one run of a job ended: done (checked, or given up and told; `stale`: dropped unchecked
 * past the trust bound, which a shared queue counts apart from the drained), or to be run again later.
 */
export type JobRun =
  | { done: true; stale?: boolean }
  | {
      done?: false;
      retryInMs: number;
      /** The tenant's limit was reached: nothing else starts before `retryInMs` either. */
      pauseQueue?: boolean;
      /** Kept with the job (its `givenUp`), for whichever instance runs it next. */
      givenUp?: GivenUp;
      /** Kept with the job (its `reading`): it comes back only to read its decision, this many reads scheduled. */
      reading?: number;
      /** Kept with the job (its `untoldSince`): when onResult first failed to take its decision. */
      untoldSince?: number;
    };

/** The job as its next run needs it, a retry's `givenUp`, `reading` or `untoldSince` kept; undefined when none is new. */
export function keptFor(job: CheckJob, result: Extract<JobRun, { retryInMs: number }>): CheckJob | undefined {
  const reading = result.reading !== undefined && result.reading !== job.reading;
  const untold = result.untoldSince !== undefined && result.untoldSince !== job.untoldSince;
  if (!result.givenUp && !reading && !untold) return undefined;
  return {
    ...job,
    ...(result.givenUp ? { givenUp: result.givenUp } : {}),
    ...(reading ? { reading: result.reading } : {}),
    ...(untold ? { untoldSince: result.untoldSince } : {}),
  };
}

export interface QueueCounts {
  /** Jobs held for their check: waiting, delayed for a retry, or running; not those only `reading` a decision. */
  queued: number;
  /** When the oldest of them was accepted (epoch ms); undefined when none is held. */
  oldestAcceptedAt: number | undefined;
  /**
   * Jobs finished by every instance in the last minute, for a shared queue (each instance
   * sees only its own finish); undefined: the instance's own count is the whole.
   */
  drainedLastMinute?: number;
  /** Of a shared queue, the jobs every instance dropped stale in the last minute: not drained work. */
  staleLastMinute?: number;
}

export interface CheckQueue {
  /**
   * Holds the job durably (as durable as the engine: memory, or the shared Redis) before answering.
   * `lateAt`: the jobs held (waiting, delayed or running) at which this one could not start
   * within the trust bound; `full` then too. The endpoint's late check read the queue before,
   * and counts its own accepts since; the add counts again, just before it holds the job, so
   * that what other instances accepted in between is counted too (docs/fleet.md#many-addresses).
   */
  add(job: CheckJob, lateAt?: number): Promise<AddResult>;
  /** Starts running the jobs with `run`, by turns across visitors, oldest first within one, until `close`. Called once. */
  process(run: (job: CheckJob) => Promise<JobRun>): void;
  counts(): Promise<QueueCounts>;
  /** Stops taking jobs and waits for the running ones. Held jobs stay (in Redis: for another instance). */
  close(): Promise<void>;
  /**
   * After `close`: the jobs held in this process that no one will run (the memory queue's,
   * lost with the process), taken out of the queue. The endpoint tells each to onError
   * (`not_checked`). Absent, or empty, for a queue that keeps them for another instance.
   */
  leftBehind?(): CheckJob[];
}

export interface MemoryQueueOptions {
  /**
   * Jobs held at most; more are refused (`full`: the endpoint answers 503 with Retry-After).
   * Default 10000; the endpoint's default queue holds what drains within the trust bound (`maxQueuedChecks`).
   */
  maxQueued?: number;
  /** Jobs run at once. Default 4: the calls after the account create (upload, finalize, reads) overlap the next create. */
  concurrency?: number;
  now?: Now;
}

interface Held {
  job: CheckJob;
  /** Not run again before this (epoch ms). */
  notBefore: number;
  running: boolean;
}

/**
 * The queue of one instance, in its memory: a process that dies loses what it held (a fleet
 * uses BullMQ). Fair: jobs run by turns across visitors (`CheckJob.visitor`), so that one
 * visitor's flood does not keep every other shopper waiting behind it. Its n-th held job
 * waits behind every visitor's first; within one visitor, arrival order.
 */
export function createMemoryQueue(
  options: MemoryQueueOptions = {},
): CheckQueue & { idle(): Promise<void>; leftBehind(): CheckJob[] } {
  checkOptions(options, MEMORY_QUEUE_OPTIONS);
  const maxQueued = options.maxQueued ?? MEMORY_QUEUE_OPTIONS.maxQueued.default;
  const concurrency = options.concurrency ?? MEMORY_QUEUE_OPTIONS.concurrency.default;
  const now = options.now ?? systemNow;
  /** Arrival order: a Map iterates in insertion order, and a retried job keeps its place. */
  const held = new Map<string, Held>();
  /** Of them, the jobs only reading a decision: not checks waiting (CheckJob.reading). */
  let reading = 0;
  /**
   * Each visitor's held jobs in arrival order, by whose turn is next: the visitors none of whose
   * jobs has finished yet in the order they came, then the others, served longest ago first.
   */
  const fresh = new Map<string, Held[]>();
  const served = new Map<string, Held[]>();
  const visitorOf = (job: CheckJob) => (job.visitor === undefined ? `job ${job.key}` : `visitor ${job.visitor}`);

  /**
   * The held jobs in turn order: the signed-in visitors' first, second and so on, then every
   * other visitor's first, then every other's second, and so on.
   */
  function* turns(): Generator<Held> {
    const all = [...fresh.values(), ...served.values()];
    const signedIn = (line: Held[]) => line[0]!.job.lane === 'signed-in';
    for (let lines of [all.filter(signedIn), all.filter((line) => !signedIn(line))])
      for (let round = 0; lines.length > 0; round++) {
        for (const line of lines) yield line[round]!;
        lines = lines.filter((line) => line.length > round + 1);
      }
  }
  let run: ((job: CheckJob) => Promise<JobRun>) | undefined;
  let running = 0;
  let pausedUntil = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  const idleWaiters: Array<() => void> = [];
  const runs = new Set<Promise<void>>();

  function pump(): void {
    // Stryker disable next-line ConditionalExpression: clearing no timer does nothing, and a stale one only runs pump again
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (!run || closed) return;
    const at = now();
    let next = Infinity;
    for (const entry of turns()) {
      if (running >= concurrency) return;
      if (entry.running) continue;
      const due = Math.max(entry.notBefore, pausedUntil);
      if (due > at) {
        next = Math.min(next, due);
        continue;
      }
      start(entry);
    }
    // A job finishing pumps again by itself: a timer is needed only for a due time while a slot is free.
    // Stryker disable next-line ConditionalExpression,LogicalOperator,EqualityOperator: an extra timer only runs pump again, which starts nothing more
    if (next !== Infinity && running < concurrency) timer = setTimeout(pump, next - at);
  }

  function start(entry: Held): void {
    entry.running = true;
    running++;
    const going = run!(entry.job)
      .catch((): JobRun => ({ retryInMs: 1000 }))
      .then((result) => {
        entry.running = false;
        running--;
        if (result.done) leave(entry);
        else {
          const kept = keptFor(entry.job, result);
          if (kept?.reading !== undefined && entry.job.reading === undefined) reading++;
          entry.job = kept ?? entry.job;
          entry.notBefore = now() + result.retryInMs;
          if (result.pauseQueue) pausedUntil = Math.max(pausedUntil, entry.notBefore);
        }
        if (held.size === 0) for (const wake of idleWaiters.splice(0)) wake();
        pump();
      });
    runs.add(going);
    // Stryker disable next-line ArrowFunction: a settled run kept in the set only costs memory; close awaits it at once
    void going.finally(() => runs.delete(going));
  }

  function leave(entry: Held): void {
    held.delete(entry.job.key);
    if (entry.job.reading !== undefined) reading--;
    const visitor = visitorOf(entry.job);
    const line = fresh.get(visitor) ?? served.get(visitor)!;
    line.splice(line.indexOf(entry), 1);
    fresh.delete(visitor);
    served.delete(visitor);
    // Served (a job to retry keeps its turn): the visitor's next job waits behind every other visitor's.
    if (line.length > 0) served.set(visitor, line);
  }

  return {
    async add(job, lateAt) {
      const present = held.get(job.key);
      if (present) return present.job.fingerprint === job.fingerprint ? 'present' : 'conflict';
      if (held.size - reading >= boundFor(job, maxQueued, lateAt)) return 'full';
      const entry: Held = { job, notBefore: 0, running: false };
      held.set(job.key, entry);
      const visitor = visitorOf(job);
      const line = fresh.get(visitor) ?? served.get(visitor);
      if (line) line.push(entry);
      else fresh.set(visitor, [entry]);
      queueMicrotask(pump);
      return 'added';
    },
    process(work) {
      run = work;
      pump();
    },
    async counts() {
      const oldest = [...held.values()].find((entry) => entry.job.reading === undefined);
      return { queued: held.size - reading, oldestAcceptedAt: oldest?.job.acceptedAt };
    },
    idle() {
      return held.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
    leftBehind() {
      if (!closed) return [];
      const left = [...held.values()].filter((entry) => !entry.running).map((entry) => entry.job);
      for (const job of left) leave(held.get(job.key)!);
      return left;
    },
    async close() {
      closed = true;
      // Stryker disable next-line ConditionalExpression: clearing no timer does nothing, and a pump after close starts nothing
      if (timer) clearTimeout(timer);
      await Promise.all(runs);
    },
  };
}
