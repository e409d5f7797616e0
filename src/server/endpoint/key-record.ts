/**
 * An Idempotency-Key's record: its shape, its store key, its reads, and the answer it already
 * gives (another body, a finished check, a key given up stale), written once for the three
 * paths that ask (a request waiting on the key, the attempt that takes its lease, the queue
 * before it accepts). Its writes are compare-and-set (fenced-record.ts, queued.ts).
 */
import { ERR_BLACKBOX_STALE } from '../errors.js';
import { json, refuse, REFUSED_KEY_REUSED } from '../http.js';
import { endpointMessages } from '../messages.js';
import { fromStore, keyPart, type Store } from '../store/store.js';
import type { DeviceRiskResult } from './check.js';

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
  if (!record) return undefined;
  if (record.fingerprint !== fingerprint) return reused();
  // Checked already (a retry of a request answered before): the same reference as then.
  if (record.result) return json(record.result, 200);
  if (record.stale) return staleKey();
  return undefined;
}

/** A key whose check was given up past the trust bound: gone for good, the browser does not retry a 4xx. */
export const staleKey = () => refuse(410, ERR_BLACKBOX_STALE, endpointMessages.staleKey);

export const reused = () => refuse(422, REFUSED_KEY_REUSED, endpointMessages.keyReused);
