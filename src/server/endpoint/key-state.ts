/**
 * An Idempotency-Key's life as states, and the one function that moves it between them. The
 * store keeps the record as it always has (`KeyRecord`, key-record.ts, JSON); this module reads
 * a record as its state (`keyStateOf`), and writes a state back as the record (`recordOf`), so
 * that every write of the key's record (key-record.ts, leased-attempt.ts) is a transition:
 *
 *   none ──start──▶ open ──record──▶ transacted ──finish──▶ finished
 *                    │  ▲               │ ▲ (intents: a create, an upload, each on the wire)
 *                    └──┴──give-up──────┴─┴──────────────▶ stale
 *
 * `finished` and `stale` are final: no event moves them, only their time to live ends them.
 */
import type { DeviceRiskResult } from './check.js';
import type { KeyRecord } from './key-record.js';

/** Work of an attempt on the wire until `until` (epoch ms), by its lease's owner mark. */
interface Intent {
  owner: string;
  until: number;
}

export type KeyState =
  /** No record: a key never seen, or one whose check ended without a transaction. */
  | { state: 'none' }
  /** A request took the key; no transaction is recorded yet. `creating`: an account create on the wire. */
  | { state: 'open'; fingerprint: string; creating?: Intent }
  /**
   * Its transaction recorded (its token sealed), with its blackbox `uploaded` or not. `uploading`:
   * an upload on the wire; `creating`: a create on the wire to replace a transaction whose token lapsed.
   */
  | {
      state: 'transacted';
      fingerprint: string;
      transaction: string;
      uploaded: boolean;
      creating?: Intent;
      uploading?: Intent;
    }
  /** The check's answer, all else dropped: what answers a retry. */
  | { state: 'finished'; fingerprint: string; result: DeviceRiskResult }
  /** Given up past the trust bound (`blackbox_stale`, queued.ts): the key is never checked. */
  | { state: 'stale'; fingerprint: string };

export type KeyEvent =
  /** An attempt takes the key under its lease: the record it starts from, no other attempt's intents. */
  | { type: 'start'; fingerprint: string }
  /** An account create goes on the wire. */
  | { type: 'intend-create'; intent: Intent }
  /** A blackbox upload to the recorded transaction goes on the wire. */
  | { type: 'intend-upload'; intent: Intent }
  /** The attempt's progress: its transaction (sealed), whether the blackbox is there, an upload to come. */
  | { type: 'record'; transaction: string; uploaded: boolean; uploading?: Intent }
  /** The attempt's calls ended: none of its intents is on the wire any more. */
  | { type: 'settle' }
  /** A create ended without a transaction to record, none recorded before: the record goes. */
  | { type: 'withdraw' }
  | { type: 'finish'; result: DeviceRiskResult }
  /** Given up past the trust bound (queued.ts): the key is refused for good; not once its blackbox is uploaded. */
  | { type: 'give-up'; fingerprint: string };

/** The states no event leaves. */
export const isFinal = (state: KeyState): state is Extract<KeyState, { state: 'finished' | 'stale' }> =>
  state.state === 'finished' || state.state === 'stale';

/** The state an event moves `from` to, or undefined when the event is not one `from` allows. */
export function nextKeyState(from: KeyState, event: KeyEvent): KeyState | undefined {
  if (isFinal(from)) return undefined;
  // A blackbox already uploaded is being checked: finalized and told, never given up.
  if (event.type === 'give-up')
    // Stryker disable next-line ConditionalExpression,LogicalOperator: only a transacted state has `uploaded`
    return from.state === 'transacted' && from.uploaded
      ? undefined
      : { state: 'stale', fingerprint: event.fingerprint };
  if (from.state === 'none')
    return event.type === 'start' ? { state: 'open', fingerprint: event.fingerprint } : undefined;
  const { fingerprint } = from;
  switch (event.type) {
    case 'start':
    case 'settle':
      // The same progress, without intents (a new attempt's own come next).
      return from.state === 'open'
        ? { state: 'open', fingerprint }
        : { state: 'transacted', fingerprint, transaction: from.transaction, uploaded: from.uploaded };
    case 'intend-create':
      return { ...from, creating: event.intent };
    case 'intend-upload':
      return from.state === 'transacted' && !from.uploaded ? { ...from, uploading: event.intent } : undefined;
    case 'record': {
      const { transaction, uploaded, uploading } = event;
      // An upload intent only for a transaction without its blackbox.
      if (uploading && uploaded) return undefined;
      return { state: 'transacted', fingerprint, transaction, uploaded, ...(uploading ? { uploading } : {}) };
    }
    case 'withdraw':
      return from.state === 'open' ? { state: 'none' } : undefined;
    case 'finish':
      return { state: 'finished', fingerprint, result: event.result };
  }
}

/** The state a stored record is in (none for no record). */
export function keyStateOf(record: KeyRecord | undefined): KeyState {
  if (!record) return { state: 'none' };
  const { fingerprint } = record;
  if (record.result) return { state: 'finished', fingerprint, result: record.result };
  if (record.stale) return { state: 'stale', fingerprint };
  const creating = record.creating ? { creating: record.creating } : {};
  if (!record.transaction) return { state: 'open', fingerprint, ...creating };
  return {
    state: 'transacted',
    fingerprint,
    transaction: record.transaction,
    uploaded: record.uploaded === true,
    ...creating,
    ...(record.uploading ? { uploading: record.uploading } : {}),
  };
}

/** The record the store keeps for a state (undefined for none: no record). */
export function recordOf(state: KeyState): KeyRecord | undefined {
  switch (state.state) {
    case 'none':
      return undefined;
    case 'open':
      return { fingerprint: state.fingerprint, ...(state.creating ? { creating: state.creating } : {}) };
    case 'transacted':
      return {
        fingerprint: state.fingerprint,
        transaction: state.transaction,
        ...(state.uploaded ? { uploaded: true } : {}),
        ...(state.creating ? { creating: state.creating } : {}),
        ...(state.uploading ? { uploading: state.uploading } : {}),
      };
    case 'finished':
      return { fingerprint: state.fingerprint, result: state.result };
    case 'stale':
      return { fingerprint: state.fingerprint, stale: true };
  }
}
