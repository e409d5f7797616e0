/**
 * The Order-Token (docs/gateway.md#the-order-token): an HS256 JWT the shop's back end signs
 * with ORDER_SECRET, naming the order (`sub`: its customerInternalReference, `uref`: its
 * userReference) for at most an hour (`exp`). Checked with WebCrypto (`crypto.subtle.verify`
 * compares the MAC in constant time), no dependency; a refusal has a stable code.
 */
import { referenceRuleBroken } from '../server/parts.js';

export const ORDER_TOKEN_HEADER = 'order-token';
/** The longest an order token may live ahead of now, in seconds. */
export const MAX_ORDER_TOKEN_SECONDS = 3600;
/** Clock skew allowed between the shop's back end and the gateway, in seconds. */
const SKEW_SECONDS = 60;
/** The service's limit on customerInternalReference and userReference (docs/vendor-contract.md). */
const MAX_REFERENCE_LENGTH = 100;

/**
 * The HTTP status of a refused Order-Token: 422 for an authentic token whose order the service
 * would refuse (`sub`: no retry with it can succeed), 401 for a token that proves nothing.
 */
export const orderTokenStatus = (code: OrderTokenCode): number => (code === 'order_token_sub_invalid' ? 422 : 401);

export const ORDER_TOKEN_CODES = [
  'order_token_missing',
  'order_token_invalid',
  'order_token_expired',
  'order_token_sub_invalid',
] as const;
export type OrderTokenCode = (typeof ORDER_TOKEN_CODES)[number];

export class OrderTokenError extends Error {
  constructor(
    readonly code: OrderTokenCode,
    message: string,
  ) {
    super(message);
    this.name = 'OrderTokenError';
  }
}

export interface Order {
  customerInternalReference: string;
  userReference?: string;
}

const textEncoder = new TextEncoder();

/** The HMAC key of ORDER_SECRET, made once. */
export function orderKey(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey('raw', textEncoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
    'verify',
  ]);
}

const fromBase64Url = (text: string): Uint8Array<ArrayBuffer> | undefined => {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined;
  const padded = text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4);
  try {
    return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
};

const invalid = (why: string) => new OrderTokenError('order_token_invalid', `the Order-Token ${why}`);

/** The order a token names; throws OrderTokenError when it is missing, forged, malformed or expired. */
export async function verifyOrderToken(
  token: string | null,
  key: CryptoKey,
  nowSeconds = Math.floor(Date.now() / 1000),
): Promise<Order> {
  if (!token) throw new OrderTokenError('order_token_missing', 'the request has no Order-Token header');
  const parts = token.split('.');
  if (parts.length !== 3) throw invalid('is not a JWT (three base64url parts)');
  const [head, body, mac] = parts as [string, string, string];
  const header = json(fromBase64Url(head));
  if (header?.alg !== 'HS256' || (header.typ !== undefined && header.typ !== 'JWT')) throw invalid('must be HS256');
  const signature = fromBase64Url(mac);
  if (!signature || !(await crypto.subtle.verify('HMAC', key, signature, textEncoder.encode(`${head}.${body}`))))
    throw invalid('has a bad signature');
  const claims = json(fromBase64Url(body));
  if (!claims) throw invalid('has no JSON claims');
  const { sub, uref, exp, nbf } = claims;
  if (typeof exp !== 'number' || !Number.isFinite(exp)) throw invalid('has no exp');
  if (exp <= nowSeconds) throw new OrderTokenError('order_token_expired', 'the Order-Token has expired');
  if (exp > nowSeconds + MAX_ORDER_TOKEN_SECONDS + SKEW_SECONDS)
    throw invalid(`expires more than ${MAX_ORDER_TOKEN_SECONDS} s ahead`);
  if (typeof nbf === 'number' && nbf > nowSeconds + SKEW_SECONDS) throw invalid('is not valid yet (nbf)');
  if (typeof sub !== 'string') throw invalid("sub must be the order's reference");
  // The service's own rule, the kit's one check of it: an order it would refuse is refused here.
  const broken = referenceRuleBroken({ customerInternalReference: sub });
  if (broken) throw new OrderTokenError('order_token_sub_invalid', `the Order-Token's sub: ${broken}`);
  // The same rule for the userReference (a malformed token, as documented), and never empty.
  if (
    uref !== undefined &&
    // Stryker disable next-line ConditionalExpression: referenceRuleBroken refuses a uref that is no string too; this narrows its type
    (typeof uref !== 'string' ||
      uref === '' ||
      referenceRuleBroken({ customerInternalReference: sub, userReference: uref }))
  )
    throw invalid(`uref must be 1 to ${MAX_REFERENCE_LENGTH} UTF-16 code units of text`);
  // The gateway's own: a URL path reads "." and ".." as steps (GET /decisions/{reference} could never find it).
  if (sub === '.' || sub === '..')
    throw new OrderTokenError(
      'order_token_sub_invalid',
      `the Order-Token's sub: "${sub}" is no order's reference in a URL path`,
    );
  return { customerInternalReference: sub, ...(uref === undefined ? {} : { userReference: uref }) };
}

function json(bytes: Uint8Array | undefined): Record<string, unknown> | undefined {
  if (!bytes) return undefined;
  try {
    const value: unknown = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Mints an order token (tests, and the docs' Node example): what a shop's back end does in any language. */
export async function mintOrderToken(
  secret: string,
  order: Order,
  lifetimeSeconds = 600,
  nowSeconds = Math.floor(Date.now() / 1000),
): Promise<string> {
  const encode = (bytes: Uint8Array) =>
    btoa(String.fromCharCode(...bytes))
      .replace(/\+/g, '-')
      .replace(/\//g, '_')
      .replace(/=+$/, '');
  const part = (value: object) => encode(textEncoder.encode(JSON.stringify(value)));
  const unsigned = `${part({ alg: 'HS256', typ: 'JWT' })}.${part({
    sub: order.customerInternalReference,
    ...(order.userReference ? { uref: order.userReference } : {}),
    exp: nowSeconds + lifetimeSeconds,
  })}`;
  const mac = await crypto.subtle.sign('HMAC', await orderKey(secret), textEncoder.encode(unsigned));
  return `${unsigned}.${encode(new Uint8Array(mac))}`;
}
