/**
 * The callbacks not yet handled, listed in the store so that any instance can find them and
 * try again (the sweep): a callback whose instance died, or whose retry met the store away,
 * is not lost with that instance's timers. A `Store` has no scan, so the list is a few keys
 * (buckets), each a JSON array of entries changed by compare-and-set; a callback's bucket is
 * fixed by its key, so that concurrent changes mostly touch different keys.
 */
import { doublingMs } from '../api/retry.js';
import { sleep, type Now } from '../time/clock.js';
import { DeviceRiskError, ERR_STORE_UNAVAILABLE } from '../errors.js';
import { callbackMessages } from '../messages.js';
import { fromStore, type Store } from '../store/store.js';

interface PendingEntry {
  /** The callback record's key. */
  key: string;
  /** Epoch ms when it was listed. */
  at: number;
}

export interface PendingList {
  /** Lists `key` once, listed now (an entry already there is dated again). */
  add(key: string): Promise<void>;
  /** Takes `key` off the list; with `at`, only the entry listed at that time (not one listed again since). */
  remove(key: string, at?: number): Promise<void>;
  /** Every entry listed, bucket by bucket. */
  entries(): Promise<PendingEntry[]>;
}

/** Buckets of the list: enough that a fleet's concurrent changes rarely meet on one. */
export const PENDING_BUCKETS = 16;
/** Changes tried on one bucket before the store counts as unavailable. */
const MAX_TRIES = 20;
/** The first and the longest pause between two tries on a bucket, in ms (before jitter). */
const FIRST_PAUSE_MS = 5;
const MAX_PAUSE_MS = 40;

/** A bucket for `key`: the same on every instance. */
export function bucketOf(key: string): number {
  let hash = 0;
  // Stryker disable next-line ArithmeticOperator: any other mix of the characters spreads keys as well
  for (const char of key) hash = (Math.imul(hash, 31) + char.charCodeAt(0)) >>> 0;
  return hash % PENDING_BUCKETS;
}

export function pendingList(store: Store, namespace: string, ttlMs: number, now: Now): PendingList {
  const bucketKey = (bucket: number) => `${namespace}:pending:${bucket}`;
  const parse = (text: string | undefined): PendingEntry[] => (text ? (JSON.parse(text) as PendingEntry[]) : []);

  /** Applies `edit` to the bucket of `key`; `edit` answers undefined when nothing changes. */
  async function change(key: string, edit: (entries: PendingEntry[]) => PendingEntry[] | undefined): Promise<void> {
    const bucket = bucketKey(bucketOf(key));
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      const current = await fromStore(store.get(bucket), 'pending callbacks read');
      const next = edit(parse(current));
      if (!next) return;
      const text = JSON.stringify(next);
      const written =
        current === undefined
          ? await fromStore(store.setIfAbsent(bucket, text, ttlMs), 'pending callbacks write')
          : next.length
            ? await fromStore(store.compareAndSet(bucket, current, text, ttlMs), 'pending callbacks write')
            : await fromStore(store.compareAndDelete(bucket, current), 'pending callbacks write');
      if (written) return;
      // Another instance changed the bucket meanwhile: read it again, a little apart, with
      // the kit's backoff (api/retry.ts) and full jitter, so that the writers that met part.
      // Stryker disable next-line ArithmeticOperator: how long apart changes no outcome, only how often writers meet
      await sleep(Math.random() * doublingMs(tries, FIRST_PAUSE_MS, MAX_PAUSE_MS));
    }
    throw new DeviceRiskError(ERR_STORE_UNAVAILABLE, callbackMessages.pendingContended(MAX_TRIES), {
      retryAfter: 1,
      operation: 'store',
    });
  }

  return {
    add: (key) => change(key, (entries) => [...entries.filter((e) => e.key !== key), { key, at: now() }]),
    remove(key, at) {
      const match = (e: PendingEntry) => e.key === key && (at === undefined || e.at === at);
      return change(key, (entries) => (entries.some(match) ? entries.filter((e) => !match(e)) : undefined));
    },
    async entries() {
      const buckets = Array.from({ length: PENDING_BUCKETS }, (_, bucket) =>
        fromStore(store.get(bucketKey(bucket)), 'pending callbacks read'),
      );
      return (await Promise.all(buckets)).flatMap(parse);
    },
  };
}
