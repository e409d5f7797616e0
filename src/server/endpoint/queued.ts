/**
 * Accept at once, check when the quota allows (docs/fleet.md#the-queue): the endpoint
 * answers 202 with a reference as soon as the queue holds the checkout, and the queue runs
 * each check under its Idempotency-Key (idempotency.ts: the same lease, fencing and resumed
 * progress as a check run in the request), on whichever instance takes the job.
 */
import { contractedRate, type DeviceRiskClient } from '../api/device-risk-client.js';
import { RETRIEVAL_OPERATIONS } from '../api/retrieval.js';
import { RESULT_SCHEDULE_SECONDS } from '../api/result.js';
import type { Now } from '../time/clock.js';
import { settleWithin } from '../time/time-limit.js';
import {
  DeviceRiskError,
  ERR_BACKLOG_BEHIND,
  ERR_BLACKBOX_STALE,
  ERR_NOT_CHECKED,
  ERR_QUEUE_FULL,
  ERR_RATE_LIMITED,
  ERR_RESULT_NOT_READY,
  ERR_SHUTTING_DOWN,
  ERR_STORE_UNAVAILABLE,
  isDeviceRiskError,
  isRedisFull,
} from '../errors.js';
import { json, refuse, REFUSED_INTERNAL } from '../net/http.js';
import { queuedMessages } from '../messages.js';
import { doublingMs } from '../api/retry.js';
import { recordQueue, recordQueueWait, observeBacklog } from '../metrics.js';
import type { QueueEvent } from '../status/names.js';
import { createBacklogWarning, createDrainMeter, createLateCheck, type BacklogFigures } from '../queue/backlog.js';
import type { AddResult, CheckJob, CheckQueue, GivenUp, JobRun, QueuedCustomer, QueuePlace } from '../queue/queue.js';
import { REDIS_FULL_RETRY_AFTER_S, type Store } from '../store/store.js';
import { runCheck, type CustomerMapping, type CheckRunOptions, type DeviceRiskProgress } from './check.js';
import { isQuietRetry, ResultPending, TellingLater } from '../callbacks/told.js';
import { ResultUndeliveredError } from '../callbacks/undelivered.js';
import { failureAnswer, isPermanent, isUnavailable, namedFailure } from './failure-answer.js';
import { ownerMark } from '../store/lease.js';
import { BoundedMap } from './bounded-map.js';
import type { createIdempotency } from './idempotency.js';
import { markStale, readKeyRecord, recordedAnswer as keyRecordAnswer, recordKeyOf, reused } from './key-record.js';

/**
 * An accepted checkout (202) that will never be checked, told to onError once per checkout
 * with which order it was and why (`reason`): its instance's memory queue held it when the
 * handler closed (`shutting_down`), it was given up past the trust bound (`blackbox_stale`,
 * with the last try's failure in `lastError`), or its check failed for good (the failure's
 * code: `invalid_account_request`, `request_rejected`, `invalid_configuration`...).
 */
export class NotCheckedError extends DeviceRiskError {
  /** The checkout's reference (its Idempotency-Key), as the 202 gave it. */
  readonly reference: string;
  readonly customerInternalReference: string;
  readonly userReference?: string;
  /** When it was accepted (epoch ms). */
  readonly acceptedAt: number;
  /** Why it will never be checked: a code of the kit's. */
  readonly reason: string;
  /** The code of the last failed try, when it was given up past the trust bound. */
  readonly lastError?: string;

  constructor(job: CheckJob, reason: string = ERR_SHUTTING_DOWN, lastError?: string) {
    const keyStart = job.key.slice(0, 8);
    super(
      ERR_NOT_CHECKED,
      reason === ERR_SHUTTING_DOWN ? queuedMessages.notChecked(keyStart) : queuedMessages.givenUp(keyStart, reason),
      { operation: 'queue' },
    );
    this.reference = job.key;
    this.customerInternalReference = job.customer.customerInternalReference;
    if (job.customer.userReference !== undefined) this.userReference = job.customer.userReference;
    this.acceptedAt = job.acceptedAt;
    this.reason = reason;
    if (lastError !== undefined) this.lastError = lastError;
  }

  /** Names the order, not its key: the key is the browser's retry token. */
  override toJSON(): Record<string, unknown> {
    return {
      ...super.toJSON(),
      customerInternalReference: this.customerInternalReference,
      userReference: this.userReference,
      reason: this.reason,
      ...(this.lastError === undefined ? {} : { lastError: this.lastError }),
    };
  }
}

/** The default trust bound, in ms: see `maxQueuedMs` in handler.ts. */
export const DEFAULT_MAX_QUEUED_MS = 15 * 60_000;
/** Longest wait between two tries of a check that failed for a reason other than the tenant's limit, in ms. */
const MAX_RETRY_MS = 30_000;

export interface QueuedChecksOptions {
  queue: CheckQueue;
  store: Store;
  namespace: string;
  /** How long a key's record is kept, in ms (`idempotencyTtlMs`). */
  recordTtlMs: number;
  client: DeviceRiskClient;
  underKey: ReturnType<typeof createIdempotency>;
  /** The check's options for one job: the handler's onResult, its time limits, the progress to resume. */
  checkOptions: (
    job: CheckJob,
    progress: DeviceRiskProgress,
    save: (progress: DeviceRiskProgress) => Promise<void>,
  ) => CheckRunOptions;
  /** How long an accepted blackbox is trusted: past it, it is not uploaded (`blackbox_stale`). */
  maxQueuedMs: number;
  /**
   * Time limit of each call to the queue on a request's path (an add, a count), in ms: the
   * store's (`storeTimeoutMs`). A shared queue's Redis that hangs is answered, never waited for.
   */
  queueTimeoutMs: number;
  now: Now;
  /** Told every failure; for a NotCheckedError it may return a promise, which the job's end waits for. */
  onError: (error: unknown) => void;
  /** This instance's name in the queue gauges (default hostname:pid). */
  instanceId?: string;
}

export function createQueuedChecks(options: QueuedChecksOptions) {
  const { queue, client, underKey, now, onError, maxQueuedMs, queueTimeoutMs, recordTtlMs } = options;
  const meter = createDrainMeter(now, maxQueuedMs);
  const behind = createBacklogWarning(maxQueuedMs);
  const { tries, retryIn, forget } = triesCounter();
  const notChecked = notCheckedTeller(onError);
  const backlog = () => backlogOf(queue, meter, queueTimeoutMs);

  /** Said once per backlog: the checks waiting cannot all run within the trust bound at the rate the service allows. */
  async function warnIfBehind(): Promise<void> {
    const figures = await backlog().catch(() => undefined);
    if (figures && behind(figures)) onError(behindWarning(figures, maxQueuedMs));
  }

  // A checkout that would start past the trust bound is refused at once: 503 queue_full, the blackbox stays in the form.
  const lateCheck = createLateCheck(backlog, now, maxQueuedMs, contractedRate(client), (late) =>
    fullAnswer(late, onError),
  );
  const acceptance = acceptanceOf(meter, lateCheck, onError);

  /**
   * Holds the checkout in the queue, then answers 202 with its reference (or 200 with a finished
   * check's). `requestKey`: the request's Idempotency-Key; one without gets a key of its own, which
   * no other request knows, so nothing is recorded under it to read.
   */
  async function accept(
    requestKey: string | null,
    fingerprint: string,
    blackbox: string,
    customer: CustomerMapping,
    told: () => void,
    place: QueuePlace = {},
  ): Promise<Response> {
    const recorded = await recordedAnswer(options, requestKey, fingerprint);
    if (recorded) return recorded;
    const { refused, lateAt } = await lateCheck.late(place.lane);
    if (refused) return refused;
    const job = await jobOf(client, requestKey ?? ownerMark(), { fingerprint, blackbox, customer, place, now });
    const added = await addWithin(queue, job, lateAt, queueTimeoutMs, onError, acceptance.landed(told));
    // Neither held nor refused (a door leaves the order's claim to its lease): the retry finds it, or adds it.
    if (typeof added === 'object') return lateAnswer(added.landing, queueTimeoutMs, onError);
    if (added === 'unanswered') return markedAnswer(maybeHeldAnswers, onError, addLostFailure());
    if (added === 'conflict') return reused();
    // Held (and counted) already, still unconfirmed: the browser is sent back again.
    if (added === 'present-unconfirmed') return heldAnswer(onError, unconfirmedFailure()).answer;
    if (added === 'full') return fullAnswer(await backlog().catch(() => undefined), onError);
    if (added === 'added' || added === 'unconfirmed') {
      const after = await answerAfterAdd(options, requestKey, fingerprint, added);
      if (after && !after.held) return after.answer;
      acceptance.counted(told);
      // Held, but unread or unconfirmed: the job is counted, and the 503 sends the browser back for its answer.
      if (after) return after.answer;
    }
    return json({ accepted: true, reference: job.key }, 202);
  }

  /**
   * Leaves the queue: counted in the drain rate when it was tried, apart from it when dropped
   * stale, and not at all when the key's record answered before the job ran (`replayed`).
   */
  async function finished(job: CheckJob, event: Ending, why?: unknown): Promise<JobRun> {
    const givenUp = notChecked.givenUp(job, event, why);
    // Given up: kept with the job before it is told, by its next run at once. A process that dies
    // after telling leaves a job that tells it again, never one that checks the order after it.
    if (givenUp && !job.givenUp) return { retryInMs: 0, givenUp };
    // The shop's failure not kept: the job stays, only to tell it again (a check run again would
    // spend the tenant's quota on it).
    if (givenUp && !(await notChecked.told(job, givenUp))) return retryIn(job, backoffMs(tries.get(job.key)));
    forget(job.key);
    const stale = event === 'stale';
    if (stale) meter.stale();
    else if (event !== 'replayed') meter.drained();
    recordQueue(event);
    void warnIfBehind();
    return stale ? { done: true, stale } : { done: true };
  }

  /** One try of one job: done, or when to try again. Never throws: every failure is told to onError. */
  async function run(job: CheckJob): Promise<JobRun> {
    if (job.givenUp) return finished(job, job.givenUp.ending);
    const age = now() - job.acceptedAt;
    let stale: boolean;
    try {
      // Not given up when its key went on (checked, or uploaded, by a run elsewhere): this run finds that.
      stale = age > maxQueuedMs && (await givenUpStale(options, job, age));
    } catch (error) {
      onError(error);
      return failedTry(job, error);
    }
    if (stale) return finished(job, 'stale');
    if (!tries.has(job.key)) recordQueueWait(age);
    let answer: Response;
    /** Whether this try ran the check: one that did not was answered by the key's record. */
    let ran = false;
    try {
      const customer = await opened(client, job.customer);
      answer = await underKey(job.key, {
        fingerprint: job.fingerprint,
        customerTransaction: customer.transaction !== undefined,
        run: (progress, save) => {
          ran = true;
          return runCheck(client, job.blackbox, customer, options.checkOptions(job, progress, save));
        },
      });
    } catch (caught) {
      // Another path telling the decision is no failure (quiet); a full Redis is the store's (store_full), waited for.
      const error = namedFailure(caught);
      if (!isQuietRetry(error)) onError(error);
      return failedTry(job, error);
    }
    // Another attempt holds the key (a browser retry, another instance): its lease ends it, and this try comes back.
    if (answer.status === 409) return retryIn(job, 1000 * Number(answer.headers.get('retry-after') ?? 1));
    // Checked (or taken by another order) before this job ran, which a browser's retry added as the first ended: that
    // check was counted, this is none. Given up stale (410) by a run whose telling was lost (its process gone), read
    // by one whose clock is inside the bound: told now, never left silent.
    return finished(job, ran ? 'checked' : answer.status === 410 ? 'stale' : 'replayed');
  }

  function failedTry(job: CheckJob, error: unknown): JobRun | Promise<JobRun> {
    const kind = failureKind(error);
    if (kind === 'permanent') return finished(job, 'failed', error);
    // A decision not there yet: read on the documented schedule (not counted, and not a check
    // waiting: it needs no account request), then told it has none.
    if (kind === 'pending') return nextRead(job) ?? finished(job, 'failed', notReady(error, onError));
    if (error instanceof TellingLater && now() - (job.untoldSince ?? now()) >= recordTtlMs / 2)
      return finished(job, 'failed', untold(error, recordTtlMs / 2, onError));
    notChecked.tried(job, error);
    if (kind !== 'transient') recordQueue('service_refused');
    if (kind === 'limited') {
      // The tenant's quota: nothing else may start before it refills, and this job keeps its place.
      void warnIfBehind();
      return { retryInMs: 1000 * Math.max(1, retryAfterOf(error) ?? 1), pauseQueue: true };
    }
    const retry = retryIn(job, retryWaitMs(error, tries.get(job.key)));
    return isQuietRetry(error) ? toldLater(retry, job, error, now) : retry;
  }

  const unobserve = observeBacklog(backlog, options.instanceId);
  queue.process(run);
  return {
    accept,
    backlog,
    /** Stops the queue; each checkout it held here and will not check is told (`not_checked`), never dropped silently. */
    async close() {
      unobserve();
      await queue.close();
      notChecked.leftBehind(queue.leftBehind?.() ?? []);
    },
  };
}

/** Jobs a process notes at most (triesCounter, lastErrors): about 10 MB of notes. */
const NOTED_JOBS_MAX = 100_000;

/**
 * Per job in this process: its failed tries (the backoff of a check that keeps failing). A
 * pending decision's reads are counted apart, in the job (`reading`), so that failures before
 * never shorten its schedule and a restart goes on with it.
 */
function triesCounter() {
  const tries = new BoundedMap<string, number>(NOTED_JOBS_MAX);
  return {
    tries,
    /** The run that comes back in `ms`, a failed try counted. */
    retryIn(this: void, job: CheckJob, ms: number): Extract<JobRun, { retryInMs: number }> {
      tries.set(job.key, (tries.get(job.key) ?? 0) + 1);
      recordQueue('retried');
      return { retryInMs: ms };
    },
    // Stryker disable next-line BlockStatement: memory only: a key whose job ended is never run again here
    forget(this: void, key: string): void {
      tries.delete(key);
    },
  };
}

/**
 * The queue's figures now, with the drain this instance measured (`meter`); a count that does
 * not answer within `timeoutMs` rejects `store_unavailable`, which the late check answers 503
 * (nothing added: whether the checkout could start within the trust bound is not known).
 */
async function backlogOf(
  queue: CheckQueue,
  meter: ReturnType<typeof createDrainMeter>,
  timeoutMs: number,
): Promise<BacklogFigures> {
  const { queued, oldestAcceptedAt, drainedLastMinute, staleLastMinute } = await settleWithin(
    () => queue.counts(),
    timeoutMs,
    () =>
      new DeviceRiskError(ERR_STORE_UNAVAILABLE, queuedMessages.countsUnanswered(timeoutMs), {
        retryAfter: 1,
        operation: 'queue',
      }),
  );
  // A shared queue counts for the whole fleet; one that counts nothing is this instance's own.
  const fleet =
    drainedLastMinute === undefined ? undefined : { drained: drainedLastMinute, stale: staleLastMinute ?? 0 };
  return meter.figures(queued, oldestAcceptedAt, fleet);
}

/** A checkout as the queue holds it: its transaction token sealed, when it was accepted, its place. */
async function jobOf(
  client: DeviceRiskClient,
  key: string,
  checkout: Pick<CheckJob, 'fingerprint' | 'blackbox'> & { customer: CustomerMapping; place: QueuePlace; now: Now },
): Promise<CheckJob> {
  const { fingerprint, blackbox, customer, place, now } = checkout;
  return { key, fingerprint, blackbox, customer: await sealed(client, customer), acceptedAt: now(), ...place };
}

async function sealed(client: DeviceRiskClient, customer: CustomerMapping): Promise<QueuedCustomer> {
  const { transaction, ...rest } = customer;
  return transaction ? { ...rest, transaction: await client.sealTransaction(transaction) } : rest;
}

async function opened(client: DeviceRiskClient, customer: QueuedCustomer): Promise<CustomerMapping> {
  const { transaction, ...rest } = customer;
  return transaction ? { ...rest, transaction: await client.openTransaction(transaction) } : rest;
}

/**
 * A queue's add that failed, in the kit's terms: refused by its Redis at maxmemory is
 * `queue_full` (503 with Retry-After: the queue takes checkouts again once there is room);
 * any other failure of the queue's store is `store_unavailable`. Never the service's fault.
 */
function queueFailure(error: unknown): unknown {
  if (isDeviceRiskError(error)) return error;
  if (isRedisFull(error)) {
    recordQueue('refused');
    return new DeviceRiskError(ERR_QUEUE_FULL, queuedMessages.redisFull, {
      status: 503,
      retryAfter: REDIS_FULL_RETRY_AFTER_S,
      operation: 'queue',
      cause: error,
    });
  }
  return new DeviceRiskError(ERR_STORE_UNAVAILABLE, queuedMessages.addFailed, {
    retryAfter: 1,
    operation: 'queue',
    cause: error,
  });
}

/**
 * Tells each job that leaves the queue unchecked (given up stale, failed for good, or left in a
 * memory queue at close) as a
 * NotCheckedError, once, with its order and why: so that the shop can be told (the gateway's
 * device_risk.failed). A stale one names its last try's failure here (`lastError`).
 */
function notCheckedTeller(onError: (error: unknown) => void) {
  const lastErrors = new BoundedMap<string, string>(NOTED_JOBS_MAX);
  const codeOf = (error: unknown) => (isDeviceRiskError(error) ? error.code : REFUSED_INTERNAL);
  return {
    tried: (job: CheckJob, error: unknown) => void lastErrors.set(job.key, codeOf(error)),
    /** Why a job that ends with `event` was given up (kept with it from a telling that failed); none when checked. */
    givenUp(job: CheckJob, event: Ending, why: unknown): GivenUp | undefined {
      const lastError = lastErrors.get(job.key);
      lastErrors.delete(job.key);
      if (job.givenUp) return job.givenUp;
      if (event === 'failed') return { ending: event, reason: codeOf(why) };
      if (event !== 'stale') return undefined;
      return { ending: event, reason: ERR_BLACKBOX_STALE, lastError };
    },
    /**
     * Tells a checkout given up as never to be checked. onError may return the promise of
     * keeping it for the shop (the gateway's failure webhook in its outbox): false when that
     * failed (told to onError), and the job must stay to tell it again.
     */
    async told(job: CheckJob, { reason, lastError }: GivenUp): Promise<boolean> {
      try {
        await (onError(new NotCheckedError(job, reason, lastError)) as unknown);
        return true;
      } catch (notKept) {
        onError(notKept);
        return false;
      }
    },
    /** What a memory queue held at close(): never checked here, and nothing left to try again. */
    leftBehind(jobs: readonly CheckJob[]) {
      for (const job of jobs) {
        // One given up before (its telling not kept) is told why it was, not that it was held.
        const { ending = 'failed', reason = ERR_SHUTTING_DOWN, lastError } = job.givenUp ?? {};
        recordQueue(ending);
        void Promise.resolve(onError(new NotCheckedError(job, reason, lastError)) as unknown).catch(onError);
      }
    },
  };
}

/** A pending decision's next read (the wait, and the reads kept with the job); none once the schedule is spent. */
function nextRead(job: CheckJob): { retryInMs: number; reading: number } | undefined {
  const reads = job.reading ?? 0;
  const wait = pendingMs(reads);
  return wait === undefined ? undefined : { retryInMs: wait, reading: reads + 1 };
}

/** The wait before a failed try's next: what the service or the store asked (at most MAX_RETRY_MS), else the backoff. */
function retryWaitMs(error: unknown, tries: number | undefined): number {
  const asked = retryAfterOf(error);
  return asked === undefined ? backoffMs(tries) : Math.min(MAX_RETRY_MS, 1000 * asked);
}

/**
 * The wait before a pending decision's next read, after `reads` of them: the documented schedule
 * (RESULT_SCHEDULE_SECONDS) after the read made at once, at most 10 reads in all
 * (docs/vendor-contract.md): at 40, 60, 100… 760 s after the upload; none past them.
 */
const pendingMs = (reads: number): number | undefined =>
  reads < RESULT_SCHEDULE_SECONDS.length - 1
    ? 1000 * (RESULT_SCHEDULE_SECONDS[reads]! - (reads === 0 ? 0 : RESULT_SCHEDULE_SECONDS[reads - 1]!))
    : undefined;

/**
 * A retry of a job whose decision is read, and only to be told (here, or by the path telling it
 * now): no check waits (`reading`). When onResult failed, its first failure is kept with the job
 * as `reading` is, for the telling's bound (`untold`).
 */
function toldLater(retry: Extract<JobRun, { retryInMs: number }>, job: CheckJob, error: unknown, now: Now): JobRun {
  const untoldSince = error instanceof TellingLater ? (job.untoldSince ?? now()) : undefined;
  return { ...retry, reading: job.reading ?? 0, ...(untoldSince === undefined ? {} : { untoldSince }) };
}

/**
 * A decision onResult would not take for `triedForMs` since it first failed (half the life of the
 * key's record, which holds the check): `result_undelivered`, told, and the order told so
 * (NotCheckedError). Its decision is not read for ever.
 */
function untold(later: TellingLater, triedForMs: number, onError: (error: unknown) => void): DeviceRiskError {
  const { workflowExecutionId, status } = later;
  // No order here: the NotCheckedError that follows names it, so that the shop is told once.
  const error = new ResultUndeliveredError(
    queuedMessages.untold(workflowExecutionId, status, triedForMs),
    workflowExecutionId,
    status,
  );
  onError(error);
  return error;
}

/** A decision still not there after the schedule's reads: `result_not_ready`, told, and the order told so. */
function notReady(pending: unknown, onError: (error: unknown) => void): DeviceRiskError {
  const error = new DeviceRiskError(
    ERR_RESULT_NOT_READY,
    queuedMessages.resultNotReady(
      (pending as ResultPending).workflowExecutionId,
      RESULT_SCHEDULE_SECONDS.length,
      RESULT_SCHEDULE_SECONDS.at(-2)!,
    ),
    { operation: 'result' },
  );
  onError(error);
  return error;
}

/** The wait before a job's next try after `tries` failed ones: 1 s doubling, at most MAX_RETRY_MS. */
const backoffMs = (tries = 0) => doublingMs(tries, 1000, MAX_RETRY_MS);

/** How a job leaves the queue: the queue counter's events (status/names.ts) that end a job. */
type Ending = Extract<QueueEvent, 'checked' | 'failed' | 'stale' | 'replayed'>;

/**
 * What a failed try means: never to succeed, a decision not there yet (read again later), the
 * tenant's account limit reached (the queue waits), a retrieval refused (the job waits), or
 * trouble that passes.
 */
function failureKind(error: unknown): 'permanent' | 'pending' | 'limited' | 'refused' | 'transient' {
  if (isPermanent(error)) return 'permanent';
  if (error instanceof ResultPending) return 'pending';
  if (!isDeviceRiskError(error) || (error.code !== ERR_RATE_LIMITED && error.status !== 429)) return 'transient';
  // A retrieval's 429 is its own quota's (its limiter backs every instance off): only this job
  // waits, and the account requests go on. Any other is the account quota's: the queue waits.
  return RETRIEVAL_OPERATIONS.includes(error.operation ?? '') ? 'refused' : 'limited';
}

/** The seconds the service or the store asked to wait, if it did. */
const retryAfterOf = (error: unknown) =>
  isUnavailable(error) && isDeviceRiskError(error) ? error.retryAfter : undefined;

/**
 * The answer a key's record already gives: another body (422), a finished check (200), a stale
 * key. None for a request without a key: its key is its own, which nothing else knows.
 */
async function recordedAnswer(
  options: Pick<QueuedChecksOptions, 'store' | 'namespace'>,
  key: string | null,
  fingerprint: string,
): Promise<Response | undefined> {
  return key === null
    ? undefined
    : keyRecordAnswer(await readKeyRecord(options.store, options.namespace, key), fingerprint);
}

/** A full queue: 503 `queue_full`, told, with the wait for one slot to free (1 to 60 s) as Retry-After. */
function fullAnswer(figures: BacklogFigures | undefined, onError: (error: unknown) => void): Response {
  recordQueue('refused');
  // One slot frees in about 1/rate seconds; the browser waits that (1 to 60 s) and posts again.
  const seconds = Math.min(60, Math.max(1, Math.ceil(figures?.drainPerSecond ? 1 / figures.drainPerSecond : 5)));
  onError(
    new DeviceRiskError(ERR_QUEUE_FULL, queuedMessages.full(figures?.queued), {
      status: 503,
      retryAfter: seconds,
      operation: 'queue',
    }),
  );
  return refuse(503, ERR_QUEUE_FULL, queuedMessages.fullAnswer, { 'retry-after': String(seconds) });
}

/**
 * Answers other than 202 whose checkout the queue holds all the same (the record read after
 * the add failed, or the add was not confirmed): the gateway's door keeps the order's claim for them, since the job will be
 * checked (docs/gateway.md#one-order-one-check).
 */
const heldAnswers = new WeakSet<Response>();
/** Whether the queue holds the checkout this answer, not a 202, refused for now. */
export const isHeldAnswer = (answer: Response): boolean => heldAnswers.has(answer);
const maybeHeldAnswers = new WeakSet<Response>();
/**
 * Whether the queue may hold the checkout this answer refused for now: its add did not answer in
 * time and may still land. Neither held nor refused: the gateway leaves its order's claim to its lease.
 */
export const isMaybeHeldAnswer = (answer: Response): boolean => maybeHeldAnswers.has(answer);

/** The failure's answer (told), marked in `marks` with what it leaves in the queue: isHeldAnswer, isMaybeHeldAnswer. */
function markedAnswer(marks: WeakSet<Response>, onError: (error: unknown) => void, error: unknown): Response {
  onError(error);
  const answer = failureAnswer(error);
  marks.add(answer);
  return answer;
}

/**
 * Counts a checkout the queue holds by a request's add, once: its acceptance (the metric, the
 * drain meter, the late check's count since its read) and the capture outcome it came with
 * (`told`), at the answer, or when an add that did not answer in time lands (`landed`).
 */
function acceptanceOf(
  meter: ReturnType<typeof createDrainMeter>,
  lateCheck: { accepted(): void },
  onError: (error: unknown) => void,
) {
  const counted = (told: () => void): void => {
    recordQueue('accepted');
    meter.accepted();
    lateCheck.accepted();
    told();
  };
  return {
    counted,
    /** What a late add came to: held by it (counted), by another add (nothing), or not held (told). */
    landed: (told: () => void) => (late: AddResult) => {
      if (late === 'added' || late === 'unconfirmed') counted(told);
      else if (late === 'unanswered') onError(addLostFailure());
      else if (late === 'full' || late === 'conflict')
        onError(
          new DeviceRiskError(ERR_STORE_UNAVAILABLE, queuedMessages.lateAddNotHeld(late), { operation: 'queue' }),
        );
    },
  };
}

/**
 * The queue's add under its time limit: its answer, or 'late' when it gave none within
 * `timeoutMs`. A late add may still land when the queue's Redis wakes: `landed` hears what it
 * came to then, and a late failure goes to `onError`.
 */
async function addWithin(
  queue: CheckQueue,
  job: CheckJob,
  lateAt: number | undefined,
  timeoutMs: number,
  onError: (error: unknown) => void,
  landed: (added: AddResult) => void,
): Promise<AddResult | { landing: Promise<boolean> }> {
  const adding = Promise.resolve().then(() => queue.add(job, lateAt));
  let late = false;
  const added = await settleWithin(
    () => adding,
    timeoutMs,
    () => {
      late = true;
      return new Error('late');
    },
  ).catch((error: unknown) => {
    if (!late) throw queueFailure(error);
    return 'late' as const;
  });
  if (added !== 'late') return added;
  // Whether the queue holds it once it lands (a door keeps the order's claim then: landingOf).
  const landing = adding.then(
    (late) => {
      landed(late);
      return late === 'added' || late === 'unconfirmed' || late.startsWith('present');
    },
    (error: unknown) => {
      onError(queueFailure(error));
      return false;
    },
  );
  return { landing };
}

/** The answers whose add did not answer in time, with whether the queue holds each once it lands. */
const landings = new WeakMap<Response, Promise<boolean>>();

/** For an answer whose add did not answer in time (isMaybeHeldAnswer): true once its add lands held. */
export const landingOf = (answer: Response): Promise<boolean> | undefined => landings.get(answer);

/** The 503 of an add that did not answer within `timeoutMs`: neither held nor refused, its landing kept. */
function lateAnswer(landing: Promise<boolean>, timeoutMs: number, onError: (error: unknown) => void): Response {
  const answer = markedAnswer(maybeHeldAnswers, onError, addUnansweredFailure(timeoutMs));
  landings.set(answer, landing);
  return answer;
}

/**
 * After an add: the key's job may have run and left the queue between the record read and the
 * add (another request's, on this instance or another). Its record then answers as it would
 * have before the add: another checkout under the key (422; this one would never be checked),
 * or the key's check already ended (200 with its result, as a retry after it gets; the job
 * just added finds the same and ends as `replayed`). A 202 is a promise that this checkout is
 * checked or told, which only the record can back: a read that fails is told, the checkout is
 * held (`held`), and the answer is the store's failure (503 with Retry-After); so is an add
 * the queue did not confirm (`unconfirmed`: 503 store_unavailable). The browser posts again
 * under the key, and the record or the job answers it: a 202 kept, the decision, or 422 for a
 * key another checkout holds (whose job, held here, ends as `replayed`).
 */
async function answerAfterAdd(
  options: Pick<QueuedChecksOptions, 'store' | 'namespace' | 'onError'>,
  key: string | null,
  fingerprint: string,
  added: 'added' | 'unconfirmed',
): Promise<AfterAdd | undefined> {
  try {
    const answer = await recordedAnswer(options, key, fingerprint);
    if (answer) return { answer };
  } catch (error) {
    return heldAnswer(options.onError, error);
  }
  return added === 'unconfirmed' ? heldAnswer(options.onError, unconfirmedFailure()) : undefined;
}

/** The answer after an add: the key's record's, or a failure's whose checkout the queue holds all the same (`held`). */
interface AfterAdd {
  answer: Response;
  held?: true;
}

/** The failure's answer (told), marked as one whose checkout the queue holds: isHeldAnswer. */
function heldAnswer(onError: (error: unknown) => void, error: unknown): AfterAdd {
  return { answer: markedAnswer(heldAnswers, onError, error), held: true };
}

/**
 * An add the queue did not answer within its time limit: it may land when the queue's Redis
 * answers, so it is answered 503 (the browser posts again under its key), counted only if it lands.
 */
const addUnansweredFailure = (timeoutMs: number): DeviceRiskError =>
  new DeviceRiskError(ERR_STORE_UNAVAILABLE, queuedMessages.addUnanswered(timeoutMs), {
    status: 503,
    retryAfter: 1,
    operation: 'queue',
  });

const addLostFailure = (): DeviceRiskError =>
  new DeviceRiskError(ERR_STORE_UNAVAILABLE, queuedMessages.addLost, {
    status: 503,
    retryAfter: 1,
    operation: 'queue',
  });

/**
 * A job the queue wrote without the replicas' confirmation asked for (docs/fleet.md#sentinel):
 * it may run, so it is held and counted; a failover may take it back, so the browser is sent
 * back under its key (503), which finds it held or adds it again.
 */
const unconfirmedFailure = (): DeviceRiskError =>
  new DeviceRiskError(ERR_STORE_UNAVAILABLE, queuedMessages.addUnconfirmed, {
    status: 503,
    retryAfter: 1,
    operation: 'queue',
  });

/**
 * A job past the trust bound: given up unless its blackbox was uploaded (it is finalized and its
 * decision told) or its key was checked (a job run again: a stalled BullMQ job, a finish that did
 * not land; the record answers it, never told stale beside its decision). Given up, its key's
 * record is marked stale (a retry is 410) and it is told. A store that does not answer throws:
 * the job comes back, nothing given up.
 */
async function givenUpStale(options: QueuedChecksOptions, job: CheckJob, age: number): Promise<boolean> {
  const place = {
    store: options.store,
    recordKey: recordKeyOf(options.namespace, job.key),
    ttlMs: options.recordTtlMs,
  };
  if (!(await markStale(place, job.fingerprint, options.now))) return false;
  options.onError(
    new DeviceRiskError(
      ERR_BLACKBOX_STALE,
      // The key's first characters name the checkout in the log; the whole key is the browser's retry token.
      queuedMessages.stale(age, options.maxQueuedMs, job.key.slice(0, 8)),
      { operation: 'queue' },
    ),
  );
  return true;
}

/** The backlog cannot drain within the trust bound at the rate the service allows (`backlog_behind`). */
const behindWarning = (figures: BacklogFigures, maxQueuedMs: number) =>
  new DeviceRiskError(
    ERR_BACKLOG_BEHIND,
    queuedMessages.behind(
      figures.queued,
      figures.drainPerSecond,
      figures.drainSeconds,
      maxQueuedMs,
      figures.staleLastMinute,
    ),
    { operation: 'queue' },
  );
