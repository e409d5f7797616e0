/**
 * An Idempotency-Key's record, whole: its shape, its store key, its reads, the answer it already
 * gives (another body, a finished check, a key given up stale), written once for the three
 * paths that ask (a request waiting on the key, the attempt that takes its lease, the queue
 * before it accepts), and its writes, every one compare-and-set: an attempt's (`fencedRecord`:
 * each write replaces exactly the version it last wrote, so an attempt whose key another has
 * taken over is fenced) and the queue's stale mark (`markStale`).
 *
 * Its states and their one transition function are in key-state.ts (`KeyState`,
 * `nextKeyState`): every record written here is a state that function reached. A finished or
 * given-up record is final: nothing but its time to live replaces it.
 */
import { deadline, within, type Deadline } from '../time/deadline.js';
import {
  DeviceRiskError,
  ERR_BLACKBOX_STALE,
  ERR_IDEMPOTENCY_KEY_IN_USE,
  ERR_STORE_FULL,
  ERR_STORE_UNAVAILABLE,
  isDeviceRiskError,
} from '../errors.js';
import { sleep, type Now } from '../time/clock.js';
import { json, refuse, REFUSED_KEY_REUSED } from '../net/http.js';
import { endpointMessages } from '../messages.js';
import { fromStore, keyPart, type Store } from '../store/store.js';
import type { DeviceRiskResult } from './check.js';
import { keyStateOf, nextKeyState, recordOf, type KeyEvent, type KeyState } from './key-state.js';

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
  /** Given up past the trust bound (`blackbox_stale`, queued.ts): the key is never checked. */
  stale?: true;
  /**
   * An account create on the wire: until `until` (epoch ms), its attempt may still record the
   * transaction it made, and no other attempt makes one. After it, the create's owner is
   * taken to have died with it on the wire: the next attempt makes another (the one orphan a
   * crash can leave, reported through onError).
   */
  creating?: { owner: string; until: number };
  /**
   * The blackbox upload to `transaction` on the wire: until `until` (epoch ms) no other
   * attempt uploads, since the owner's upload may still land (an owner killed, or whose lease
   * lapsed, with its upload sent). After it, the service's status tells whether it landed.
   */
  uploading?: { owner: string; until: number };
}

/** A record as the store holds it (JSON), or undefined for none. */
export const parseKeyRecord = (stored: string | undefined): KeyRecord | undefined =>
  stored === undefined ? undefined : (JSON.parse(stored) as KeyRecord);

/** The record at `recordKey` as stored (for a compare-and-set) and parsed. */
export async function readRecord(
  store: Store,
  recordKey: string,
): Promise<{ stored: string | undefined; record: KeyRecord | undefined }> {
  const stored = await fromStore(store.get(recordKey), 'idempotency record read');
  return { stored, record: parseKeyRecord(stored) };
}

/** The store key of an Idempotency-Key's record. */
export const recordKeyOf = (namespace: string, key: string) => `${namespace}:${keyPart(key)}`;

/** The record of `key`, if any: what the queue needs to know before it accepts a request under it. */
export async function readKeyRecord(
  store: Store,
  namespace: string,
  key: string,
): Promise<Pick<KeyRecord, 'fingerprint' | 'result' | 'stale' | 'uploaded'> | undefined> {
  return (await readRecord(store, recordKeyOf(namespace, key))).record;
}

/**
 * The answer the record already gives a request with `fingerprint`: 422 when it holds another
 * request, the first answer when its check finished, 410 when it was given up stale; undefined
 * when the check is still to run (or running).
 */
export function recordedAnswer(record: KeyRecord | undefined, fingerprint: string): Response | undefined {
  const state = keyStateOf(record);
  if (state.state === 'none') return undefined;
  if (state.fingerprint !== fingerprint) return reused();
  // Checked already (a retry of a request answered before): the same reference as then.
  if (state.state === 'finished') return json(state.result, 200);
  if (state.state === 'stale') return staleKey();
  return undefined;
}

/**
 * Another attempt's create that may still be on the wire (an intent, no transaction yet): the
 * seconds left to wait for it, `'orphaned'` once its time is up (its create is taken to have
 * died with its owner), undefined when there is none.
 */
export function earlierCreate(record: KeyRecord | undefined, now: number): { waitS: number } | 'orphaned' | undefined {
  const state = keyStateOf(record);
  if (state.state !== 'open' || !state.creating) return undefined;
  return now < state.creating.until ? { waitS: Math.ceil((state.creating.until - now) / 1000) } : 'orphaned';
}

/**
 * The key's state after `event`: the record's one way forward. An attempt asks only what its
 * state allows, having answered a final record before it starts; one refused anyway means the
 * record is not the one it read, so it stops as a fenced attempt does (409, the retry answers).
 */
export function nextRecordState(from: KeyState, event: KeyEvent): KeyState {
  const next = nextKeyState(from, event);
  if (next) return next;
  throw new DeviceRiskError(
    ERR_IDEMPOTENCY_KEY_IN_USE,
    `The Idempotency-Key's record (${from.state}) cannot take this attempt's ${event.type}; retry with the same key`,
    { retryAfter: 1, operation: 'store' },
  );
}

/** The state an attempt starts from: the key's own (or its first), without another attempt's intents. */
export const startedState = (record: KeyRecord | undefined, fingerprint: string): KeyState =>
  nextRecordState(keyStateOf(record), { type: 'start', fingerprint });

/** The record an attempt starts from (startedState's). */
export const startedRecord = (record: KeyRecord | undefined, fingerprint: string): KeyRecord =>
  recordOf(startedState(record, fingerprint))!;

/** The record with an attempt's create on the wire until `until` (epoch ms). */
export const withCreateIntent = (record: KeyRecord, owner: string, until: number): KeyRecord =>
  recordOf(nextRecordState(keyStateOf(record), { type: 'intend-create', intent: { owner, until } }))!;

/** The final record of a finished check: what answers a retry, no transaction token kept. */
export const finishedRecord = (fingerprint: string, result: DeviceRiskResult): KeyRecord =>
  recordOf(nextRecordState({ state: 'open', fingerprint }, { type: 'finish', result }))!;

/** A key whose check was given up past the trust bound: gone for good, the browser does not retry a 4xx. */
const staleKey = () => refuse(410, ERR_BLACKBOX_STALE, endpointMessages.staleKey);

export const reused = () => refuse(422, REFUSED_KEY_REUSED, endpointMessages.keyReused);

/** Another attempt works on the key: come back in `seconds` (1 to 60). */
export const inUse = (seconds: number) =>
  refuse(409, ERR_IDEMPOTENCY_KEY_IN_USE, endpointMessages.keyInUse, {
    'retry-after': String(Math.min(60, Math.max(1, seconds))),
  });

/** How often a write of progress is tried again while the store is away, in ms. */
const STORE_RETRY_MS = 100;

/** Where a key's record lives: its store, its store key, how long it is kept (ms). */
export interface RecordPlace {
  store: Store;
  recordKey: string;
  ttlMs: number;
}

export interface FencedRecordContext extends RecordPlace {
  read: () => Promise<{ stored: string | undefined }>;
}

/**
 * The key's record as this attempt last wrote it (`stored`, or none yet):
 * each write replaces exactly that version. A store that is away is waited for, up to
 * `withinMs`; a version that another attempt replaced means the key was taken over
 * (`idempotency_key_in_use`): nothing more is written or called.
 */
export function fencedRecord(context: FencedRecordContext, stored: string | undefined) {
  const { store, recordKey, ttlMs: ttl, read } = context;
  let last = stored;
  return {
    /**
     * Deletes the record as this attempt last wrote it (a record another attempt replaced
     * stays), trying again while the store is away, for up to `withinMs`.
     */
    async remove(withinMs = 0): Promise<void> {
      if (last === undefined) return;
      const expected = last;
      const retrying = deadline(withinMs);
      try {
        for (;;) {
          try {
            await fromStore(store.compareAndDelete(recordKey, expected), 'idempotency record delete');
            return;
          } catch (error) {
            if (isDeviceRiskError(error) && error.code === ERR_STORE_FULL) throw error;
            // A retry that the time left cannot hold is not started: the error stands.
            await sleep(STORE_RETRY_MS, retrying.signal).catch(() => {
              throw error;
            });
          }
        }
      } finally {
        retrying.clear();
      }
    },
    /**
     * Writes `next`, trying again while the store is away, for up to `withinMs`. With
     * `background`, the request waits only `answerWithinMs` for it: past that the write
     * goes on by itself (the attempt answers 503 now, and a retry finds the record once it
     * lands), `onLanded` hears that it landed, and `onGiveUp` of a write that never lands.
     */
    async replace(
      next: KeyRecord,
      withinMs: number,
      background?: { answerWithinMs: number; onGiveUp: (error: unknown) => void; onLanded?: () => void },
    ): Promise<void> {
      const retrying = deadline(withinMs);
      const writing = writeWithin(JSON.stringify(next), retrying).finally(() => retrying.clear());
      if (!background) return writing;
      // Before the request's own wait hears of it: the caller knows at once that it landed.
      writing.then(background.onLanded, background.onGiveUp);
      const answering = deadline(background.answerWithinMs);
      try {
        return await within(writing, answering.signal);
      } catch (error) {
        if (!answering.expired) throw error;
        throw new DeviceRiskError(ERR_STORE_UNAVAILABLE, endpointMessages.recordNotTaken, {
          retryAfter: 1,
          operation: 'store',
        });
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
          throw new DeviceRiskError(ERR_IDEMPOTENCY_KEY_IN_USE, endpointMessages.keyTakenOver, {
            retryAfter: 1,
            operation: 'store',
          });
        }
        last = text;
        return;
      } catch (error) {
        if (isDeviceRiskError(error) && (error.code === ERR_IDEMPOTENCY_KEY_IN_USE || error.code === ERR_STORE_FULL))
          throw error;
        // A retry that the time left cannot hold is not started: the error stands.
        await sleep(STORE_RETRY_MS, retrying.signal).catch(() => {
          throw error;
        });
      }
    }
  }
}

/**
 * The key's final record for a check given up: a re-post of the key is refused (410), never
 * accepted and checked again with the old blackbox. A record a finished check wrote stays.
 * Whether the check is given up: false when it finished or its blackbox is uploaded meanwhile
 * (a run of the same job elsewhere), so that no failure is told beside its decision.
 */
export async function markStale(place: RecordPlace, fingerprint: string, now: Now): Promise<boolean> {
  const { store, recordKey, ttlMs } = place;
  // Another writer between the read and the write (a run of the same job elsewhere): read again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const { stored, record } = await readRecord(store, recordKey);
    const from = keyStateOf(record);
    // An upload that may still land (another run's, its intent's time not up): given up only
    // once it has not, or its blackbox would be at the service of an order told "not checked".
    const uploadUntil = (from as { uploading?: { until: number } }).uploading?.until;
    if (uploadUntil !== undefined && now() < uploadUntil) throw staleContended(Math.ceil((uploadUntil - now()) / 1000));
    const stale = nextKeyState(from, { type: 'give-up', fingerprint });
    // A final record stays: stale already (given up), or finished (checked, never to be told
    // stale); so does one whose blackbox is uploaded (it is being checked).
    if (!stale) return from.state === 'stale';
    const next = JSON.stringify(recordOf(stale));
    const written =
      stored === undefined
        ? store.setIfAbsent(recordKey, next, ttlMs)
        : store.compareAndSet(recordKey, stored, next, ttlMs);
    // Stryker disable next-line ConditionalExpression: going round again after a write that landed reads it back and returns
    if (await fromStore(written, 'idempotency record write')) return true;
  }
  // Three writes lost to others, each read again and still open: another run writes on (a
  // stalled job taken again). Not given up beside it: the job comes back and reads it again.
  throw staleContended(1);
}

/** The stale mark not written for now: the job comes back after `seconds` and reads the key again. */
const staleContended = (seconds: number) =>
  new DeviceRiskError(ERR_IDEMPOTENCY_KEY_IN_USE, endpointMessages.staleContended, {
    retryAfter: Math.min(60, Math.max(1, seconds)),
    operation: 'store',
  });
