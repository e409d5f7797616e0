/**
 * Idempotency-Keys on any store, for a fleet: the key's record keeps the progress (the
 * transaction once created, its token sealed), so that a retry resumes instead of creating
 * a second transaction, on any instance, and a retry after success gets the first answer.
 * One attempt at a time works on a key, under a lease; a concurrent one waits for its answer
 * (409 with Retry-After after `waitMs`), and a lease whose owner died is taken over.
 */
import { type DeviceRiskClient } from '../api/device-risk-client.js';
import { sleep, type Now } from '../clock.js';
import { deadline, within, type Deadline } from '../deadline.js';
import {
  DeviceRiskError,
  ERR_IDEMPOTENCY_KEY_IN_USE,
  ERR_NETWORK,
  ERR_ORPHANED_TRANSACTION,
  ERR_STORE_FULL,
  ERR_STORE_UNAVAILABLE,
  isDeviceRiskError,
} from '../errors.js';
import { json, refuse, REFUSED_KEY_REUSED } from '../http.js';
import { fromStore, keyPart, type Store } from '../store/store.js';
import { takeLease } from '../store/lease.js';
import { lapsed, type DeviceRiskProgress, type DeviceRiskResult } from './check.js';

/**
 * What the store keeps per Idempotency-Key. Each attempt replaces exactly the version it
 * last wrote (compare-and-set), so an attempt whose key another has taken over can write
 * nothing more: it is fenced, and stops before its next call to the service.
 */
interface KeyRecord {
  /** SHA-256 of the origin, the customer and the blackbox: the same key with another request is refused. */
  fingerprint: string;
  /** The transaction, its token sealed (client.sealTransaction). */
  transaction?: string;
  uploaded?: boolean;
  result?: DeviceRiskResult;
  /**
   * An account create on the wire: until `until` (epoch ms), its attempt may still record the
   * transaction it made, and no other attempt makes one. After it, the create's owner is
   * taken to have died with it on the wire: the next attempt makes another (the one orphan a
   * crash can leave, reported through onError).
   */
  creating?: { owner: string; until: number };
}

/** How often a request waiting for another instance's work on its key looks again, in ms. */
const KEY_POLL_MS = 50;
/** How often a write of progress is tried again while the store is away, in ms. */
const STORE_RETRY_MS = 100;

export async function fingerprintOf(...parts: string[]): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(parts.join('\n')));
  // Stryker disable next-line StringLiteral: every fingerprint is written and compared in the same form
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

export interface IdempotencyOptions {
  store: Store;
  client: DeviceRiskClient;
  /** The prefix of this client's keys in the store. */
  namespace: string;
  leaseMs: number;
  waitMs: number;
  /** How long a key's record is kept, in ms. */
  ttlMs: number;
  now: Now;
  onError?: (error: unknown) => void;
}

/** Runs checks under Idempotency-Keys: each call, the answer, a refusal, or (thrown) the failure of the check. */
export function createIdempotency(options: IdempotencyOptions) {
  const { store, client, namespace, leaseMs, waitMs, now } = options;
  /** How long a request waits for the store to take a write before it answers: never past its own wait. */
  const storeWaitMs = Math.min(leaseMs, waitMs);
  const ttl = options.ttlMs;
  /** Runs the check under the key: the answer, a refusal, or (thrown) the failure of the check. */
  return async function underKey(
    key: string,
    fingerprint: string,
    customerTransaction: boolean,
    run: (
      progress: DeviceRiskProgress,
      save: (progress: DeviceRiskProgress) => Promise<void>,
    ) => Promise<DeviceRiskResult>,
    onNewKey: () => void,
  ): Promise<Response> {
    const recordKey = `${namespace}:${keyPart(key)}`;
    const leaseKey = `${recordKey}:lease`;
    const read = async () => {
      const stored = await fromStore(store.get(recordKey), 'idempotency record read');
      return { stored, record: stored === undefined ? undefined : (JSON.parse(stored) as KeyRecord) };
    };
    // Waits and retries end by timers, not by readings of `now`: they last real time.
    const waiting = deadline(waitMs);
    try {
      return await leaseOrWait();
    } finally {
      waiting.clear();
    }

    async function leaseOrWait(): Promise<Response> {
      for (;;) {
        // The lease first: on the common path (a new key) that is one store operation less.
        const lease = await takeLease(store, leaseKey, leaseMs, 'idempotency lease', now);
        if (lease) {
          const { mark } = lease;
          try {
            const { stored, record } = await read();
            if (record && record.fingerprint !== fingerprint) return reused();
            if (record?.result) return json(record.result, 200);
            if (record?.creating && !record.transaction) {
              // Another attempt's create may be on the wire: it records its transaction, or its time runs out.
              if (now() < record.creating.until) return inUse(Math.ceil((record.creating.until - now()) / 1000));
              options.onError?.(
                new DeviceRiskError(
                  ERR_ORPHANED_TRANSACTION,
                  'an earlier attempt on this Idempotency-Key stopped with its account create on the wire: that transaction, if made, stays INITIATED without a blackbox',
                  {
                    operation: 'account create',
                  },
                ),
              );
            }
            const written = fencedRecord(stored);
            const saved: KeyRecord = record ?? { fingerprint };
            delete saved.creating;
            const progress: DeviceRiskProgress = {
              ...(saved.transaction ? { transaction: await client.openTransaction(saved.transaction) } : {}),
              ...(saved.uploaded ? { uploaded: true } : {}),
            };
            // A transaction without a recorded upload: an earlier owner may have uploaded and
            // died (or lost the store) before recording it. The service knows: past INITIATED,
            // the blackbox is there, and a second upload would double it.
            if (progress.transaction && !progress.uploaded) {
              const status = await client.status(progress.transaction).catch(() => undefined);
              if (status !== undefined && status !== 'INITIATED') progress.uploaded = true;
            }
            const creates = !customerTransaction && (!progress.transaction || lapsed(progress.transaction, now));
            // Before any call to the service the record is written (a store with no room or no
            // answer refuses the work before a transaction exists), with the create's intent.
            const createWindowMs = (client.accountTimeoutMs ?? 60_000) + leaseMs;
            const createUntil = now() + createWindowMs;
            await written.replace(
              creates ? { ...saved, creating: { owner: mark, until: createUntil } } : saved,
              storeWaitMs,
            );
            if (!record) onNewKey();
            /** The lease must still be this attempt's before each call to the service. */
            const stillOwner = () => {
              if (lease.lost === 'taken')
                throw new DeviceRiskError(
                  ERR_IDEMPOTENCY_KEY_IN_USE,
                  'this attempt lost its lease on the Idempotency-Key',
                  { retryAfter: 1, operation: 'store' },
                );
              // The store confirmed no renewal for a whole lease: another may take the key any moment.
              if (lease.lost === 'unconfirmed')
                throw new DeviceRiskError(
                  ERR_STORE_UNAVAILABLE,
                  "the shared store did not confirm this attempt's lease on the Idempotency-Key in time; retry shortly",
                  { retryAfter: 1, operation: 'store' },
                );
            };
            let recorded = progress.transaction;
            let madeUnrecorded = false;
            /**
             * The create ended without a transaction to record: its intent goes, so that the next
             * attempt does not wait for it. An answer that never came may still have made one.
             */
            const createEnded = async (error: unknown) => {
              // No transaction on this key: nothing for a retry to resume, so no record is kept
              // for a day (a flood of refused creates would fill it otherwise).
              await (saved.transaction ? written.replace(saved, storeWaitMs) : written.remove()).catch(() => {});
              // Stryker disable next-line Regex,StringLiteral: every operation that names an account starts with it; no default does
              if (isDeviceRiskError(error) && error.code === ERR_NETWORK && /^account/.test(error.operation ?? '')) {
                options.onError?.(
                  new DeviceRiskError(
                    ERR_ORPHANED_TRANSACTION,
                    'an account create got no answer: the transaction it may have made stays INITIATED without a blackbox',
                    { operation: error.operation, cause: error },
                  ),
                );
              }
            };
            const save = async (next: DeviceRiskProgress) => {
              const made = next.transaction && next.transaction !== recorded ? next.transaction : undefined;
              madeUnrecorded = !!made;
              saved.transaction = next.transaction ? await client.sealTransaction(next.transaction) : undefined;
              saved.uploaded = next.uploaded;
              // The transaction just made is written for as long as no other attempt may make one:
              // in the background once the request must be answered, so that a retry resumes it.
              await (made
                ? written.replace(saved, Math.max(0, createUntil - now()), {
                    answerWithinMs: storeWaitMs,
                    onGiveUp: (error) =>
                      options.onError?.(
                        new DeviceRiskError(
                          ERR_ORPHANED_TRANSACTION,
                          `workflow execution ${made.workflowExecutionId} was created but could not be recorded: it stays INITIATED without a blackbox`,
                          { operation: 'account create', cause: error },
                        ),
                      ),
                  })
                : written.replace(saved, storeWaitMs));
              recorded = next.transaction;
              stillOwner();
            };
            stillOwner();
            let result: DeviceRiskResult;
            const before = recorded;
            try {
              result = await run(progress, save);
            } catch (error) {
              // Nothing new recorded and nothing made unrecorded: the create (if it ran) made nothing we know of.
              if (creates && recorded === before && !madeUnrecorded) await createEnded(error);
              throw error;
            }
            // Nothing is lost: should this write fail, the next attempt finds the progress and finalize answers as before.
            // Done, the record needs only what answers a retry: no transaction token is kept.
            await written
              .replace({ fingerprint, result }, storeWaitMs)
              .catch((error: unknown) => options.onError?.(error));
            return json(result, 200);
          } finally {
            await lease.release();
          }
        }
        // Another instance works on the key, or it is done: its answer, a refusal, or wait.
        const { record } = await read();
        if (record && record.fingerprint !== fingerprint) return reused();
        // Stryker disable next-line ConditionalExpression: a waiter that misses the answer here takes the lease once the owner lets go, and answers the same from there
        if (record?.result) return json(record.result, 200);
        if (waiting.expired) return inUse(1);
        await sleep(KEY_POLL_MS);
      }
    }

    /**
     * The key's record as this attempt last wrote it (`stored`, or none yet):
     * each write replaces exactly that version. A store that is away is waited for, up to
     * `withinMs`; a version that another attempt replaced means the key was taken over
     * (`idempotency_key_in_use`): nothing more is written or called.
     */
    function fencedRecord(stored: string | undefined) {
      let last = stored;
      return {
        /** Deletes the record as this attempt last wrote it (a record another attempt replaced stays). */
        async remove(): Promise<void> {
          if (last !== undefined) await fromStore(store.compareAndDelete(recordKey, last), 'idempotency record delete');
        },
        /**
         * Writes `next`, trying again while the store is away, for up to `withinMs`. With
         * `background`, the request waits only `answerWithinMs` for it: past that the write
         * goes on by itself (the attempt answers 503 now, and a retry finds the record once it
         * lands), and `onGiveUp` hears of a write that never lands.
         */
        async replace(
          next: KeyRecord,
          withinMs: number,
          background?: { answerWithinMs: number; onGiveUp: (error: unknown) => void },
        ): Promise<void> {
          const retrying = deadline(withinMs);
          const writing = writeWithin(JSON.stringify(next), retrying).finally(() => retrying.clear());
          if (!background) return writing;
          writing.catch(background.onGiveUp);
          const answering = deadline(background.answerWithinMs);
          try {
            return await within(writing, answering.signal);
          } catch (error) {
            if (!answering.expired) throw error;
            throw new DeviceRiskError(
              ERR_STORE_UNAVAILABLE,
              'the shared store has not yet taken the transaction this attempt made; it is still being written, and a retry with the same key resumes it',
              { retryAfter: 1, operation: 'store' },
            );
          } finally {
            answering.clear();
          }
        },
      };

      async function writeWithin(text: string, retrying: Deadline): Promise<void> {
        for (let attempt = 0; ; attempt++) {
          try {
            const done =
              last === undefined
                ? await fromStore(store.setIfAbsent(recordKey, text, ttl), 'idempotency record write')
                : await fromStore(store.compareAndSet(recordKey, last, text, ttl), 'idempotency record write');
            // A write that timed out may have landed: then the record is already `text`.
            if (!done && !(attempt > 0 && (await read()).stored === text)) {
              throw new DeviceRiskError(ERR_IDEMPOTENCY_KEY_IN_USE, 'another attempt took this Idempotency-Key over', {
                retryAfter: 1,
                operation: 'store',
              });
            }
            last = text;
            return;
          } catch (error) {
            if (
              isDeviceRiskError(error) &&
              (error.code === ERR_IDEMPOTENCY_KEY_IN_USE || error.code === ERR_STORE_FULL)
            )
              throw error;
            // A retry that the time left cannot hold is not started: the error stands.
            await sleep(STORE_RETRY_MS, retrying.signal).catch(() => {
              throw error;
            });
          }
        }
      }
    }
  };
}

export const inUse = (seconds: number) =>
  refuse(
    409,
    ERR_IDEMPOTENCY_KEY_IN_USE,
    'Another attempt with this Idempotency-Key is still running; retry with the same key',
    { 'retry-after': String(Math.min(60, Math.max(1, seconds))) },
  );

export const reused = () => refuse(422, REFUSED_KEY_REUSED, 'This Idempotency-Key was used with another request');
