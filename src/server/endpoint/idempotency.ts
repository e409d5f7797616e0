/**
 * Idempotency-Keys on any store, for a fleet: the key's record keeps the progress (the
 * transaction once created, its token sealed), so that a retry resumes instead of creating
 * a second transaction, on any instance, and a retry after success gets the first answer.
 * One attempt at a time works on a key, under a lease; a concurrent one waits for its answer
 * (409 with Retry-After after `waitMs`), and a lease whose owner died is taken over.
 */
import { type DeviceRiskClient } from '../api/device-risk-client.js';
import { sleep, type Now } from '../time/clock.js';
import { deadline } from '../time/deadline.js';
import type { Store } from '../store/store.js';
import { takeLease } from '../store/lease.js';
import { attemptUnderLease, type KeyedCheck } from './leased-attempt.js';
import { inUse, readRecord, recordedAnswer, recordKeyOf } from './key-record.js';

/** How often a request waiting for another instance's work on its key looks again, in ms. */
const KEY_POLL_MS = 50;

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
  const { store, namespace, leaseMs, waitMs, now } = options;
  /** How long a request waits for the store to take a write before it answers: never past its own wait. */
  const storeWaitMs = Math.min(leaseMs, waitMs);
  // The attempt's context in three: the handler's settings, its parts, and (per call) the check.
  const settings = { leaseMs, storeWaitMs, ttlMs: options.ttlMs };
  const parts = { store, client: options.client, now, ...(options.onError ? { onError: options.onError } : {}) };
  /** Runs the check under the key: the answer, a refusal, or (thrown) the failure of the check. */
  return async function underKey(key: string, check: KeyedCheck): Promise<Response> {
    const { fingerprint } = check;
    const recordKey = recordKeyOf(namespace, key);
    const leaseKey = `${recordKey}:lease`;
    const read = () => readRecord(store, recordKey);
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
        if (lease) return attemptUnderLease({ settings, parts, call: { ...check, recordKey, read } }, lease);
        // Another instance works on the key, or it is done: its answer, a refusal, or wait.
        const { record } = await read();
        // Stryker disable next-line ConditionalExpression: a waiter that misses the answer here takes the lease once the owner lets go, and answers the same from there
        const answer = recordedAnswer(record, fingerprint);
        if (answer) return answer;
        if (waiting.expired) return inUse(1);
        await sleep(KEY_POLL_MS);
      }
    }
  };
}

// The record's module, re-exported where its users found it before (key-record.ts).
export { recordKeyOf, type KeyRecord } from './key-record.js';
