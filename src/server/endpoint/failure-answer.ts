/**
 * The browser's answer when a check (or the store under it) failed: a permanent refusal the
 * browser must not repeat (4xx without Retry-After), or upstream trouble it retries with the
 * same Idempotency-Key (502/503 with Retry-After). The decision is never in it.
 */
import {
  ERR_FORGED_ADDRESS,
  ERR_IDEMPOTENCY_KEY_IN_USE,
  ERR_INVALID_ACCOUNT_REQUEST,
  ERR_INVALID_CONFIGURATION,
  ERR_NETWORK,
  ERR_QUEUE_FULL,
  ERR_RATE_LIMITED,
  ERR_REQUEST_REJECTED,
  ERR_STORE_FULL,
  ERR_STORE_UNAVAILABLE,
  ERR_WORKFLOW_EXPIRED,
  isDeviceRiskError,
  isRedisFull,
  isStoreAway,
} from '../errors.js';
import { endpointMessages, queuedMessages } from '../messages.js';
import { redisFull } from '../store/store.js';
import { REFUSED_INTERNAL, refuse } from '../net/http.js';
import { inUse } from './key-record.js';

/** True when retrying the same check can never succeed: the service or the configuration refuses it. */
export function isPermanent(error: unknown): boolean {
  if (!isDeviceRiskError(error)) return false;
  if (error.code === ERR_INVALID_CONFIGURATION || error.code === ERR_FORGED_ADDRESS) return true;
  if (error.code === ERR_INVALID_ACCOUNT_REQUEST || error.code === ERR_WORKFLOW_EXPIRED) return true;
  const status = error.status;
  return error.code === ERR_REQUEST_REJECTED && status !== undefined && status >= 400 && status < 500 && status !== 429;
}

/** True when the service (or the store) asks for time: a 429 or 503, a network failure, a store or queue away or full. */
export function isUnavailable(error: unknown): boolean {
  if (!isDeviceRiskError(error)) return false;
  const { status, code } = error;
  return (
    status === 429 ||
    status === 503 ||
    code === ERR_NETWORK ||
    code === ERR_RATE_LIMITED ||
    isStoreAway(error) ||
    code === ERR_QUEUE_FULL
  );
}

/** What the answer says failed: the service, the shop's store or queue, or this server. */
function said(code: string): string {
  if (code === ERR_STORE_UNAVAILABLE) return endpointMessages.storeUnavailable;
  if (code === ERR_STORE_FULL) return endpointMessages.storeFull;
  if (code === ERR_QUEUE_FULL) return queuedMessages.fullAnswer;
  if (code === REFUSED_INTERNAL) return endpointMessages.internalFailure;
  return endpointMessages.serviceUnreachable;
}

/**
 * The kit's own form of an error that is not yet one: a Redis at maxmemory refusing a write
 * (a store or a library that let its reply through) is `store_full`, never an internal error.
 */
export function namedFailure(error: unknown): unknown {
  return !isDeviceRiskError(error) && isRedisFull(error) ? redisFull('a write', error) : error;
}

export function failureAnswer(failure: unknown): Response {
  const error = namedFailure(failure);
  const status = isDeviceRiskError(error) ? error.status : undefined;
  const code = isDeviceRiskError(error) ? error.code : REFUSED_INTERNAL;
  if (isDeviceRiskError(error) && (error.code === ERR_INVALID_CONFIGURATION || error.code === ERR_FORGED_ADDRESS)) {
    return refuse(500, code, endpointMessages.misconfigured);
  }
  // Permanent refusals: no Retry-After, and a 4xx so that the browser does not try again.
  if (code === ERR_INVALID_ACCOUNT_REQUEST) return refuse(422, code, endpointMessages.accountRequestRefused);
  if (code === ERR_WORKFLOW_EXPIRED) return refuse(410, code, endpointMessages.workflowExpired);
  if (code === ERR_REQUEST_REJECTED && status !== undefined && status >= 400 && status < 500 && status !== 429) {
    return refuse(status, code, endpointMessages.serviceRefused(status));
  }
  // Upstream trouble: tell the browser to try again later with the same key.
  const retryAfter = String(
    Math.min(isDeviceRiskError(error) && error.retryAfter !== undefined ? error.retryAfter : 2, 60),
  );
  if (code === ERR_IDEMPOTENCY_KEY_IN_USE) return inUse(1);
  return refuse(isUnavailable(error) ? 503 : 502, code, said(code), {
    'retry-after': retryAfter,
  });
}
