/**
 * A blackbox is used for one transaction (#54, docs/vendor-contract.md#one-collection-per-page-run):
 * the first request that brings it claims it in the store for its Idempotency-Key, for the
 * trust bound; the same key again (a retry) goes on, another key is refused 422
 * `blackbox_reused`, logged through `onError`, and no second transaction is started. The store
 * holds a SHA-256 digest of the blackbox, never the blackbox itself.
 */
import type { Now } from '../time/clock.js';
import { DeviceRiskError, ERR_BLACKBOX_REUSED } from '../errors.js';
import { endpointMessages } from '../messages.js';
import { refuse } from '../net/http.js';
import { fromStore, type Store } from '../store/store.js';
import { fingerprintOf } from './idempotency.js';

export interface ReuseClaim {
  store: Store;
  /** The prefix of this client's claims in the store. */
  prefix: string;
  /** How long a claim is kept, in ms: the trust bound (`maxQueuedMs`), past which no blackbox is checked. */
  ttlMs: number;
  onError: (error: unknown) => void;
  now?: Now;
}

/** The store key of a blackbox's claim: its digest under the client's prefix. */
export const reuseKeyOf = async (prefix: string, blackbox: string) =>
  `${prefix}:blackbox:${await fingerprintOf(blackbox)}`;

/** Claims `blackbox` for `claimant` (the Idempotency-Key); a refusal when another key holds it, else undefined. */
export async function claimBlackbox(
  options: ReuseClaim,
  blackbox: string,
  claimant: string,
): Promise<Response | undefined> {
  const { store } = options;
  const key = await reuseKeyOf(options.prefix, blackbox);
  // A store failure throws store_unavailable: the handler answers it as every other (503, Retry-After).
  if (await fromStore(store.setIfAbsent(key, claimant, options.ttlMs), 'blackbox claim')) return undefined;
  // Claimed before by this very checkout's earlier attempt (same key): an idempotent retry.
  if ((await fromStore(store.get(key), 'blackbox claim read')) === claimant) return undefined;
  options.onError(new DeviceRiskError(ERR_BLACKBOX_REUSED, endpointMessages.blackboxReusedLogged, { status: 422 }));
  return refuse(422, ERR_BLACKBOX_REUSED, endpointMessages.blackboxReused);
}
