/**
 * Each decision told once per workflow execution and final status, whichever path brings it
 * first: the callback handler (src/server/callbacks/) or the endpoint's check, queued or within
 * the request (src/server/endpoint/). Both claim one marker in the store right before they call
 * `onResult`, under the tenant's client id: `<clientId>:told:<execution>:<status>`.
 *
 * The claim is a lease (src/server/store/lease.ts): it holds an owner mark, renewed while
 * `onResult` runs, and becomes `told` only once `onResult` has returned. So:
 * - a path that finds `told` calls nothing (the callback handler records its callback done);
 * - a path that finds another's claim (`busy`) does not tell it now: the callback handler and
 *   the queued check try again later, with their backoff, and tell it if the claim was let go;
 *   a check within the request leaves it to the other path;
 * - a winner whose `onResult` throws lets the claim go at once (the other path, or its own
 *   retry, tells it); a winner that dies leaves a claim that expires after its lease.
 *
 * For the once guarantee both handlers must be given the same store (a fleet's shared Redis);
 * handlers given no store keep their markers in one memory store per client object, so that a
 * callback handler and an endpoint made with the same client in one process agree without one.
 */
import { sleep, systemNow, type Now } from '../time/clock.js';
import { DeviceRiskError, ERR_STORE_UNAVAILABLE } from '../errors.js';
import { toldMessages } from '../messages.js';
import { takeLease, type Lease } from '../store/lease.js';
import { createMemoryStore, fromStore, keyPart, type Store } from '../store/store.js';

/** The marker's value once `onResult` has returned. */
const TOLD = 'told';
/** How long a `told` marker is kept: past the callbacks' retries (24 h by default) and any queued check's. */
export const TOLD_TTL_MS = 48 * 3_600_000;
/** Pause between writes of the `told` marker while the store is away. */
const TOLD_WRITE_PAUSE_MS = 100;

/** This caller's claim: tell, then `done()`; or, when telling failed, `abandon()`. */
export interface Telling {
  /** Marks the decision told (retried for up to a lease while the store is away); never throws. */
  done(): Promise<void>;
  /** Lets the claim go: the other path, or a retry, may tell the decision. */
  abandon(): Promise<void>;
}

/**
 * Which checkout an execution is for, as the endpoint's check knew it: written once its
 * transaction exists, beside the markers (same store, same lifetime), and read by the callback
 * handler, so that every `onResult` names the checkout (`reference`, the Idempotency-Key) and its
 * order, an expired execution's too (its callback carries no details).
 */
export interface CheckoutOrder {
  reference?: string;
  customerInternalReference?: string;
  userReference?: string;
}

export interface ToldMarkers {
  /** Remembers which checkout `workflowExecutionId` is for. Rejects when the store does. */
  remember(workflowExecutionId: string, order: CheckoutOrder): Promise<void>;
  /** The checkout `workflowExecutionId` is for, when a check of this tenant remembered it. */
  orderOf(workflowExecutionId: string): Promise<CheckoutOrder | undefined>;
  /**
   * Claims the telling of one execution's decision: a `Telling`, or `told` (another path told
   * it: call nothing), or `busy` (another path is telling it now). Rejects when the store does
   * (`store_unavailable`): nothing may be told then.
   */
  claim(workflowExecutionId: string, status: string): Promise<Telling | 'told' | 'busy'>;
}

/** Thrown while another path tells the decision (the callback handler, a queued check): tried again later, quietly. */
export class TellingElsewhere extends Error {
  constructor(workflowExecutionId: string, status: string) {
    super(toldMessages.beingTold(workflowExecutionId, status));
    this.name = 'TellingElsewhere';
  }
}

/**
 * Thrown by a queued check whose `onResult` failed (that failure told to onError, the telling let
 * go): the job comes back, resumes from its record (uploaded, finalized) and tells the decision
 * then, or finds it told by another path meanwhile. Quiet: the cause was told already.
 */
export class TellingLater extends Error {
  constructor(
    readonly workflowExecutionId: string,
    readonly status: string,
    cause: unknown,
  ) {
    super(toldMessages.tellingLater(workflowExecutionId, status), { cause });
    this.name = 'TellingLater';
  }
}

/**
 * Thrown by a queued check whose decision is not there yet (after finalize the status is not
 * final): the job comes back to read it on the documented schedule, quietly, until it is
 * PROCESSED (told, unless another path told it first) or expired (`workflow_expired`), so that
 * a callback that never comes loses no decision (docs/answer.md).
 */
export class ResultPending extends Error {
  constructor(readonly workflowExecutionId: string) {
    super(toldMessages.resultPending(workflowExecutionId));
    this.name = 'ResultPending';
  }
}

/** The errors of a queued check that only say "later": told to no one. */
export const isQuietRetry = (error: unknown): boolean =>
  error instanceof TellingElsewhere || error instanceof TellingLater || error instanceof ResultPending;

const defaultStores = new WeakMap<object, Store>();
/**
 * The markers' store of handlers given no store: one in this process's memory per client,
 * so that the callback handler and the endpoint made with one client share it.
 */
export function defaultToldStore(client: object): Store {
  let store = defaultStores.get(client);
  if (!store) defaultStores.set(client, (store = createMemoryStore({ maxEntries: 500_000 })));
  return store;
}

/** The marker's key: UUIDs compare case-insensitively, so one execution is one marker. */
const toldKey = (clientId: string | undefined, workflowExecutionId: string, status: string): string =>
  `${keyPart(clientId ?? '')}:told:${keyPart(workflowExecutionId.toLowerCase())}:${status}`;

/**
 * `leaseMs`: how long a claim outlives a dead winner (renewed while it lives): the handler's
 * own lease, so that its sweep or retry after a lease finds the claim gone.
 */
export function toldMarkers(
  store: Store,
  clientId: string | undefined,
  leaseMs: number,
  report: (error: unknown) => void,
  now: Now = systemNow,
): ToldMarkers {
  const read = (key: string) => fromStore(store.get(key), 'told marker read');
  const orderKey = (workflowExecutionId: string) =>
    `${keyPart(clientId ?? '')}:order:${keyPart(workflowExecutionId.toLowerCase())}`;
  return {
    remember: (workflowExecutionId, order) =>
      fromStore(store.set(orderKey(workflowExecutionId), JSON.stringify(order), TOLD_TTL_MS), 'checkout order write'),
    async orderOf(workflowExecutionId) {
      const text = await read(orderKey(workflowExecutionId));
      return text === undefined ? undefined : (JSON.parse(text) as CheckoutOrder);
    },
    async claim(workflowExecutionId, status) {
      const key = toldKey(clientId, workflowExecutionId, status);
      if ((await read(key)) === TOLD) return 'told';
      const lease = await takeLease(store, key, leaseMs, 'told marker', now);
      if (!lease) return (await read(key)) === TOLD ? 'told' : 'busy';
      return telling(store, key, lease, leaseMs, now, () =>
        report(
          new DeviceRiskError(ERR_STORE_UNAVAILABLE, toldMessages.notMarked(workflowExecutionId, status), {
            operation: 'store',
          }),
        ),
      );
    },
  };
}

function telling(store: Store, key: string, lease: Lease, leaseMs: number, now: Now, unmarked: () => void): Telling {
  return {
    async done() {
      const since = now();
      try {
        for (;;) {
          try {
            // False: the claim lapsed and another path took it; nothing more to write.
            await store.compareAndSet(key, lease.mark, TOLD, TOLD_TTL_MS);
            return;
          } catch {
            // Within a lease: past it, another path may take the claim and tell the decision again.
            if (lease.lost || now() - since >= leaseMs) return unmarked();
            await sleep(TOLD_WRITE_PAUSE_MS);
          }
        }
      } finally {
        // Stops the renewal; the marker, once `told`, is no longer the lease's to delete.
        await lease.release();
      }
    },
    abandon: () => lease.release(),
  };
}
