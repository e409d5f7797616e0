/**
 * Small pieces every handler of the kit shares: its JSON answers, reading a body within a
 * limit, and a client address in one form.
 */

import type { DeviceRiskErrorCode } from '../errors.js';
import { MESSAGE_PREFIX, httpMessages } from '../messages.js';

export const json = (body: unknown, status: number, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
  });

/**
 * Codes of the handlers' own refusals (a bad request, before any work). An answer's code is
 * one of these or a `DeviceRiskError` code; the browser and the integrator read them.
 */
export const REFUSED_METHOD = 'method_not_allowed';
export const REFUSED_SOURCE = 'source_not_allowed';
export const REFUSED_MEDIA_TYPE = 'unsupported_media_type';
export const REFUSED_BODY_TOO_LARGE = 'body_too_large';
/** The body did not arrive within its time limit (a client that trickles it, or stalls). */
export const REFUSED_BODY_TIMEOUT = 'body_timeout';
export const REFUSED_KEY_REUSED = 'idempotency_key_reused';
export const REFUSED_TOO_MANY_REPORTS = 'too_many_reports';
/** One caller address or one customer started more checkouts than its admission limit. */
export const REFUSED_TOO_MANY_CHECKOUTS = 'too_many_checkouts';
/** More callbacks the service has not yet vouched for than the handler takes at once. */
export const REFUSED_TOO_MANY_CALLBACKS = 'too_many_callbacks';
export const REFUSED_ORIGIN = 'origin_not_allowed';
export const REFUSED_INVALID_KEY = 'invalid_idempotency_key';
export const REFUSED_CUSTOMER_LOOKUP = 'customer_lookup_failed';
/** A failure of no kind the kit knows (a bug, or an integrator's function that threw). */
export const REFUSED_INTERNAL = 'internal_error';
export type RefusalCode =
  | typeof REFUSED_METHOD
  | typeof REFUSED_SOURCE
  | typeof REFUSED_MEDIA_TYPE
  | typeof REFUSED_BODY_TOO_LARGE
  | typeof REFUSED_BODY_TIMEOUT
  | typeof REFUSED_KEY_REUSED
  | typeof REFUSED_TOO_MANY_REPORTS
  | typeof REFUSED_TOO_MANY_CHECKOUTS
  | typeof REFUSED_TOO_MANY_CALLBACKS
  | typeof REFUSED_ORIGIN
  | typeof REFUSED_INVALID_KEY
  | typeof REFUSED_CUSTOMER_LOOKUP
  | typeof REFUSED_INTERNAL;

/** An error answer: `{ error: { code, message } }`. */
export const refuse = (
  status: number,
  code: RefusalCode | DeviceRiskErrorCode,
  message: string,
  headers: Record<string, string> = {},
) => json({ error: { code, message } }, status, headers);

/**
 * How long a request body may take to arrive, in ms, from the first read to the last byte.
 * The kit's bodies are small (16 KiB for the endpoint and callbacks, 64 KiB for the proxy):
 * 10 s asks a client for less than 7 KB/s at the largest, which a slow mobile link sends
 * many times over, while a client that trickles a byte at a time is cut after 10 s instead of
 * holding a connection (and its handler) for as long as it likes. The same figure as the
 * proxy's collector limit and the doctor's per-request limit.
 */
export const BODY_TIMEOUT_MS = 10_000;

/**
 * A body that did not arrive within its time limit. Thrown by `readCapped` and `readLimited`;
 * `toNodeHandler` and the proxy answer it with 408 `body_timeout` (`bodyTimedOut`).
 */
export class BodyTimeoutError extends Error {
  override readonly name = 'BodyTimeoutError';
  readonly code = REFUSED_BODY_TIMEOUT;
  readonly status = 408;
  constructor(readonly timeoutMs: number) {
    super(MESSAGE_PREFIX + httpMessages.bodyTimeout(timeoutMs));
  }
}

/** Whether `error` is a `BodyTimeoutError`, from this copy of the kit or another (a second bundle). */
export function isBodyTimeout(error: unknown): error is BodyTimeoutError {
  return (
    error instanceof BodyTimeoutError ||
    (error instanceof Error &&
      error.name === 'BodyTimeoutError' &&
      (error as { code?: unknown }).code === REFUSED_BODY_TIMEOUT)
  );
}

/**
 * The answer to a body that took too long: 408, and the connection closed once it is sent
 * (what is left of the body is not waited for).
 */
export const bodyTimedOut = (error: BodyTimeoutError) =>
  refuse(408, REFUSED_BODY_TIMEOUT, httpMessages.bodyTimeoutAnswer(error.timeoutMs), { connection: 'close' });

/**
 * Reads at most `limit` bytes of a body; undefined when it is larger (by Content-Length or by
 * counting). Rejects with `BodyTimeoutError` when the whole body has not arrived within
 * `timeoutMs`, or with the signal's reason when `signal` aborts first; either way the body is
 * cancelled.
 */
export async function readCapped(
  request: Pick<Request, 'headers' | 'body'>,
  limit: number,
  timeoutMs = BODY_TIMEOUT_MS,
  signal?: AbortSignal,
): Promise<Uint8Array<ArrayBuffer> | undefined> {
  if (Number(request.headers.get('content-length') ?? 0) > limit) return undefined;
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  // Settles when the time is up or the signal aborts; raced against every read. The body is
  // cancelled without waiting: a stalled source (Node's request stream) settles its cancel
  // only with its next chunk, which may never come.
  const stopped = new Promise<never>((_, reject) => {
    const stop = (reason: unknown) => {
      reject(reason); // first: the cancel ends a pending read, which must not win the race
      void reader.cancel(reason).catch(() => {});
    };
    // Node's setTimeout accepts at most 2^31-1 ms; a longer one would fire after 1 ms.
    timer = setTimeout(() => stop(new BodyTimeoutError(timeoutMs)), Math.min(Math.max(0, timeoutMs), 2 ** 31 - 1));
    if (signal?.aborted) stop(signal.reason);
    onAbort = () => stop(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
  stopped.catch(() => {}); // unobserved once the body is read
  try {
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await Promise.race([stopped, reader.read()]);
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        // Not waited for, as above; a tee's branch (a Response's clone) settles only with the other.
        void reader.cancel().catch(() => {});
        return undefined;
      }
      chunks.push(value);
    }
    const out = new Uint8Array(size);
    let offset = 0;
    for (const chunk of chunks) out.set(chunk, (offset += chunk.byteLength) - chunk.byteLength);
    return out;
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * Reads at most `limit` bytes as UTF-8 text; undefined when the body is larger. Rejects with
 * `BodyTimeoutError` after `timeoutMs` (default `BODY_TIMEOUT_MS`), as `readCapped` does.
 */
export async function readLimited(
  request: Pick<Request, 'headers' | 'body'>,
  limit: number,
  timeoutMs = BODY_TIMEOUT_MS,
): Promise<string | undefined> {
  const bytes = await readCapped(request, limit, timeoutMs);
  // TextDecoder, not Buffer: edge runtimes have none.
  return bytes && new TextDecoder().decode(bytes);
}

/** An IPv4 address as such, not in its IPv6-mapped form (`::ffff:192.0.2.1`, as Node's sockets give it). */
export const plainAddress = (address: string): string => address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
