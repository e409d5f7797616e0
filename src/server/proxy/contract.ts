/**
 * The contract of a first-party front, as data: the one list of what may cross each way and
 * the one rule for the paths a front forwards. The kit's proxy reads it; the conformance suite
 * (test/support/front-conformance.ts) holds every recipe of proxy/ to it; docs/proxy.md ("The
 * contract in one table") shows it, and a test keeps that table equal to these lists.
 */

/** Headers of the browser's request the collector may get, as the browser sent them. */
export const FORWARDED_REQUEST_HEADERS = [
  'user-agent',
  'accept-language',
  'referer',
  'accept',
  'if-none-match',
  'if-modified-since',
  'content-type',
] as const;

/**
 * Headers the front writes itself on the way out: the collector's own `host`, the vendor's
 * cookies (namespaced, or none), and its own view of the client: the peer of the connection
 * in `x-forwarded-for`, never an address header the client wrote.
 */
export const FRONT_REQUEST_HEADERS = [
  'host',
  'cookie',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
] as const;

/** Headers of the collector's answer the browser may get, as the collector sent them. */
export const RETURNED_RESPONSE_HEADERS = [
  'content-type',
  'cache-control',
  'etag',
  'last-modified',
  'expires',
  'vary',
] as const;

/** Headers the front writes itself on the way back (the vendor's cookies rewritten, or none). */
export const FRONT_RESPONSE_HEADERS = ['set-cookie', 'content-security-policy', 'cdn-cache-control'] as const;

/**
 * A path as sent that no front forwards, matched case-insensitively from the prefix on (`/iojs/`
 * here; a front under another prefix puts its own): a path that starts with `/`, holds `//` or a
 * `.`/`..` segment, a character outside the plain path set (a `:`, `;`, `\`, a control byte, a
 * space), an escape of a dot, slash, backslash, colon, semicolon, percent (so no second
 * encoding) or control byte, an overlong UTF-8 lead (`%C0%AE` is a dot to some decoders), or
 * a broken escape. One decoding of what is left (the collector's)
 * can name nothing but a file under the collector's root. Written without look-around, so the
 * same text runs in JavaScript, PCRE (nginx, Apache, HAProxy) and RE2 (Caddy).
 */
export const REFUSED_PATH_SOURCE =
  '^/iojs/(/|[^?]*?([^A-Za-z0-9._~!\\x24&\\x27()*+,=@/%?-]|//|%([01][0-9a-f]|7f|2[5ef]|3[ab]|5c|c[01]|e0%[89]|f0%8)|%([^0-9a-f]|[0-9a-f][^0-9a-f]|[0-9a-f]?(\\?|$)))|([^?]*/)?\\.\\.?([/?]|$))';

/**
 * The dynamic script embeds values of its request: its answer is `no-store` whenever the path,
 * once decoded, names it in any case and with anything after it (`dyn_wdp.js/`, `DYN_WDP.JS`).
 */
export const DYNAMIC_SCRIPT = /dyn_wdp/i;

/** The front's own headers on the dynamic script, whatever the collector said. */
export const DYNAMIC_SCRIPT_HEADERS = {
  'cache-control': 'no-store, private',
  'cdn-cache-control': 'no-store',
} as const;

/** `path` (after the prefix) with each `%XX` decoded to its byte as a character: for matching only. */
export const bytesDecoded = (path: string): string =>
  path.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
