/**
 * Leases and claims: how one instance of a fleet takes a key for a while (the token lock,
 * an Idempotency-Key being worked on, a callback being handled) through any `Store`.
 */
import { systemNow, type Now, unrefd } from '../time/clock.js';
import { fromStore, type Store } from './store.js';

/** A value no other writer can produce: the owner mark of a claim or a lease. */
export function ownerMark(): string {
  return crypto.randomUUID();
}

/**
 * Claims `key` for `mark` (a lease or a lock) for `ttlMs`; true when this call claimed it.
 * A claim that failed or timed out may still land later (a Redis that was frozen answers
 * its queue when it wakes): its release is sent behind it, so that it cannot block the key
 * for a whole lease with nobody holding it.
 */
export async function claim(store: Store, key: string, mark: string, ttlMs: number, what: string): Promise<boolean> {
  try {
    return await fromStore(store.setIfAbsent(key, mark, ttlMs), what);
  } catch (error) {
    void store.compareAndDelete(key, mark).catch(() => {});
    throw error;
  }
}

/**
 * Why a holder must stop before its next step that others could double: another took the key
 * (`taken`), or no claim or renewal has been confirmed by the store for a whole lease, so it
 * may have expired there and another may take it at any moment (`unconfirmed`).
 */
type LeaseLoss = 'taken' | 'unconfirmed';

export interface Lease {
  /** The owner mark the lease holds: unique to this holder. */
  readonly mark: string;
  /** Undefined while the lease is held; else why it no longer is. */
  readonly lost: LeaseLoss | undefined;
  /** Stops the renewal and deletes the lease if it is still this holder's. */
  release(): Promise<void>;
}

/**
 * Takes `key` for `ttlMs`, renewed every third of that while held, so that a live holder
 * keeps it however long its work takes and a dead one loses it within `ttlMs`. Undefined
 * when another holds it. A renewal the store cannot answer is tried again at the next
 * third; the lease counts as held until `ttlMs` after the last claim or renewal the store
 * confirmed (timed from when it was sent), and no longer.
 */
export async function takeLease(
  store: Store,
  key: string,
  ttlMs: number,
  what: string,
  now: Now = systemNow,
): Promise<Lease | undefined> {
  const mark = ownerMark();
  // Timed on the clock the store's expiries use, and on a monotonic one too: a wall clock
  // stepped back (NTP, a resumed VM) leaves the first far ahead, while the lease runs out.
  let heldUntil = now() + ttlMs;
  let heldUntilMonotonic = performance.now() + ttlMs;
  if (!(await claim(store, key, mark, ttlMs, what))) return undefined;
  let taken = false;
  // A lease never keeps a process alive: one that exits loses it within ttlMs, as a dead one does.
  const renewal = unrefd(
    setInterval(() => {
      const [sent, sentMonotonic] = [now(), performance.now()];
      store.compareAndSet(key, mark, mark, ttlMs).then(
        (held) => {
          if (!held) taken = true;
          else {
            heldUntil = Math.max(heldUntil, sent + ttlMs);
            heldUntilMonotonic = Math.max(heldUntilMonotonic, sentMonotonic + ttlMs);
          }
        },
        () => {},
      );
    }, ttlMs / 3),
  );
  return {
    mark,
    get lost() {
      if (taken) return 'taken';
      return now() >= heldUntil || performance.now() >= heldUntilMonotonic ? 'unconfirmed' : undefined;
    },
    async release() {
      clearInterval(renewal);
      await store.compareAndDelete(key, mark).catch(() => {});
    },
  };
}
