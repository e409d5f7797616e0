/**
 * A callback the store could not record. The service documents no resend after an answer
 * other than 2xx (docs/vendor-contract.md#the-answer), so the 503 it gets may leave this copy
 * the only one, and this instance keeps it. First it tries to record it again, with the
 * handler's backoff, for up to a lease (`leaseMs`): once the store takes it, it is handled as
 * any recorded callback, once for the fleet (a copy some other instance recorded meanwhile
 * wins, and this one calls nothing). A store away longer than that: the decision is delivered
 * from this instance's memory. The details are read by retrieval and `onResult` is called,
 * retried with the backoff until `retryForMs` (then `result_undelivered`); once delivered, a
 * `done` record is written as soon as the store takes it, so that a copy recorded later calls
 * nothing again. A copy arriving while this instance holds the callback is answered as a
 * duplicate.
 *
 * Bounded: at most `MAX_UNRECORDED` callbacks are held at once; past that the 503 stands
 * alone and is told (`onError`), as it was before.
 */
import { doublingMs } from '../api/retry.js';
import { sleep } from '../time/clock.js';
import { DeviceRiskError, ERR_RESULT_UNDELIVERED, ERR_UNKNOWN_EXECUTION } from '../errors.js';
import { callbackMessages } from '../messages.js';
import { idsOf, resultCaller } from './delivery.js';
import { TellingElsewhere } from './told.js';
import { isUnknownExecution } from './provenance.js';
import type { PendingList } from './pending.js';
import type { CallbackRecord } from './record.js';
import type { CallbackSettings } from './settings.js';
import type { CallbackTasks } from './tasks.js';

/** Callbacks held in memory at most while the store is away. */
export const MAX_UNRECORDED = 1000;

export interface UnrecordedCallbacks {
  /** This instance holds the callback of `key` in memory (delivering it, or writing its `done`). */
  holds(key: string): boolean;
  /** Takes the callback into memory and delivers it; false when MAX_UNRECORDED are held already. */
  take(key: string, record: CallbackRecord): boolean;
}

/**
 * `pending` and `received` are the receiver's: a callback recorded late is listed and handed
 * on as one recorded on arrival.
 */
export function unrecordedCallbacks(
  settings: CallbackSettings,
  tasks: CallbackTasks,
  pending: PendingList,
  received: (key: string) => void,
): UnrecordedCallbacks {
  const { now, report } = settings;
  const callOnResult = resultCaller(settings, tasks, true);
  const held = new Set<string>();

  /** Records the callback once the store is back, within a lease; else delivers it from memory. */
  async function hold(key: string, record: CallbackRecord): Promise<void> {
    const heldSince = now();
    for (let attempts = 0; ; attempts++) {
      await sleep(doublingMs(attempts, settings.retryDelayMs, settings.maxRetryDelayMs), tasks.signal);
      try {
        await pending.add(key);
        // False: a copy was recorded elsewhere meanwhile; the store's path tells it, once.
        if (await settings.store.setIfAbsent(key, JSON.stringify(record), settings.recordTtlMs)) received(key);
        return;
      } catch {
        if (now() - heldSince >= settings.leaseMs) break;
      }
    }
    await deliver(key, record);
  }

  async function deliver(key: string, record: CallbackRecord): Promise<void> {
    for (let attempts = 0; ; attempts++) {
      if (now() - record.receivedAt >= settings.retryForMs) {
        const status = record.callback.workflowExecution.status;
        const message = callbackMessages.undelivered(idsOf(record), status, attempts, settings.retryForMs);
        return report(new DeviceRiskError(ERR_RESULT_UNDELIVERED, message));
      }
      try {
        await callOnResult(record);
        break;
      } catch (error) {
        if (isUnknownExecution(error)) {
          const message = callbackMessages.unknownExecution(idsOf(record));
          return report(new DeviceRiskError(ERR_UNKNOWN_EXECUTION, message, { status: 404, operation: 'callback' }));
        }
        if (!(error instanceof TellingElsewhere)) report(error);
        // Closed: the wait rejects, and the callback is let go of (told through track()).
        await sleep(doublingMs(attempts, settings.retryDelayMs, settings.maxRetryDelayMs), tasks.signal);
      }
    }
    await recordDone(key, record);
  }

  /** The `done` record, written once the store takes it: a copy recorded later then calls nothing. */
  async function recordDone(key: string, record: CallbackRecord): Promise<void> {
    const done = JSON.stringify({ ...record, state: 'done' });
    for (let attempts = 0; !tasks.closed; attempts++) {
      try {
        // Written over a record that landed after all (a write that timed out, then went through).
        return await settings.store.set(key, done, settings.recordTtlMs);
      } catch {
        await sleep(doublingMs(attempts, settings.retryDelayMs, settings.maxRetryDelayMs), tasks.signal);
      }
    }
  }

  return {
    holds: (key) => held.has(key),
    take(key, record) {
      if (held.size >= MAX_UNRECORDED) return false;
      held.add(key);
      tasks.track(hold(key, record).finally(() => held.delete(key)));
      return true;
    },
  };
}
