/**
 * The headers that cross the first-party proxy, each way: named ones only, never a hop-by-hop
 * one, and on the way out the vendor's cookies and the client's address as the proxy knows it
 * (docs/proxy.md, "The contract of a first-party front").
 */
import { plainAddress } from '../net/http.js';
import type { RequestContext } from '../fetch-handler.js';
import { rewriteSetCookie, vendorCookies } from './cookies.js';
import type { ProxyConfig } from './options.js';
import {
  bytesDecoded,
  DYNAMIC_SCRIPT,
  DYNAMIC_SCRIPT_HEADERS,
  FORWARDED_REQUEST_HEADERS,
  RETURNED_RESPONSE_HEADERS,
} from './contract.js';

/** Hop-by-hop headers (RFC 9110 7.6.1): never forwarded in either direction. */
// Stryker disable ArrayDeclaration,StringLiteral: no allow-listed name is on this list; it keeps a hop-by-hop name added to an allow-list from crossing
const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];
// Stryker restore ArrayDeclaration,StringLiteral

/**
 * Reads the end-to-end headers of a received message: a hop-by-hop one (RFC 9110 7.6.1), of
 * the fixed list or named by the sender's Connection header, reads as absent. Every header
 * the proxy passes on is read through it, so none needs a check of its own.
 */
function endToEnd(received: Headers): (name: string) => string | null {
  // Stryker disable next-line StringLiteral: without a Connection header, whatever the fallback lists names no allow-listed header
  const listed = (received.get('connection') ?? '').split(',').map((name) => name.trim().toLowerCase());
  const hops = new Set([...HOP_BY_HOP, ...listed]);
  return (name) => (hops.has(name) ? null : received.get(name));
}

/** What the collector is sent: the named headers, the vendor's cookies, the forwarding trio. */
export function collectorRequestHeaders(
  request: Request,
  context: RequestContext | undefined,
  config: ProxyConfig,
  host: string,
): Headers {
  const headers = new Headers();
  const sent = endToEnd(request.headers);
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const value = sent(name);
    if (value !== null) headers.set(name, value);
  }
  const cookies = vendorCookies(sent('cookie'), config);
  if (cookies) headers.set('cookie', cookies);
  const peer = context?.clientAddress ? plainAddress(context.clientAddress) : undefined;
  const chain = config.trustProxy ? [sent('x-forwarded-for'), peer].filter(Boolean).join(', ') : peer;
  if (chain) headers.set('x-forwarded-for', chain);
  headers.set('x-forwarded-host', config.publicHost ?? host);
  // Behind a trusted front that ends TLS, the shopper's https, not the front's plain hop.
  headers.set('x-forwarded-proto', context?.clientProto ?? new URL(request.url).protocol.replace(':', ''));
  return headers;
}

/** What the browser gets of the collector's headers, with the proxy's own caching and CSP. */
export function browserResponseHeaders(response: Response, config: ProxyConfig, target: URL): Headers {
  const out = new Headers();
  const answered = endToEnd(response.headers);
  for (const name of RETURNED_RESPONSE_HEADERS) {
    const value = answered(name);
    if (value !== null) out.set(name, value);
  }
  // Set-Cookie is the one header that cannot be read as one line: asked only whether it is end-to-end.
  // Stryker disable next-line ArrayDeclaration: a line without "=" is dropped by the rewrite anyway
  for (const cookie of answered('set-cookie') === null ? [] : response.headers.getSetCookie()) {
    const rewritten = rewriteSetCookie(cookie, config);
    if (rewritten) out.append('set-cookie', rewritten);
  }
  // The dynamic script embeds per-request values: no browser or CDN may keep it.
  // Whatever follows its name, in any case or encoding (the contract, DYNAMIC_SCRIPT).
  if (DYNAMIC_SCRIPT.test(bytesDecoded(target.pathname))) {
    for (const [name, value] of Object.entries(DYNAMIC_SCRIPT_HEADERS)) out.set(name, value);
  }
  // Scripts load as they are; opened as a page, an answer can run nothing on this origin.
  out.set('content-security-policy', "sandbox; default-src 'none'");
  return out;
}
