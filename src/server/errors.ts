/**
 * Errors of the server kit. They carry a stable `code`, the HTTP status when an
 * upstream answered, and never a secret: messages are built from fixed text,
 * status codes and the service's problem title, and `toJSON` drops `cause`.
 */
import { MESSAGE_PREFIX } from './messages.js';

/**
 * Every code of the kit's errors, by name: the one list. `DeviceRiskErrorCode` is its values,
 * and the `ERR_` constants the kit's modules import are read from it, so that a code renamed or
 * removed here fails the build wherever it is used (docs/server.md#errors).
 */
export const ERROR_CODES = {
  INVALID_CONFIGURATION: 'invalid_configuration',
  INSECURE_URL: 'insecure_url',
  TOKEN_REJECTED: 'token_rejected',
  RATE_LIMITED: 'rate_limited',
  UPSTREAM: 'upstream_error',
  NETWORK: 'network_error',
  INVALID_RESPONSE: 'invalid_response',
  NO_DEVICE_RISK_CREDENTIAL: 'no_device_risk_credential',
  FORGED_ADDRESS: 'forged_address',
  TRANSACTION_TOKEN_EXPIRED: 'transaction_token_expired',
  INVALID_BLACKBOX: 'invalid_blackbox',
  REQUEST_REJECTED: 'request_rejected',
  INVALID_ACCOUNT_REQUEST: 'invalid_account_request',
  WORKFLOW_EXPIRED: 'workflow_expired',
  RESULT_NOT_READY: 'result_not_ready',
  RESULT_UNDELIVERED: 'result_undelivered',
  INVALID_CALLBACK: 'invalid_callback',
  CALLBACK_REFUSED: 'callback_refused',
  ABORTED: 'aborted',
  STORE_UNAVAILABLE: 'store_unavailable',
  STORE_FULL: 'store_full',
  ORPHANED_TRANSACTION: 'orphaned_transaction',
  IDEMPOTENCY_KEY_IN_USE: 'idempotency_key_in_use',
  BLACKBOX_DAMAGED: 'blackbox_damaged',
  NONCE_MISSING: 'nonce_missing',
  NONCE_INVALID: 'nonce_invalid',
  NONCE_EXPIRED: 'nonce_expired',
  NONCE_REUSED: 'nonce_reused',
  UNKNOWN_EXECUTION: 'unknown_execution',
  RESULT_HANDLER_TIMEOUT: 'result_handler_timeout',
  QUEUE_FULL: 'queue_full',
  BLACKBOX_STALE: 'blackbox_stale',
  /** A blackbox already used for another Idempotency-Key: one collection, one transaction (src/server/endpoint/reuse.ts). */
  BLACKBOX_REUSED: 'blackbox_reused',
  BACKLOG_BEHIND: 'backlog_behind',
  /** The handler is closing (`close()`): it takes no new checkout; the browser posts again, to another instance. */
  SHUTTING_DOWN: 'shutting_down',
  /** An accepted checkout its instance's memory queue held and did not check before `close()`: never checked. */
  NOT_CHECKED: 'not_checked',
} as const;

/** A code of the kit's errors: one of ERROR_CODES' values. */
export type DeviceRiskErrorCode = (typeof ERROR_CODES)[keyof typeof ERROR_CODES];

// The kit's own names for the codes, each read from ERROR_CODES (not exported by the package).
export const ERR_INVALID_CONFIGURATION = ERROR_CODES.INVALID_CONFIGURATION;
export const ERR_INSECURE_URL = ERROR_CODES.INSECURE_URL;
export const ERR_TOKEN_REJECTED = ERROR_CODES.TOKEN_REJECTED;
export const ERR_RATE_LIMITED = ERROR_CODES.RATE_LIMITED;
export const ERR_UPSTREAM = ERROR_CODES.UPSTREAM;
export const ERR_NETWORK = ERROR_CODES.NETWORK;
export const ERR_INVALID_RESPONSE = ERROR_CODES.INVALID_RESPONSE;
export const ERR_NO_DEVICE_RISK_CREDENTIAL = ERROR_CODES.NO_DEVICE_RISK_CREDENTIAL;
export const ERR_FORGED_ADDRESS = ERROR_CODES.FORGED_ADDRESS;
export const ERR_TRANSACTION_TOKEN_EXPIRED = ERROR_CODES.TRANSACTION_TOKEN_EXPIRED;
export const ERR_INVALID_BLACKBOX = ERROR_CODES.INVALID_BLACKBOX;
export const ERR_REQUEST_REJECTED = ERROR_CODES.REQUEST_REJECTED;
export const ERR_INVALID_ACCOUNT_REQUEST = ERROR_CODES.INVALID_ACCOUNT_REQUEST;
export const ERR_WORKFLOW_EXPIRED = ERROR_CODES.WORKFLOW_EXPIRED;
export const ERR_RESULT_NOT_READY = ERROR_CODES.RESULT_NOT_READY;
export const ERR_RESULT_UNDELIVERED = ERROR_CODES.RESULT_UNDELIVERED;
export const ERR_INVALID_CALLBACK = ERROR_CODES.INVALID_CALLBACK;
export const ERR_CALLBACK_REFUSED = ERROR_CODES.CALLBACK_REFUSED;
export const ERR_ABORTED = ERROR_CODES.ABORTED;
export const ERR_STORE_UNAVAILABLE = ERROR_CODES.STORE_UNAVAILABLE;
export const ERR_STORE_FULL = ERROR_CODES.STORE_FULL;
export const ERR_ORPHANED_TRANSACTION = ERROR_CODES.ORPHANED_TRANSACTION;
export const ERR_IDEMPOTENCY_KEY_IN_USE = ERROR_CODES.IDEMPOTENCY_KEY_IN_USE;
export const ERR_BLACKBOX_DAMAGED = ERROR_CODES.BLACKBOX_DAMAGED;
export const ERR_NONCE_MISSING = ERROR_CODES.NONCE_MISSING;
export const ERR_NONCE_INVALID = ERROR_CODES.NONCE_INVALID;
export const ERR_NONCE_EXPIRED = ERROR_CODES.NONCE_EXPIRED;
export const ERR_NONCE_REUSED = ERROR_CODES.NONCE_REUSED;
export const ERR_UNKNOWN_EXECUTION = ERROR_CODES.UNKNOWN_EXECUTION;
export const ERR_RESULT_HANDLER_TIMEOUT = ERROR_CODES.RESULT_HANDLER_TIMEOUT;
export const ERR_QUEUE_FULL = ERROR_CODES.QUEUE_FULL;
export const ERR_BLACKBOX_STALE = ERROR_CODES.BLACKBOX_STALE;
export const ERR_BLACKBOX_REUSED = ERROR_CODES.BLACKBOX_REUSED;
export const ERR_BACKLOG_BEHIND = ERROR_CODES.BACKLOG_BEHIND;
export const ERR_SHUTTING_DOWN = ERROR_CODES.SHUTTING_DOWN;
export const ERR_NOT_CHECKED = ERROR_CODES.NOT_CHECKED;

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
 * True for a store away for a while (`store_unavailable`: down, slow past its limit) or full
 * (`store_full`): a failure that passes, answered 503 with a Retry-After, never a permanent one.
 */
export const isStoreAway = (error: unknown): error is DeviceRiskError =>
  isDeviceRiskError(error) && (error.code === ERR_STORE_UNAVAILABLE || error.code === ERR_STORE_FULL);

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

/**
 * An integrator's `onError`, made safe for the kit's own work: an exception it throws, or a
 * rejection of the promise it returns, is logged (logError) and never thrown back into the
 * kit's tasks, where it would be reported again or left unhandled. What it returned is
 * returned, a throw as a rejected promise (marked handled), for the caller that waits for it
 * (a callback's give-up: docs/answer.md).
 */
export function safeOnError<T = unknown>(onError: (value: T) => unknown): (value: T) => unknown {
  return (error) => {
    let returned: unknown;
    try {
      returned = onError(error);
    } catch (thrown) {
      logError(thrown);
      const rejected = Promise.reject(thrown);
      rejected.catch(() => {});
      return rejected;
    }
    if (typeof (returned as PromiseLike<unknown> | undefined)?.then === 'function')
      (returned as PromiseLike<unknown>).then(undefined, logError);
    return returned;
  };
}

/** The `onError` a part of the kit calls: the integrator's, made safe (safeOnError), or one line logged (logError). */
export const onErrorOf = (onError?: (error: unknown) => unknown): ((error: unknown) => unknown) =>
  onError ? safeOnError(onError) : logError;
