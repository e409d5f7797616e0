/**
 * Handling one recorded callback: under its lease, read the details and call `onResult`;
 * record the outcome; on a failure wait in the store for the next try, with backoff, until
 * `retryForMs` has passed (then `result_undelivered`). One instance at a time handles a
 * callback, whichever received it (docs/fleet.md): the lease is taken in the store.
 */
import type { DeviceRiskDetails } from '../api/result.js';
import { doublingMs } from '../api/retry.js';
import { sleep } from '../time/clock.js';
import { DeviceRiskError, ERR_UNKNOWN_EXECUTION } from '../errors.js';
import { callbackMessages } from '../messages.js';
import { recordDecision } from '../metrics.js';
import { takeLease, type Lease } from '../store/lease.js';
import { TellingElsewhere } from './told.js';
import { callWithin } from '../time/time-limit.js';
import type { PendingList } from './pending.js';
import { isUnknownExecution, placeExecution } from './provenance.js';
import { parseRecord, type CallbackRecord } from './record.js';
import { ResultUndeliveredError } from './undelivered.js';
import type { CallbackSettings } from './settings.js';
import type { CallbackTasks } from './tasks.js';

/** Pause between writes of a delivered result while the store is away. */
const DONE_WRITE_PAUSE_MS = 100;

type Ids = { accountId: string; workflowExecutionId: string };
/**
 * Handles the callback recorded at `key`, if no instance holds its lease and its next try is
 * due. `byOwnTimer`: called by this instance's retry timer, which is the backoff itself; an
 * arrival or a sweep keeps the backoff written in the record.
 */
export type Deliver = (key: string, byOwnTimer?: boolean) => Promise<void>;

/**
 * Claims the decision's telling (src/server/callbacks/told.ts), reads the details (which places the
 * execution as this tenant's) and calls onResult within its time. Returns without calling
 * anything when another path told the decision; throws `TellingElsewhere` while one tells it.
 * `fromMemory`: a callback the store could not record, delivered past a lease (unrecorded.ts).
 */
export function resultCaller(settings: CallbackSettings, tasks: CallbackTasks, fromMemory = false) {
  return async function callOnResult(record: CallbackRecord): Promise<void> {
    const { callback, receivedAt } = record;
    const ids = idsOf(record);
    const status = callback.workflowExecution.status;
    // Delivered from memory, the store away: told without a marker rather than not at all.
    const telling = await settings.told.claim(ids.workflowExecutionId, status).catch((error: unknown) => {
      if (!fromMemory) throw error;
      settings.report(error);
      return undefined;
    });
    if (telling === 'told') return;
    if (telling === 'busy') throw new TellingElsewhere(ids.workflowExecutionId, status);
    let details: DeviceRiskDetails | undefined;
    try {
      // A read with the shop's own token: an execution of another tenant answers 404.
      details = await placeExecution(settings.client, ids, status, record.tagged);
      // The checkout the endpoint's check remembered (told.ts); the details' own references first.
      // A store that does not answer now: tried again later rather than told without its order
      // (an expiry's callback has no details to name it); from memory (the store away), told without.
      const order = await settings.told.orderOf(ids.workflowExecutionId).catch((error: unknown) => {
        if (!fromMemory) throw error;
        return undefined;
      });
      const references = { ...order, ...referencesOf(record, details) };
      await callWithin(
        (signal) =>
          settings.onResult(
            { ...ids, status, ...(details ? { details } : {}), ...references, callback, receivedAt },
            { signal },
          ),
        settings.onResultTimeoutMs,
        tasks.signal,
      );
    } catch (error) {
      await telling?.abandon();
      throw error;
    }
    if (details) recordDecision(details);
    await telling?.done();
  };
}

/** The order's references: from the details, else the callback's; the kit's own tag is no reference of yours. */
function referencesOf(record: CallbackRecord, details: DeviceRiskDetails | undefined) {
  const customerInternalReference = details?.customerInternalReference;
  const userReference = record.tagged ? undefined : (details?.userReference ?? record.callback.userReference);
  return {
    ...(customerInternalReference ? { customerInternalReference } : {}),
    ...(userReference ? { userReference } : {}),
  };
}

export function callbackDelivery(settings: CallbackSettings, tasks: CallbackTasks, pending: PendingList): Deliver {
  const { store, now, report } = settings;
  const callOnResult = resultCaller(settings, tasks);

  async function deliver(key: string, byOwnTimer = false): Promise<void> {
    // One at a time, on any instance: a copy that arrives meanwhile calls nothing.
    if (tasks.closed) return;
    const lease = await takeLease(store, `${key}:lease`, settings.leaseMs, 'callback lease', now);
    if (lease) await tasks.holding(lease, () => deliverLeased(key, byOwnTimer, lease));
  }

  async function deliverLeased(key: string, byOwnTimer: boolean, lease: Lease): Promise<void> {
    const stored = await store.get(key);
    if (!stored) return;
    const record = parseRecord(stored);
    if (record.state !== 'pending') return void (await pending.remove(key));
    // A copy or a sweep keeps the backoff; this instance's own timer is the backoff.
    if (!byOwnTimer && (record.nextAttemptAt ?? 0) > now()) return;
    if (now() - record.receivedAt >= settings.retryForMs) return giveUp(key, stored, record);
    try {
      await callOnResult(record);
    } catch (error) {
      if (isUnknownExecution(error)) return forget(key, stored, idsOf(record));
      // Closed: the record stays as it was, and another instance's sweep takes it a lease later.
      if (!tasks.closed) await retryLater(key, stored, record, error);
      return;
    }
    await recordDelivered(key, stored, record, lease);
  }

  /**
   * Past retryForMs: `failed`, told once, under the lease. Told before the record is marked:
   * onError may return the promise of keeping it for the shop (the gateway's failure webhook in
   * its outbox), and one that rejects leaves the record pending, given up again on a later try.
   */
  async function giveUp(key: string, stored: string, record: CallbackRecord): Promise<void> {
    const ids = idsOf(record);
    // The order, when a check remembered it, so that the shop can be told (undelivered.ts): read
    // first, so that a store that does not answer leaves the record to give up on a later try.
    const order = await settings.told.orderOf(ids.workflowExecutionId);
    const status = record.callback.workflowExecution.status;
    const message = callbackMessages.undelivered(ids, status, record.attempts, settings.retryForMs);
    try {
      await (report(new ResultUndeliveredError(message, ids.workflowExecutionId, status, order)) as unknown);
    } catch {
      // Not kept (its failure logged by safeOnError): the record stays pending, given up again on
      // a later try, and it and its entry live a recordTtlMs from now: never gone unheard.
      if (await store.compareAndSet(key, stored, stored, settings.recordTtlMs)) await pending.add(key);
      return;
    }
    const failed = JSON.stringify({ ...record, state: 'failed' });
    // A write that lost the race changes nothing: the record is someone else's now.
    if (!(await store.compareAndSet(key, stored, failed, settings.recordTtlMs))) return;
    await pending.remove(key);
  }

  /**
   * Tells the failure, and writes the next try's time into the record; this instance's timer
   * waits for it. Another path telling the decision now is no failure: waited for quietly.
   */
  async function retryLater(key: string, stored: string, record: CallbackRecord, error: unknown): Promise<void> {
    if (!(error instanceof TellingElsewhere)) report(error);
    const attempts = record.attempts + 1;
    const delay = doublingMs(attempts - 1, settings.retryDelayMs, settings.maxRetryDelayMs);
    const next = JSON.stringify({ ...record, attempts, nextAttemptAt: now() + delay });
    // A record another instance changed meanwhile is theirs now; a store away leaves the
    // record as it was, and this instance's timer (or a sweep) tries again.
    const kept = await store.compareAndSet(key, stored, next, settings.recordTtlMs).catch((storeError: unknown) => {
      report(storeError);
      return true;
    });
    if (kept) tasks.retryAfter(key, delay, () => deliver(key, true));
  }

  /**
   * A callback for an execution the service does not know for this tenant (another tenant
   * set the shop's address as its callbackUrl, or a forgery): final, told once, and its
   * record leaves the store now rather than in `recordTtlMs`.
   */
  async function forget(key: string, stored: string, ids: Ids): Promise<void> {
    const message = callbackMessages.unknownExecution(ids);
    report(new DeviceRiskError(ERR_UNKNOWN_EXECUTION, message, { status: 404, operation: 'callback' }));
    await store.compareAndDelete(key, stored).catch(report);
    await pending.remove(key).catch(report);
  }

  /**
   * Writes `done` once onResult has returned, through a store that is away for a while, for
   * as long as the lease is held: a record left pending would have onResult called again.
   */
  async function recordDelivered(key: string, stored: string, record: CallbackRecord, lease: Lease): Promise<void> {
    const done = JSON.stringify({ ...record, state: 'done' });
    for (;;) {
      try {
        // False: another instance took the record over when this lease lapsed; it is theirs.
        if (!(await store.compareAndSet(key, stored, done, settings.recordTtlMs))) return;
        break;
      } catch (error) {
        if (lease.lost || tasks.closed) throw error;
        await sleep(DONE_WRITE_PAUSE_MS);
      }
    }
    await pending.remove(key).catch(report);
  }

  return deliver;
}

export const idsOf = ({ callback }: CallbackRecord): Ids => ({
  accountId: callback.account.id,
  workflowExecutionId: callback.workflowExecution.id,
});
