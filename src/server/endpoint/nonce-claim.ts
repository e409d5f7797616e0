/**
 * The capture nonce of a checkout (nonce.ts): verified for its customer, then claimed in the
 * store for the request's Idempotency-Key, so that a blackbox is checked once across a fleet.
 */
import type { Now } from '../time/clock.js';
import {
  ERR_NONCE_EXPIRED,
  ERR_NONCE_INVALID,
  ERR_NONCE_MISSING,
  ERR_NONCE_REUSED,
  isDeviceRiskError,
} from '../errors.js';
import { endpointMessages } from '../messages.js';
import { refuse } from '../net/http.js';
import { fromStore, type Store } from '../store/store.js';
import { verifyCaptureNonce, type VerifiedNonce } from './nonce.js';

export interface NonceClaim {
  store: Store;
  secret: string;
  /** The prefix of this client's nonce claims in the store. */
  prefix: string;
  now: Now;
}

/** Verifies the nonce and claims it for `claimant` (the Idempotency-Key); a refusal, or undefined to go on. */
export async function claimNonce(
  options: NonceClaim,
  nonce: unknown,
  subject: string,
  claimant: string,
): Promise<Response | undefined> {
  const { store, now } = options;
  if (nonce === undefined || nonce === null || nonce === '')
    return refuse(400, ERR_NONCE_MISSING, endpointMessages.nonceMissing);
  let verified: VerifiedNonce;
  try {
    verified = await verifyCaptureNonce(nonce, { secret: options.secret, subject, now });
  } catch (error) {
    const code = isDeviceRiskError(error) ? error.code : ERR_NONCE_INVALID;
    return refuse(
      code === ERR_NONCE_EXPIRED ? 400 : 403,
      code,
      code === ERR_NONCE_EXPIRED ? endpointMessages.nonceExpiredAnswer : endpointMessages.nonceInvalidAnswer,
    );
  }
  const nonceKey = `${options.prefix}:nonce:${verified.id}`;
  const ttl = Math.max(1, verified.expiresAt - now());
  // A store failure throws store_unavailable: the handler answers it as every other (503, Retry-After).
  if (await fromStore(store.setIfAbsent(nonceKey, claimant, ttl), 'nonce claim')) return undefined;
  // Used before: by this very request's earlier attempt (same key) is fine.
  if ((await fromStore(store.get(nonceKey), 'nonce read')) === claimant) return undefined;
  return refuse(409, ERR_NONCE_REUSED, endpointMessages.nonceReused);
}
