/**
 * Errors of the server kit. They carry a stable `code`, the HTTP status when an
 * upstream answered, and never a secret: messages are built from fixed text,
 * status codes and the service's problem title, and `toJSON` drops `cause`.
 */
import { MESSAGE_PREFIX } from './messages.js';

export const ERR_INVALID_CONFIGURATION = 'invalid_configuration';
export const ERR_INSECURE_URL = 'insecure_url';
export const ERR_TOKEN_REJECTED = 'token_rejected';
export const ERR_RATE_LIMITED = 'rate_limited';
export const ERR_UPSTREAM = 'upstream_error';
export const ERR_NETWORK = 'network_error';
export const ERR_INVALID_RESPONSE = 'invalid_response';
export const ERR_NO_DEVICE_RISK_CREDENTIAL = 'no_device_risk_credential';
export const ERR_FORGED_ADDRESS = 'forged_address';
export const ERR_TRANSACTION_TOKEN_EXPIRED = 'transaction_token_expired';
export const ERR_INVALID_BLACKBOX = 'invalid_blackbox';
export const ERR_REQUEST_REJECTED = 'request_rejected';
export const ERR_INVALID_ACCOUNT_REQUEST = 'invalid_account_request';
export const ERR_WORKFLOW_EXPIRED = 'workflow_expired';
export const ERR_RESULT_NOT_READY = 'result_not_ready';
export const ERR_RESULT_UNDELIVERED = 'result_undelivered';
export const ERR_INVALID_CALLBACK = 'invalid_callback';
export const ERR_CALLBACK_REFUSED = 'callback_refused';
export const ERR_ABORTED = 'aborted';
export const ERR_STORE_UNAVAILABLE = 'store_unavailable';
export const ERR_STORE_FULL = 'store_full';
export const ERR_ORPHANED_TRANSACTION = 'orphaned_transaction';
export const ERR_IDEMPOTENCY_KEY_IN_USE = 'idempotency_key_in_use';
export const ERR_BLACKBOX_DAMAGED = 'blackbox_damaged';
export const ERR_NONCE_MISSING = 'nonce_missing';
export const ERR_NONCE_INVALID = 'nonce_invalid';
export const ERR_NONCE_EXPIRED = 'nonce_expired';
export const ERR_NONCE_REUSED = 'nonce_reused';
export const ERR_UNKNOWN_EXECUTION = 'unknown_execution';
export const ERR_RESULT_HANDLER_TIMEOUT = 'result_handler_timeout';
export const ERR_QUEUE_FULL = 'queue_full';
export const ERR_BLACKBOX_STALE = 'blackbox_stale';
/** A blackbox already used for another Idempotency-Key: one collection, one transaction (src/server/endpoint/reuse.ts). */
export const ERR_BLACKBOX_REUSED = 'blackbox_reused';
export const ERR_BACKLOG_BEHIND = 'backlog_behind';
/** The handler is closing (`close()`): it takes no new checkout; the browser posts again, to another instance. */
export const ERR_SHUTTING_DOWN = 'shutting_down';
/** An accepted checkout its instance's memory queue held and did not check before `close()`: never checked. */
export const ERR_NOT_CHECKED = 'not_checked';

export type DeviceRiskErrorCode =
  | typeof ERR_INVALID_CONFIGURATION
  | typeof ERR_INSECURE_URL
  | typeof ERR_TOKEN_REJECTED
  | typeof ERR_RATE_LIMITED
  | typeof ERR_UPSTREAM
  | typeof ERR_NETWORK
  | typeof ERR_INVALID_RESPONSE
  | typeof ERR_NO_DEVICE_RISK_CREDENTIAL
  | typeof ERR_FORGED_ADDRESS
  | typeof ERR_TRANSACTION_TOKEN_EXPIRED
  | typeof ERR_INVALID_BLACKBOX
  | typeof ERR_REQUEST_REJECTED
  | typeof ERR_INVALID_ACCOUNT_REQUEST
  | typeof ERR_WORKFLOW_EXPIRED
  | typeof ERR_RESULT_NOT_READY
  | typeof ERR_RESULT_UNDELIVERED
  | typeof ERR_INVALID_CALLBACK
  | typeof ERR_CALLBACK_REFUSED
  | typeof ERR_ABORTED
  | typeof ERR_STORE_UNAVAILABLE
  | typeof ERR_STORE_FULL
  | typeof ERR_ORPHANED_TRANSACTION
  | typeof ERR_IDEMPOTENCY_KEY_IN_USE
  | typeof ERR_BLACKBOX_DAMAGED
  | typeof ERR_NONCE_MISSING
  | typeof ERR_NONCE_INVALID
  | typeof ERR_NONCE_EXPIRED
  | typeof ERR_NONCE_REUSED
  | typeof ERR_UNKNOWN_EXECUTION
  | typeof ERR_RESULT_HANDLER_TIMEOUT
  | typeof ERR_QUEUE_FULL
  | typeof ERR_BLACKBOX_STALE
  | typeof ERR_BLACKBOX_REUSED
  | typeof ERR_BACKLOG_BEHIND
  | typeof ERR_SHUTTING_DOWN
  | typeof ERR_NOT_CHECKED;

export class DeviceRiskError extends Error {
  override readonly name = 'DeviceRiskError';
  readonly code: DeviceRiskErrorCode;
  /** HTTP status of the upstream answer, when there was one. */
  readonly status?: number;
  /** Seconds the upstream asked to wait (Retry-After), when it did. */
  readonly retryAfter?: number;
  /** The call that failed, e.g. "token", "account create", "upload". */
  readonly operation?: string;

  constructor(
    code: DeviceRiskErrorCode,
    message: string,
    details: { status?: number; retryAfter?: number; operation?: string; cause?: unknown } = {},
  ) {
    super(MESSAGE_PREFIX + message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    if (details.status !== undefined) this.status = details.status;
    if (details.retryAfter !== undefined) this.retryAfter = details.retryAfter;
    if (details.operation !== undefined) this.operation = details.operation;
  }

  /** Serialises without `cause` or anything an upstream sent beyond its status. */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      status: this.status,
      retryAfter: this.retryAfter,
      operation: this.operation,
    };
  }
}

export function isDeviceRiskError(error: unknown): error is DeviceRiskError {
  return (
    error instanceof DeviceRiskError ||
    (error instanceof Error &&
      error.name === 'DeviceRiskError' &&
      typeof (error as { code?: unknown }).code === 'string')
  );
}

/**
 * True when a Redis at its `maxmemory` (policy noeviction) refused a write: node-redis and
 * ioredis reject with the server's error reply, whose message starts "OOM command not allowed
 * when used memory > 'maxmemory'" (in a script, with the script's name after it). Looked for
 * in the error and its causes, so that a client or library wrapping it is still recognised.
 */
export function isRedisFull(error: unknown): boolean {
  for (let at = error, depth = 0; at instanceof Error && depth < 5; at = at.cause, depth++) {
    if (/^(?:\S+: )?OOM command not allowed\b/.test(at.message)) return true;
  }
  return false;
}

/**
 * The handlers' `onError` when none is given: one line on the console, so that a failure is
 * never silent. A DeviceRiskError's message never holds a secret; other errors are your own.
 */
export function logError(error: unknown): void {
  // A body cut for time (http.ts, BodyTimeoutError) is a refusal like the others: one line, no stack.
  const refusal = error instanceof Error && error.name === 'BodyTimeoutError';
  console.error(isDeviceRiskError(error) || refusal ? `${error.message} (${(error as { code: string }).code})` : error);
}
