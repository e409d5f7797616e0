/**
 * Small pieces every handler of the kit shares: its JSON answers, reading a body within a
 * limit, and a client address in one form.
 */

import type { DeviceRiskErrorCode } from './errors.js';

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

/** Reads at most `limit` bytes of a body; undefined when it is larger (by Content-Length or by counting). */
export async function readCapped(request: Request, limit: number): Promise<Uint8Array<ArrayBuffer> | undefined> {
  if (Number(request.headers.get('content-length') ?? 0) > limit) return undefined;
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) out.set(chunk, (offset += chunk.byteLength) - chunk.byteLength);
  return out;
}

/** Reads at most `limit` bytes as UTF-8 text; undefined when the body is larger. */
export async function readLimited(request: Request, limit: number): Promise<string | undefined> {
  const bytes = await readCapped(request, limit);
  // TextDecoder, not Buffer: edge runtimes have none.
  return bytes && new TextDecoder().decode(bytes);
}

/** An IPv4 address as such, not in its IPv6-mapped form (`::ffff:192.0.2.1`, as Node's sockets give it). */
export const plainAddress = (address: string): string => address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
