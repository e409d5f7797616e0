/**
 * One attempt on an Idempotency-Key, under its lease: reads the key's record, answers what is
 * already known, or resumes the check where the last attempt stopped, writing each step's
 * progress (key-record.ts, fencedRecord) before the next call to the service.
 */
import { type DeviceRiskClient } from '../api/device-risk-client.js';
import type { Now } from '../time/clock.js';
import {
  DeviceRiskError,
  ERR_IDEMPOTENCY_KEY_IN_USE,
  ERR_NETWORK,
  ERR_ORPHANED_TRANSACTION,
  ERR_STORE_UNAVAILABLE,
  isDeviceRiskError,
} from '../errors.js';
import { deadline, within } from '../time/deadline.js';
import { endpointMessages } from '../messages.js';
import { json } from '../net/http.js';
import type { Store } from '../store/store.js';
import type { Lease } from '../store/lease.js';
import { lapsed, type DeviceRiskProgress, type DeviceRiskResult } from './check.js';
import {
  earlierCreate,
  fencedRecord,
  inUse,
  nextRecordState,
  recordedAnswer,
  startedState,
  type KeyRecord,
} from './key-record.js';
import { recordOf, type KeyState } from './key-state.js';
import { resumedProgress, uploadIntent } from './upload-intent.js';

/** The attempt's settings: the handler's, the same for every key. */
interface AttemptSettings {
  leaseMs: number;
  /** How long the attempt waits for the store to take a write before it answers. */
  storeWaitMs: number;
  /** How long the key's record is kept, in ms. */
  ttlMs: number;
}

/** What the attempt works with: the handler's store, client, clock and error sink. */
interface AttemptParts {
  store: Store;
  client: DeviceRiskClient;
  now: Now;
  onError?: (error: unknown) => void;
}

/** The check to run under a key: this call's own. */
export interface KeyedCheck {
  /** SHA-256 of the request (idempotency.ts, fingerprintOf): the same key with another is refused. */
  fingerprint: string;
  /** Whether the customer brings its own transaction: then none is created. */
  customerTransaction: boolean;
  run: (
    progress: DeviceRiskProgress,
    save: (progress: DeviceRiskProgress) => Promise<void>,
  ) => Promise<DeviceRiskResult>;
  /** Told once the key's first record is written: a checkout never seen before. */
  onNewKey?: () => void;
}

/** One attempt's context: settings, parts and this call apart, the key's record with the call. */
export interface AttemptContext {
  settings: AttemptSettings;
  parts: AttemptParts;
  call: KeyedCheck & {
    recordKey: string;
    read: () => Promise<{ stored: string | undefined; record: KeyRecord | undefined }>;
  };
}

/** The lease must still be this attempt's before each call to the service: throws when it is not. */
function stillHeld(lease: Lease): void {
  if (lease.lost === 'taken')
    throw new DeviceRiskError(ERR_IDEMPOTENCY_KEY_IN_USE, endpointMessages.leaseLost, {
      retryAfter: 1,
      operation: 'store',
    });
  // The store confirmed no renewal for a whole lease: another may take the key any moment.
  if (lease.lost === 'unconfirmed')
    throw new DeviceRiskError(ERR_STORE_UNAVAILABLE, endpointMessages.leaseUnconfirmed, {
      retryAfter: 1,
      operation: 'store',
    });
}

/** The attempt that holds `lease`: the answer, a refusal, or (thrown) the failure of the check. */
export async function attemptUnderLease(context: AttemptContext, lease: Lease): Promise<Response> {
  const { leaseMs, storeWaitMs, ttlMs: ttl } = context.settings;
  const { store, client, now, onError } = context.parts;
  const { recordKey, read, fingerprint, customerTransaction, run, onNewKey } = context.call;
  const { mark } = lease;
  try {
    const { stored, record } = await read();
    const answer = recordedAnswer(record, fingerprint);
    if (answer) return answer;
    // Another attempt's create may be on the wire: it records its transaction, or its time runs out.
    const create = earlierCreate(record, now());
    if (create === 'orphaned') {
      onError?.(
        new DeviceRiskError(ERR_ORPHANED_TRANSACTION, endpointMessages.earlierCreateOrphaned, {
          operation: 'account create',
        }),
      );
    } else if (create) return inUse(create.waitS);
    const progress = record ? await resumedProgress(client, record, now) : {};
    if (progress instanceof Response) return progress;
    const written = fencedRecord({ store, recordKey, ttlMs: ttl, read }, stored);
    /** The key's state as this attempt last moved it (key-state.ts), a create's intent aside. */
    let state: KeyState = startedState(record, fingerprint);
    /** The record of `state`: written only for a state with one (never `none`). */
    const recordNow = (of: KeyState = state) => recordOf(of)!;
    const creates = !customerTransaction && (!progress.transaction || lapsed(progress.transaction, now));
    // Before any call to the service the record is written (a store with no room or no
    // answer refuses the work before a transaction exists), with the create's intent.
    const createWindowMs = (client.accountTimeoutMs ?? 60_000) + leaseMs;
    const createUntil = now() + createWindowMs;
    if (!creates && progress.transaction && !progress.uploaded)
      state = nextRecordState(state, { type: 'intend-upload', intent: uploadIntent(mark, client, leaseMs, now) });
    const creating = { owner: mark, until: createUntil };
    await written.replace(
      recordNow(creates ? nextRecordState(state, { type: 'intend-create', intent: creating }) : state),
      storeWaitMs,
    );
    if (!record) onNewKey?.();
    const stillOwner = () => stillHeld(lease);
    let recorded = progress.transaction;
    let madeUnrecorded = false;
    /** A write of the record going on in the background (see `save`), and whether the check has ended. */
    let landing = false;
    let ended = false;
    /**
     * The create ended without a transaction to record: its intent goes, so that the next
     * attempt does not wait for it. An answer that never came may still have made one.
     */
    const createEnded = async (error: unknown) => {
      // No transaction on this key: nothing for a retry to resume, so no record is kept
      // for a day (a flood of refused creates would fill it otherwise). The intent must go even
      // when the store is away as the create ends (a Redis killed or failing over stops the
      // create before it is sent): left, the next attempt would take it for a create on the wire
      // and report an orphan that was never made. So the write goes on by itself while the
      // intent could still be read as running; the request waits for it only `storeWaitMs`.
      const leftMs = Math.max(storeWaitMs, createUntil - now());
      state = nextRecordState(state, { type: state.state === 'open' ? 'withdraw' : 'settle' });
      const withdrawn = state.state === 'none' ? written.remove(leftMs) : written.replace(recordNow(), leftMs);
      withdrawn.catch(() => {});
      const answering = deadline(storeWaitMs);
      await within(withdrawn, answering.signal)
        .catch(() => {})
        .finally(() => answering.clear());
      // Stryker disable next-line Regex,StringLiteral: every operation that names an account starts with it; no default does
      if (isDeviceRiskError(error) && error.code === ERR_NETWORK && /^account/.test(error.operation ?? '')) {
        onError?.(
          new DeviceRiskError(ERR_ORPHANED_TRANSACTION, endpointMessages.createUnanswered, {
            operation: error.operation,
            cause: error,
          }),
        );
      }
    };
    /** The check ended with an upload's intent recorded: no upload of this attempt is on the wire, so it goes. */
    const uploadEnded = async () => {
      state = nextRecordState(state, { type: 'settle' });
      await written.replace(recordNow(), storeWaitMs).catch(() => {});
    };
    const save = async (next: DeviceRiskProgress) => {
      const made = next.transaction && next.transaction !== recorded ? next.transaction : undefined;
      madeUnrecorded = !!made;
      const uploaded = next.uploaded === true;
      state = nextRecordState(
        state,
        next.transaction
          ? {
              type: 'record',
              transaction: await client.sealTransaction(next.transaction),
              uploaded,
              // A transaction without its blackbox: the upload comes next, and its intent goes with this write.
              ...(uploaded ? {} : { uploading: uploadIntent(mark, client, leaseMs, now) }),
            }
          : { type: 'settle' },
      );
      const saved = recordNow();
      landing = !!made;
      // The transaction just made is written for as long as no other attempt may make one:
      // in the background once the request must be answered, so that a retry resumes it.
      // Landed after the check ended, it carries an intent for an upload that never started.
      await (made
        ? written.replace(saved, Math.max(0, createUntil - now()), {
            answerWithinMs: storeWaitMs,
            onLanded: () => {
              landing = false;
              if (ended) void uploadEnded();
            },
            onGiveUp: (error) =>
              onError?.(
                new DeviceRiskError(
                  ERR_ORPHANED_TRANSACTION,
                  endpointMessages.createdUnrecorded(made.workflowExecutionId),
                  { operation: 'account create', cause: error },
                ),
              ),
          })
        : written.replace(saved, storeWaitMs));
      recorded = next.transaction;
      stillOwner();
    };
    let result: DeviceRiskResult;
    const before = recorded;
    try {
      // Within the try: an attempt stopped here sent nothing, and its intents go as below.
      stillOwner();
      result = await run(progress, save);
    } catch (error) {
      // Nothing new recorded and nothing made unrecorded: the create (if it ran) made nothing we know of.
      if (creates && recorded === before && !madeUnrecorded) await createEnded(error);
      // The upload's call has ended, so nothing of this attempt is on the wire: a retry need not wait.
      else if (state.state === 'transacted' && state.uploading && !landing) await uploadEnded();
      ended = true;
      throw error;
    }
    // Nothing is lost: should this write fail, the next attempt finds the progress and finalize answers as before.
    // Done, the record needs only what answers a retry: no transaction token is kept.
    state = nextRecordState(state, { type: 'finish', result });
    await written.replace(recordNow(), storeWaitMs).catch((error: unknown) => onError?.(error));
    return json(result, 200);
  } finally {
    await lease.release();
  }
}
