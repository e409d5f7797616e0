/**
 * One order, one check (docs/gateway.md#one-order-one-check): the first checkout of an order
 * claims it in the kit's Store (set-if-absent: atomic on one instance's file store and on a
 * fleet's Redis) under its Idempotency-Key. A later checkout of the order under another key is
 * refused 409 `order_already_checked`; a retry under the same key goes on to the kit, which
 * answers it as it answered the first. A checkout the endpoint did not accept gives its claim
 * back, so that the order can be checked by the next one.
 *
 * A claim is a lease (ORDER_CLAIM_LEASE_MS) until its checkout is accepted, and kept for the
 * decision only then: a claim whose checkout never got an answer (the store took it after the
 * door's time limit had answered 503, or the instance died mid-checkout) would otherwise refuse
 * the order's every later checkout for a week.
 */
import type { Store } from '../server/index.js';
import { keyPart, ownerMark } from '../server/parts.js';
import { OUTBOX_TTL_MS } from './outbox.js';

export const ORDER_ALREADY_CHECKED = 'order_already_checked';
/** Logged when an accepted checkout's claim could not be kept for its decision (it ends with its lease). */
export const ORDER_CLAIM_NOT_KEPT = 'order_claim_not_kept';

/** How long an accepted checkout's claim is kept: as long as its decision (a week, OUTBOX_TTL_MS). */
const ORDER_CLAIM_TTL_MS = OUTBOX_TTL_MS;
/**
 * How long a claim holds its order before its checkout is accepted: past the endpoint's answer
 * in the ordinary course (it queues the checkout and answers) and a browser's retries after a
 * 503 (four attempts, at most 20 s apart: docs/browser.md). An acceptance later than that (a
 * queue's Redis away meanwhile) takes the claim again, or is logged when another checkout of
 * the order holds it (checkout-door.ts).
 */
export const ORDER_CLAIM_LEASE_MS = 10 * 60_000;

export interface OrderClaim {
  /** Refused: the order has a checkout of its own under another key. */
  refused: boolean;
  /**
   * Keeps the order for its decision once the endpoint accepted this checkout (a week), taking
   * it again when it is gone (given back by an attempt under the same key that was refused, or
   * its lease ran out); false when another checkout of the order holds it now.
   */
  keep(): Promise<boolean>;
  /**
   * Gives the claim back when this checkout was not accepted: a no-op when this checkout did not
   * make it, or an attempt under its key was accepted and kept it (its kept mark beside the claim).
   */
  release(): Promise<void>;
}

export function orderClaims(store: Store) {
  const keyOf = (reference: string) => `gateway:order-claim:${keyPart(reference)}`;
  return {
    /** Claims `reference` for the checkout under `idempotencyKey` (none: a claim of its own, never shared). */
    async claim(reference: string, idempotencyKey: string | null): Promise<OrderClaim> {
      const key = keyOf(reference);
      const mark = idempotencyKey ?? ownerMark();
      // The claim's value stays the mark, as every version of the gateway reads it (a fleet
      // upgraded instance by instance, or rolled back). Beside it, a mark that it was kept: an
      // attempt refused after its retry under the same key was accepted then gives back nothing.
      const keptKey = `${key}:kept`;
      const hold = async () =>
        (await store.compareAndSet(key, mark, mark, ORDER_CLAIM_TTL_MS)) ||
        store.setIfAbsent(key, mark, ORDER_CLAIM_TTL_MS);
      // The kept mark beside the claim's own write, in one round trip.
      const keep = async () => (await Promise.all([store.set(keptKey, mark, ORDER_CLAIM_TTL_MS), hold()]))[1];
      const release = async () => {
        if ((await store.get(keptKey)) === mark) return;
        // A retry under this key may have kept the claim between the read and the delete: held again then.
        if ((await store.compareAndDelete(key, mark)) && (await store.get(keptKey)) === mark) await hold();
      };
      const none = () => Promise.resolve();
      // Twice at most: a claim given back between the two reads (its checkout refused) is claimed again.
      for (let round = 0; round < 2; round++) {
        if (await store.setIfAbsent(key, mark, ORDER_CLAIM_LEASE_MS)) return { refused: false, keep, release };
        const holder = await store.get(key);
        // A retry under the claim's key: accepted, it keeps the claim as the first would have.
        if (holder !== undefined) return { refused: holder !== mark, keep, release: none };
      }
      return { refused: true, keep, release: none };
    },
  };
}
