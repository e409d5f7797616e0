/**
 * One order, one check (docs/gateway.md#one-order-one-check): the first checkout of an order
 * claims it in the kit's Store (set-if-absent: atomic on one instance's file store and on a
 * fleet's Redis) under its Idempotency-Key. A later checkout of the order under another key is
 * refused 409 `order_already_checked`; a retry under the same key goes on to the kit, which
 * answers it as it answered the first. A checkout the endpoint did not accept gives its claim
 * back, so that the order can be checked by the next one.
 */
import type { Store } from '../server/index.js';
import { keyPart, ownerMark } from '../server/parts.js';
import { OUTBOX_TTL_MS } from './outbox.js';

export const ORDER_ALREADY_CHECKED = 'order_already_checked';

/** How long an order's claim is kept: as long as its decision (a week, OUTBOX_TTL_MS). */
const ORDER_CLAIM_TTL_MS = OUTBOX_TTL_MS;

export interface OrderClaim {
  /** Refused: the order has a checkout of its own under another key. */
  refused: boolean;
  /** Gives the claim back when this checkout was not accepted (a no-op when it did not make it). */
  release(): Promise<void>;
}

export function orderClaims(store: Store) {
  const keyOf = (reference: string) => `gateway:order-claim:${keyPart(reference)}`;
  return {
    /** Claims `reference` for the checkout under `idempotencyKey` (none: a claim of its own, never shared). */
    async claim(reference: string, idempotencyKey: string | null): Promise<OrderClaim> {
      const key = keyOf(reference);
      const mark = idempotencyKey ?? ownerMark();
      // Twice at most: a claim given back between the two reads (its checkout refused) is claimed again.
      for (let round = 0; round < 2; round++) {
        if (await store.setIfAbsent(key, mark, ORDER_CLAIM_TTL_MS))
          return { refused: false, release: () => store.compareAndDelete(key, mark).then(() => undefined) };
        const holder = await store.get(key);
        if (holder !== undefined) return { refused: holder !== mark, release: () => Promise.resolve() };
      }
      return { refused: true, release: () => Promise.resolve() };
    },
  };
}
