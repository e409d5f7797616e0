// The hostile side of the first-party front contract (src/server/proxy/contract.ts holds what
// may cross): what a client writes that must never reach the vendor, what a hostile or
// compromised collector answers that must never reach the shopper, and the paths no front
// forwards. The conformance suite (front-conformance.ts) sends each through every front.
import { randomBytes } from 'node:crypto';
import {
  FORWARDED_REQUEST_HEADERS,
  FRONT_REQUEST_HEADERS,
  FRONT_RESPONSE_HEADERS,
  RETURNED_RESPONSE_HEADERS,
} from '../../src/server/proxy/contract.js';

/**
 * Headers a client sets to name its own address, route or protocol (issue 57, item 4): a vendor
 * reading any of them would see the address the fraudster chose. Every front drops each.
 */
export const CLIENT_SET_HEADERS: Record<string, string> = {
  'x-real-ip': '6.6.6.1',
  forwarded: 'for=6.6.6.2;proto=https',
  'true-client-ip': '6.6.6.3',
  'cf-connecting-ip': '6.6.6.4',
  'x-client-ip': '6.6.6.5',
  'x-cluster-client-ip': '6.6.6.6',
  'fastly-client-ip': '6.6.6.7',
  'client-ip': '6.6.6.8',
  'x-forwarded-port': '6666',
  'x-forwarded-server': 'spoofed.example',
  'x-forwarded-prefix': '/spoofed',
  'x-original-url': '/admin',
  'x-rewrite-url': '/admin',
  'x-original-forwarded-for': '6.6.6.9',
  'x-http-method-override': 'DELETE',
  cookie2: '$Version="1"',
  via: '1.1 spoofed.example',
  upgrade: 'websocket',
  te: 'trailers',
};

/** A header of no standard, which only an allow-list keeps from crossing. */
export const UNKNOWN_HEADER = ['x-shop-internal', 'kept-by-an-allow-list'] as const;

/**
 * What a hostile collector answers (issue 57, item 3): each acts on the shop's whole origin
 * if it reaches the shopper. No front passes any of them on.
 */
export const HOSTILE_ANSWER_HEADERS: Record<string, string> = {
  location: 'https://evil.example/phish',
  refresh: '0; url=https://evil.example/phish',
  link: '<https://evil.example/x.js>; rel=preload; as=script',
  'clear-site-data': '"cookies", "storage"',
  'strict-transport-security': 'max-age=63072000; includeSubDomains; preload',
  nel: '{"report_to":"evil","max_age":31536000,"include_subdomains":true}',
  'report-to': '{"group":"evil","max_age":31536000,"endpoints":[{"url":"https://evil.example/r"}]}',
  'reporting-endpoints': 'evil="https://evil.example/r"',
  'access-control-allow-origin': 'https://evil.example',
  'access-control-allow-credentials': 'true',
  'access-control-allow-headers': '*',
  'access-control-expose-headers': '*',
  'service-worker-allowed': '/',
  'x-frame-options': 'ALLOWALL',
  'alt-svc': 'h3=":443"; ma=31536000',
  'permissions-policy': 'camera=*',
  'cross-origin-opener-policy': 'unsafe-none',
  'cross-origin-resource-policy': 'cross-origin',
  'origin-agent-cluster': '?0',
  'timing-allow-origin': '*',
  'content-location': 'https://evil.example/',
  'content-disposition': 'attachment; filename=invoice.html',
  'content-security-policy-report-only': "default-src 'none'; report-uri https://evil.example/r",
  'www-authenticate': 'Basic realm="shop"',
  'server-timing': 'evil;desc="x"',
  'accept-ch': 'Sec-CH-UA-Full-Version-List',
  sourcemap: 'https://evil.example/map',
  'x-sourcemap': 'https://evil.example/map',
  'x-dns-prefetch-control': 'on',
  'x-xss-protection': '0',
};

/** A header name no list of any front can know: new on every run. */
const invented = (prefix: string) => `${prefix}${randomBytes(4).toString('hex')}`;

/**
 * Headers a collector may start sending tomorrow (issue 57: answers by allow-list), each its own
 * case: only a front that keeps the contract's list and drops every other name holds them all.
 * Some are named by the deny-lists the recipes had; the invented ones are named by nobody.
 */
export const INVENTED_ANSWER_HEADERS: Record<string, string | string[]> = {
  // On two lines: a filter must drop every line of a name, not the first.
  'x-evil-new': ['1', '2'],
  [invented('x-evil-')]: '1',
  [invented('evil-')]: '1',
  'permissions-policy': 'camera=*, microphone=*',
  'cross-origin-opener-policy': 'unsafe-none',
  'origin-agent-cluster': '?0',
  'critical-ch': 'Sec-CH-UA-Full-Version-List',
  'accept-ch': 'Sec-CH-UA-Full-Version-List',
  'supports-loading-mode': 'credentialed-prerender',
  'speculation-rules': '"https://evil.example/rules.json"',
  'document-policy': 'force-load-at-top',
  'timing-allow-origin': '*',
  'server-timing': 'evil;desc="x"',
  sourcemap: 'https://evil.example/map',
  'x-dns-prefetch-control': 'on',
  'observe-browsing-topics': '?1',
  'activate-storage-access': 'retry; allowed-origin="https://evil.example"',
};

/** Request headers a client may invent, each its own case: only an allow-list keeps them from the vendor. */
export const INVENTED_REQUEST_HEADERS: Record<string, string> = {
  'x-evil-new': '1',
  [invented('x-evil-')]: '1',
  [invented('evil-')]: '1',
  'x-forwarded-client-cert': 'Hash=evil',
  'x-amzn-trace-id': 'Root=1-evil',
  'sec-evil': '?1',
  priority: 'u=0',
  dnt: '1',
};

/** The collector's own Content-Security-Policy: the front's replaces it, never beside it. */
export const HOSTILE_CSP = 'default-src *';

/** Request headers the collector may see: the contract's, and the transport's of the front's own connection. */
export const COLLECTOR_MAY_SEE = new Set<string>([
  ...FORWARDED_REQUEST_HEADERS,
  ...FRONT_REQUEST_HEADERS,
  'connection',
  'content-length',
  'transfer-encoding',
  'accept-encoding',
  // Written by the runtime's own fetch (undici, as the Edge Runtime's), always `cors`.
  'sec-fetch-mode',
]);

/** Answer headers the shopper may see: the contract's, and the transport's of its connection. */
export const SHOPPER_MAY_SEE = new Set<string>([
  ...RETURNED_RESPONSE_HEADERS,
  ...FRONT_RESPONSE_HEADERS,
  'connection',
  'keep-alive',
  'content-length',
  'content-encoding',
  'transfer-encoding',
  'date',
  'server',
]);

/** The paths, and each control byte and dot-segment encoding: refused, never forwarded. */
export const REFUSED_PATHS = [
  '/IOJS/..;/admin',
  '/IOJS/a:b',
  '/IOJS/a%00b',
  '/IOJS/a%0Ab',
  '/IOJS/http%3a',
  '/Iojs/general5/SUB/static_wdp.js',
  '/iojs/..;/admin',
  // In absolute form, which HTTP/1.1 servers must accept (RFC 9112 3.2.2): the same rule.
  'http://shop.test/iojs/..;/admin',
  'http://shop.test/iojs/a%0A:b',
  '/iojs/general5/..;/..;/admin',
  '/iojs/a;b/static_wdp.js',
  '/iojs/a%0A:b',
  '/iojs/general5/%252e%252e/admin',
  '/iojs/general5/a%3bb',
  '/iojs/general5/a%5cb',
  '/iojs/general5/a%2fb',
  '/iojs/general5/a%zzb',
  '/iojs/general5/a%',
  ...Array.from({ length: 32 }, (_, byte) => byte)
    .concat(0x7f)
    .map((byte) => `/iojs/general5/a%${byte.toString(16).padStart(2, '0').toUpperCase()}b/static_wdp.js`),
];

/**
 * Dot segments, as sent or encoded: a front refuses them, or resolves them as a browser would
 * before it matches the prefix (the kit's proxy behind a URL parser: `%2e` is a dot to it), and
 * then forwards only the resolved path. Never a dot segment, in any encoding, to the collector.
 */
export const DOT_SEGMENT_PATHS = [
  '/iojs/%2e/loader.js',
  '/iojs/%2E%2e/loader.js',
  '/iojs/.%2e/admin',
  '/iojs/%2e./admin',
  '/iojs/general5/./static_wdp.js',
  '/iojs/general5/%2e/static_wdp.js',
];

/** The dynamic script under other spellings: answered no-store or refused, never cached. */
export const DYNAMIC_SCRIPT_VARIANTS = [
  '/iojs/general5/SUB/dyn_wdp.js/',
  '/iojs/general5/SUB/dyn_wdp.js;x',
  '/iojs/general5/SUB/DYN_WDP.JS',
  '/iojs/general5/SUB/dyn%5Fwdp.js',
  '/iojs/general5/SUB/dyn_wdp.js/x',
  '/iojs/general5/SUB/dyn_wdp.jsx',
];
