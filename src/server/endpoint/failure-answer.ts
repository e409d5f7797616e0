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
  ERR_RATE_LIMITED,
  ERR_REQUEST_REJECTED,
  ERR_STORE_FULL,
  ERR_STORE_UNAVAILABLE,
  isDeviceRiskError,
} from '../errors.js';
import { endpointMessages } from '../messages.js';
import { REFUSED_INTERNAL, refuse } from '../http.js';
import { inUse } from './idempotency.js';

/** True when retrying the same check can never succeed: the service or the configuration refuses it. */
export function isPermanent(error: unknown): boolean {
  if (!isDeviceRiskError(error)) return false;
  if (error.code === ERR_INVALID_CONFIGURATION || error.code === ERR_FORGED_ADDRESS) return true;
  if (error.code === ERR_INVALID_ACCOUNT_REQUEST) return true;
  const status = error.status;
  return error.code === ERR_REQUEST_REJECTED && status !== undefined && status >= 400 && status < 500 && status !== 429;
}

/** True when the service (or the store) asks for time: a 429 or 503, a network failure, a store away or full. */
export function isUnavailable(error: unknown): boolean {
  if (!isDeviceRiskError(error)) return false;
  const { status, code } = error;
  return (
    status === 429 ||
    status === 503 ||
    code === ERR_NETWORK ||
    code === ERR_RATE_LIMITED ||
    code === ERR_STORE_UNAVAILABLE ||
    code === ERR_STORE_FULL
  );
}

export function failureAnswer(error: unknown): Response {
  const status = isDeviceRiskError(error) ? error.status : undefined;
  const code = isDeviceRiskError(error) ? error.code : REFUSED_INTERNAL;
  if (isDeviceRiskError(error) && (error.code === ERR_INVALID_CONFIGURATION || error.code === ERR_FORGED_ADDRESS)) {
    return refuse(500, code, endpointMessages.misconfigured);
  }
  // Permanent refusals: no Retry-After, and a 4xx so that the browser does not try again.
  if (code === ERR_INVALID_ACCOUNT_REQUEST) return refuse(422, code, endpointMessages.accountRequestRefused);
  if (code === ERR_REQUEST_REJECTED && status !== undefined && status >= 400 && status < 500 && status !== 429) {
    return refuse(status, code, endpointMessages.serviceRefused(status));
  }
  // Upstream trouble: tell the browser to try again later with the same key.
  const retryAfter = String(
    Math.min(isDeviceRiskError(error) && error.retryAfter !== undefined ? error.retryAfter : 2, 60),
  );
  if (code === ERR_IDEMPOTENCY_KEY_IN_USE) return inUse(1);
  return refuse(isUnavailable(error) ? 503 : 502, code, endpointMessages.serviceUnreachable, {
    'retry-after': retryAfter,
  });
}
