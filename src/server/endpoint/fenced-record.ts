/**
 * An Idempotency-Key's record as one attempt last wrote it: each write replaces exactly that
 * version (compare-and-set), so an attempt whose key another has taken over is fenced.
 */
import { deadline, within, type Deadline } from '../deadline.js';
import {
  DeviceRiskError,
  ERR_IDEMPOTENCY_KEY_IN_USE,
  ERR_STORE_FULL,
  ERR_STORE_UNAVAILABLE,
  isDeviceRiskError,
} from '../errors.js';
import { endpointMessages } from '../messages.js';
import { sleep } from '../clock.js';
import { fromStore, type Store } from '../store/store.js';
import type { KeyRecord } from './idempotency.js';

/** How often a write of progress is tried again while the store is away, in ms. */
const STORE_RETRY_MS = 100;

export interface FencedRecordContext {
  store: Store;
  recordKey: string;
  /** How long the record is kept, in ms. */
  ttlMs: number;
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
