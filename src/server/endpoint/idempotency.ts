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
import { fencedRecord } from './fenced-record.js';
import { lapsed, type DeviceRiskProgress, type DeviceRiskResult } from './check.js';

/**
 * What the store keeps per Idempotency-Key. Each attempt replaces exactly the version it
 * last wrote (compare-and-set), so an attempt whose key another has taken over can write
 * nothing more: it is fenced, and stops before its next call to the service.
 */
export interface KeyRecord {
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

/** The store key of an Idempotency-Key's record. */
export const recordKeyOf = (namespace: string, key: string) => `${namespace}:${keyPart(key)}`;

/** The record of `key`, if any: what the queue needs to know before it accepts a request under it. */
export async function readKeyRecord(
  store: Store,
  namespace: string,
  key: string,
): Promise<Pick<KeyRecord, 'fingerprint' | 'result'> | undefined> {
  const stored = await fromStore(store.get(recordKeyOf(namespace, key)), 'idempotency record read');
  return stored === undefined ? undefined : (JSON.parse(stored) as KeyRecord);
}

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
    const recordKey = recordKeyOf(namespace, key);
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
            const written = fencedRecord({ store, recordKey, ttlMs: ttl, read }, stored);
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
