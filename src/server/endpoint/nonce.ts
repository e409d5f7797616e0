/**
 * Replay protection, as defence in depth (not the vendor's own check): a short-lived nonce
 * the server issues for one customer or session, signed with HMAC-SHA-256 (Web Crypto).
 * The page sends it with the blackbox; the endpoint refuses a blackbox without one, with a
 * forged or expired one, or with one already used (an atomic claim in the shared store, so
 * this holds across a fleet). A blackbox captured on a clean device cannot then be replayed
 * into many orders through this endpoint.
 *
 * Format: `v1.<expiry, base 36 ms>.<random id>.<signature>`, all URL-safe; the subject is
 * signed, not carried.
 */
import { systemNow } from '../time/clock.js';
import { DeviceRiskError, ERR_INVALID_CONFIGURATION, ERR_NONCE_EXPIRED, ERR_NONCE_INVALID } from '../errors.js';
import { endpointMessages } from '../messages.js';

export interface CaptureNonceOptions {
  /** At least 32 characters; the same on every instance. Keep it apart from the client secret. */
  secret: string;
  /** What the nonce is bound to: your customer reference or session id (the endpoint checks it against `customerInternalReference` by default). */
  subject: string;
  /** Lifetime in ms. Default 15 minutes (the vendor's session timeout). */
  ttlMs?: number;
  now?: () => number;
}

const encoder = new TextEncoder();
const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    // Stryker disable next-line Regex: base64 has its padding at the end only
    .replace(/=+$/, '');

const keys = new Map<string, Promise<CryptoKey>>();
function hmacKey(secret: string): Promise<CryptoKey> {
  if (typeof secret !== 'string' || secret.length < 32)
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, endpointMessages.nonceSecret);
  let key = keys.get(secret);
  // Stryker disable next-line ConditionalExpression: the cache saves an import per nonce; a key imported again is the same key
  if (!key) {
    // Stryker disable next-line BooleanLiteral: the key never leaves this module, so whether it could be exported is seen nowhere
    key = crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
      'sign',
      'verify',
    ]);
    keys.set(secret, key);
  }
  return key;
}

const signed = (version: string, expiry: string, id: string, subject: string) =>
  encoder.encode(`${version}.${expiry}.${id}\n${subject}`);

/** Issues a nonce for one capture of `subject`'s blackbox. */
export async function createCaptureNonce(options: CaptureNonceOptions): Promise<string> {
  const key = await hmacKey(options.secret);
  const expiry = ((options.now ?? systemNow)() + (options.ttlMs ?? 15 * 60_000)).toString(36);
  const id = base64url(crypto.getRandomValues(new Uint8Array(16)));
  const signature = base64url(
    new Uint8Array(await crypto.subtle.sign('HMAC', key, signed('v1', expiry, id, options.subject))),
  );
  return `v1.${expiry}.${id}.${signature}`;
}

export interface VerifiedNonce {
  /** The nonce's random id: what a store claims so that it is used once. */
  id: string;
  /** Epoch ms when it stops being accepted. */
  expiresAt: number;
}

/** Checks a nonce's signature for `subject`, then its expiry; throws `nonce_invalid` or `nonce_expired`. */
export async function verifyCaptureNonce(
  nonce: unknown,
  options: Omit<CaptureNonceOptions, 'ttlMs'>,
): Promise<VerifiedNonce> {
  const key = await hmacKey(options.secret);
  // Stryker disable next-line ConditionalExpression,EqualityOperator,ArrayDeclaration: a bound before any work; every longer value, and any part list but four, fails the shape checks below
  const parts = typeof nonce === 'string' && nonce.length <= 200 ? nonce.split('.') : [];
  // Stryker disable next-line StringLiteral: the defaults are read only past the check of four parts, which leaves none missing
  const [version, expiry = '', id = '', signature = ''] = parts;
  let valid = false;
  if (
    parts.length === 4 &&
    version === 'v1' &&
    /^[0-9a-z]{1,12}$/.test(expiry) &&
    /^[\w-]{22}$/.test(id) &&
    /^[\w-]{43}$/.test(signature)
  ) {
    const bytes = Uint8Array.from(atob(signature.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
    // crypto.subtle.verify compares in constant time.
    valid = await crypto.subtle.verify('HMAC', key, bytes, signed(version, expiry, id, options.subject));
  }
  if (!valid) throw new DeviceRiskError(ERR_NONCE_INVALID, endpointMessages.nonceInvalid);
  const expiresAt = parseInt(expiry, 36);
  if ((options.now ?? systemNow)() >= expiresAt)
    throw new DeviceRiskError(ERR_NONCE_EXPIRED, endpointMessages.nonceExpired);
  return { id, expiresAt };
}
