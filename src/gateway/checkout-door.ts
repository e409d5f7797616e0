/**
 * The door of POST /device-risk: which order a checkout is for (its Order-Token:
 * order-token.ts), whether the service would take that order (422 `order_token_sub_invalid`),
 * and whether the order already has a checkout of its own (409 `order_already_checked`:
 * order-claim.ts). Each refusal is logged; the claim of a checkout the endpoint did not accept
 * is given back (docs/gateway.md#one-order-one-check). A token's `uref` makes the checkout a
 * signed-in shopper's (CustomerMapping.signedIn), any other a guest's.
 */
import type { CustomerMapping, Store } from '../server/index.js';
import { isHeldAnswer, isMaybeHeldAnswer, isStoreAway, landingOf, withTimeLimit } from '../server/parts.js';
import { orderClaims, ORDER_ALREADY_CHECKED, ORDER_CLAIM_NOT_KEPT, type OrderClaim } from './order-claim.js';
import { ORDER_TOKEN_HEADER, OrderTokenError, orderKey, orderTokenStatus, verifyOrderToken } from './order-token.js';
import { toldRefusal, type Log } from './log.js';

const refusal = (status: number, code: string, message: string, headers: Record<string, string> = {}) =>
  Response.json({ error: { code, message } }, { status, headers: { 'cache-control': 'no-store', ...headers } });

const STORE_AWAY_MESSAGE = "The shop's store did not answer; retry with the same Idempotency-Key";

export async function checkoutDoor(options: { store: Store; orderSecret: string; log: Log }) {
  const { log } = options;
  const key = await orderKey(options.orderSecret);
  // Under the kit's time limit (3 s): a Redis that hangs is answered as one that is down.
  const claims = orderClaims(withTimeLimit(options.store));
  /** Each checkout's claim of its order, given back when the endpoint does not accept it. */
  const claimed = new WeakMap<Request, { claim: OrderClaim; reference: string }>();
  return {
    /** The endpoint's resolveCustomer: the order, or the refusal. */
    async resolveCustomer(request: Request): Promise<CustomerMapping | Response> {
      let order;
      try {
        order = await verifyOrderToken(request.headers.get(ORDER_TOKEN_HEADER), key);
      } catch (error) {
        if (!(error instanceof OrderTokenError)) throw error;
        // The rule a sub broke is told, never the sub: it may be what the rule forbids.
        log(
          `refused a checkout: ${error.code}${error.code === 'order_token_sub_invalid' ? ` (${error.message})` : ''}`,
          { level: 'warn', event: 'refused', code: error.code },
        );
        const status = orderTokenStatus(error.code);
        return toldRefusal(
          refusal(status, error.code, error.message, status === 401 ? { 'www-authenticate': 'Order-Token' } : {}),
        );
      }
      let claim: OrderClaim;
      try {
        claim = await claims.claim(order.customerInternalReference, request.headers.get('idempotency-key'));
      } catch (error) {
        // The store away or slow: 503 store_unavailable with Retry-After, as the endpoint's own
        // store answers; the browser posts again under its key. Told, as every refusal is.
        // Only the store's failures that pass (away, slow, full): the browser posts again under its key.
        if (!isStoreAway(error)) throw error;
        log(`refused a checkout: the store did not answer its order's claim (${error.message})`, {
          level: 'warn',
          event: 'refused',
          code: error.code,
        });
        return toldRefusal(refusal(503, error.code, STORE_AWAY_MESSAGE, { 'retry-after': '1' }));
      }
      if (claim.refused) {
        // The order named in the words too: the text log writes them alone.
        log(`refused a checkout: ${ORDER_ALREADY_CHECKED} (order ${order.customerInternalReference})`, {
          level: 'warn',
          event: 'refused',
          code: ORDER_ALREADY_CHECKED,
          reference: order.customerInternalReference,
        });
        return toldRefusal(refusal(409, ORDER_ALREADY_CHECKED, 'this order already has a checkout of its own'));
      }
      claimed.set(request, { claim, reference: order.customerInternalReference });
      // A token with uref is a signed-in shopper's: served ahead of guests, who are shed first (docs/gateway.md#signed-in-shoppers-first).
      return { ...order, signedIn: order.userReference !== undefined };
    },
    /**
     * After the endpoint's answer: a checkout accepted (2xx, or a 503 whose checkout the queue
     * holds all the same: isHeldAnswer) keeps its order's claim for its decision; one not
     * accepted gives it back. Neither on 409 (another request under the same key holds it:
     * idempotency_key_in_use, and may be accepted) nor on a 503 whose add did not answer in time
     * (isMaybeHeldAnswer: it may still land). A claim not kept ends with its lease: told to the
     * log, as another checkout of the order could then be checked.
     */
    async answered(request: Request, answer: Response): Promise<void> {
      const { claim, reference } = claimed.get(request) ?? {};
      if (!claim) return;
      if (answer.status < 300 || isHeldAnswer(answer)) {
        const why = await claim.keep().then(
          (kept) =>
            kept
              ? undefined
              : 'another checkout of the order holds its claim (this one was accepted after its lease): the order is checked twice',
          (error: Error) =>
            `the store did not answer (${error.message}): the claim may end with its lease, after which another checkout of the order would be checked`,
        );
        if (why)
          log(
            `${ORDER_CLAIM_NOT_KEPT}: the claim of an accepted checkout's order was not kept: ${why} (order ${reference})`,
            {
              level: 'error',
              event: 'error',
              code: ORDER_CLAIM_NOT_KEPT,
              reference,
            },
          );
      } else if (isMaybeHeldAnswer(answer)) {
        // Its add may land later: once the queue holds it, the order is kept for its decision
        // (no retry under its key may come to keep it: the browser's tries spent meanwhile).
        void landingOf(answer)
          ?.then((held) => held && claim.keep())
          .catch(() => undefined);
      } else if (answer.status !== 409) await claim.release();
    },
  };
}
