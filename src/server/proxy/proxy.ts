/**
 * The first-party reverse proxy: requests under the prefix (default /iojs) go to
 * the vendor's first-party collector with the prefix stripped, so the browser
 * loads the dynamic script from the integrator's own domain.
 *
 * It runs on the shop's own origin, so it is built to forward nothing else: the
 * upstream address is the collector's origin and base path with the remaining
 * path appended as a path (never parsed as a URL of its own), only the vendor's
 * own cookies travel, and every answer is sandboxed should it ever be opened as
 * a page.
 */
import type { UpstreamInit } from './node-upstream.js';
import { deadline } from '../deadline.js';
import { withDone } from './node-body.js';
import { DeviceRiskError, ERR_INVALID_CONFIGURATION, logError } from '../errors.js';
import { requireSecureUrl } from '../secure-url.js';
import { BodyTimeoutError, bodyTimedOut, isBodyTimeout, plainAddress, readCapped } from '../http.js';
import { validHost, type RequestContext } from '../node.js';
import { BadUpstreamAnswerError, usableStatus } from './upstream-answer.js';

/** The vendor's first-party hosts (docs/vendor-contract.md#the-first-party-front). */
export const COLLECTOR_URLS = {
  production: 'https://first.iovation.com/',
  sandbox: 'https://ci-first.iovation.com/',
} as const;

export type ProxyMethod = 'GET' | 'HEAD' | 'POST';

export interface FirstPartyProxyOptions {
  /** Path prefix on your site; must equal the browser's `uriHook`. Default `/iojs`. */
  prefix?: string;
  /** The collector's address (the prefix maps to its root). */
  collectorUrl: string;
  /**
   * How the collector is called. Default: on Node, node:http with keep-alive sockets (about
   * twice the throughput of the global fetch, measured in `npm run bench`), unless the global
   * fetch was replaced after this package loaded (a test double, instrumentation): then, and
   * on other runtimes, the global fetch. Workers and edge runtimes load the kit's build
   * without the node:http path (the `workerd` and `edge-light` export conditions).
   */
  fetch?: typeof fetch;
  /**
   * Time limit in ms for the whole exchange: a POST body's arrival from the browser (cut with
   * 408 `body_timeout`), then the collector's answer (504 `collector_timeout`). Default 10000.
   */
  timeoutMs?: number;
  /**
   * Methods forwarded. Default GET and HEAD: the collection scripts and the files they
   * load are fetched with GET. Add POST only if your vendor asks for it; its body is capped.
   */
  methods?: readonly ProxyMethod[];
  /** Largest POST body forwarded, in bytes. Default 65536. */
  maxBodyBytes?: number;
  /**
   * Cookies set by the collector come back to the browser under this name prefix,
   * confined to the proxy's path, and only cookies with this prefix are forwarded
   * (with the prefix removed): the site's own cookies never reach the vendor. Default `bbc_`.
   */
  cookiePrefix?: string;
  /** Further cookie names forwarded as they are (cookies the vendor's scripts set from JavaScript). Default none. */
  allowCookies?: readonly string[];
  /**
   * Trust the `X-Forwarded-For` chain of the incoming request (your own load balancer
   * sets it) and append the peer address to it. Default false: the chain is replaced by
   * the peer address, so a client cannot forge its address to the vendor.
   */
  trustProxy?: boolean;
  /** Your site's public host for `X-Forwarded-Host`. Default: the request's validated `Host`. */
  publicHost?: string;
  /** Told of each request cut because its body took too long. Default: one line on the console. */
  onError?: (error: unknown) => void;
}

/** Hop-by-hop headers (RFC 9110 7.6.1): never forwarded in either direction. */
// Stryker disable next-line ArrayDeclaration,StringLiteral: no allow-listed name is on this list; it keeps a hop-by-hop name added to an allow-list from crossing
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
const FORWARDED_REQUEST_HEADERS = [
  'user-agent',
  'accept-language',
  'referer',
  'accept',
  'if-none-match',
  'if-modified-since',
  'content-type',
];
const RETURNED_RESPONSE_HEADERS = ['content-type', 'cache-control', 'etag', 'last-modified', 'expires', 'vary'];
/**
 * On Node, the proxy calls the collector through node:http with keep-alive (node-upstream.ts,
 * loaded on first use): the global fetch cost it about half its throughput. A global fetch
 * replaced since load (a test double, instrumentation) is respected. The build for Workers
 * and edge runtimes has no node:http path (no-node-upstream.ts stands in): workerd with
 * `nodejs_compat` has a `process.versions.node` but its node:http is fetch underneath.
 */
// Stryker disable next-line ConditionalExpression,OptionalChaining: the tests run on Node, where each form is true
const ON_NODE =
  typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === 'string';
const FETCH_AT_LOAD = globalThis.fetch;
const COOKIE_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * The path after the prefix, when it can only name a file under the collector's base
 * path: undefined for anything else. Checked as sent and after each of up to two
 * decodings, so encoded and double-encoded forms fail as the plain ones do.
 */
export function collectorPath(rest: string): string | undefined {
  let layer = rest;
  for (let decodings = 0; ; decodings++) {
    // Printable ASCII path characters only: no scheme or port colon, no backslash, no control
    // character, no empty segment ("//" would start a host), no "." or ".." segment, and no
    // ";": some servers (Tomcat) read "..;" as "..", and the vendor's paths have none.
    if (!/^[A-Za-z0-9\-._~!$&'()*+,=@/%]*$/.test(layer) || layer.startsWith('/') || layer.includes('//'))
      return undefined;
    if (layer.split('/').some((segment) => segment === '.' || segment === '..')) return undefined;
    if (!layer.includes('%')) return rest;
    // An encoded slash or backslash is a path separator in disguise.
    if (/%(2f|5c)/i.test(layer) || decodings === 2) return undefined;
    // Stryker disable BlockStatement: a malformed escape fails again on the next pass, and the pass limit refuses it
    try {
      layer = decodeURIComponent(layer);
    } catch {
      return undefined; // a malformed escape
    }
    // Stryker restore BlockStatement
  }
}

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

const answer = (status: number, code: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ error: { code } }), {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
  });

export function createFirstPartyProxy(
  options: FirstPartyProxyOptions,
): ((request: Request, context?: RequestContext) => Promise<Response>) & { matches(request: Request): boolean } {
  const prefix = (options.prefix ?? '/iojs').replace(/\/+$/, '');
  if (
    !/^\/[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/.test(prefix) ||
    prefix.split('/').some((s) => s === '..' || s === '.')
  ) {
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, `prefix must be an absolute path such as "/iojs"`);
  }
  const upstream = requireSecureUrl(options.collectorUrl, 'collectorUrl');
  if (upstream.search || upstream.hash)
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, 'collectorUrl must not carry a query or fragment');
  const basePath = upstream.pathname.endsWith('/') ? upstream.pathname : upstream.pathname + '/';
  const methods = new Set<string>(options.methods ?? ['GET', 'HEAD']);
  for (const method of methods) {
    if (!['GET', 'HEAD', 'POST'].includes(method))
      throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, `methods may hold GET, HEAD and POST only, not ${method}`);
  }
  const cookiePrefix = options.cookiePrefix ?? 'bbc_';
  const allowCookies = new Set(options.allowCookies ?? []);
  if (!COOKIE_NAME.test(cookiePrefix) || [...allowCookies].some((name) => !COOKIE_NAME.test(name))) {
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, 'cookiePrefix and allowCookies must be cookie names');
  }
  // Stryker disable next-line ConditionalExpression: an absent publicHost would be checked as the text "undefined", a valid name
  if (options.publicHost !== undefined && !validHost(options.publicHost))
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, 'publicHost must be a host name, with a port if any');
  let upstream$: Promise<(url: URL, init: UpstreamInit) => Promise<Response>> | undefined;
  const callUpstream = async (url: URL, init: UpstreamInit) => {
    upstream$ ??= (
      options.fetch || !ON_NODE || globalThis.fetch !== FETCH_AT_LOAD
        ? Promise.resolve(undefined)
        : import('./node-upstream.js').then((module) => module.nodeUpstream)
    ).then((node) => node ?? ((u, i) => (options.fetch ?? fetch)(u, { ...i, redirect: 'manual' })));
    return (await upstream$)(url, init);
  };
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxBody = options.maxBodyBytes ?? 64 * 1024;
  const onError = options.onError ?? logError;

  const rawPathOf = (request: Request) => {
    // Stryker disable next-line Regex: a request URL starts with its scheme, so its first origin is at the start
    const afterOrigin = request.url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '');
    // Stryker disable next-line StringLiteral: split() always has an element 0
    return afterOrigin.split(/[?#]/)[0] ?? '';
  };
  const matches = (request: Request) => {
    const path = rawPathOf(request);
    return path === prefix || path.startsWith(prefix + '/');
  };

  /** The browser's cookies that belong to the vendor, under their own names. */
  function vendorCookies(header: string | null): string | undefined {
    const kept: string[] = [];
    // Stryker disable next-line StringLiteral: without a Cookie header, the fallback's text is no cookie name that can pass
    for (const pair of (header ?? '').split(';')) {
      const trimmed = pair.trim();
      const name = trimmed.slice(0, trimmed.indexOf('='));
      if (allowCookies.has(name)) kept.push(trimmed);
      else if (name.startsWith(cookiePrefix) && name.length > cookiePrefix.length)
        kept.push(trimmed.slice(cookiePrefix.length));
    }
    return kept.length ? kept.join('; ') : undefined;
  }

  /** A collector cookie as the browser gets it: in the vendor's namespace, host-only, under the prefix. */
  function rewriteSetCookie(line: string): string | undefined {
    // Stryker disable next-line StringLiteral: split() always has an element 0
    const [pair = '', ...attributes] = line.split(';');
    const at = pair.indexOf('=');
    const name = pair.slice(0, at).trim();
    if (at < 1 || !COOKIE_NAME.test(name)) return undefined;
    // Stryker disable next-line StringLiteral: no Path and Path=/ both map to the prefix itself
    let path = '/';
    const kept: string[] = [];
    for (const attribute of attributes) {
      const key = attribute.split('=')[0]!.trim().toLowerCase();
      if (key === 'path') path = attribute.slice(attribute.indexOf('=') + 1).trim();
      else if (key !== 'domain') kept.push(attribute.trim()); // Domain dropped: the cookie stays on this host
    }
    // The collector's path, mapped under the prefix; anything odd becomes the prefix itself.
    const mapped = path.startsWith(basePath) ? path.slice(basePath.length - 1) : path;
    const confined =
      /^\/[A-Za-z0-9\-._~/]*$/.test(mapped) && !mapped.split('/').includes('..')
        ? prefix + mapped.replace(/\/$/, '')
        : prefix;
    const outName = allowCookies.has(name) ? name : cookiePrefix + name;
    return [`${outName}=${pair.slice(at + 1).trim()}`, `Path=${confined}`, ...kept].join('; ');
  }

  const handler = async (request: Request, context?: RequestContext): Promise<Response> => {
    const rawPath = rawPathOf(request);
    if (!(rawPath === prefix || rawPath.startsWith(prefix + '/'))) return answer(404, 'not_found');
    const rest = collectorPath(rawPath.slice(prefix.length + 1));
    if (rest === undefined) return answer(400, 'bad_path');
    if (!methods.has(request.method)) return answer(405, 'method_not_allowed', { allow: [...methods].join(', ') });
    const host = request.headers.get('host') ?? new URL(request.url).host;
    if (!validHost(host)) return answer(400, 'bad_host');

    const url = new URL(request.url);
    const target = new URL(upstream.origin + basePath + rest + url.search);
    // Stryker disable next-line ConditionalExpression,LogicalOperator,StringLiteral: collectorPath() already keeps the rest a path below the base; this only confirms it
    if (target.origin !== upstream.origin || !target.pathname.startsWith(basePath)) return answer(400, 'bad_path');

    // One clock for the exchange, started before the body is read: a client that trickles its
    // body spends the collector's time, and the request never takes more than timeoutMs.
    const limit = deadline(timeoutMs, request.signal);
    let body: Uint8Array<ArrayBuffer> | undefined;
    if (request.method === 'POST') {
      try {
        body = await readCapped(request, maxBody, timeoutMs, limit.signal);
      } catch (error) {
        limit.clear();
        if (!isBodyTimeout(error) && !limit.expired) throw error; // the client went away, or its body broke
        const timedOut = isBodyTimeout(error) ? error : new BodyTimeoutError(timeoutMs);
        onError(timedOut);
        return bodyTimedOut(timedOut);
      }
      if (!body) {
        limit.clear();
        return answer(413, 'body_too_large');
      }
    }

    const headers = new Headers();
    const sent = endToEnd(request.headers);
    for (const name of FORWARDED_REQUEST_HEADERS) {
      const value = sent(name);
      if (value !== null) headers.set(name, value);
    }
    const cookies = vendorCookies(sent('cookie'));
    if (cookies) headers.set('cookie', cookies);
    const peer = context?.clientAddress ? plainAddress(context.clientAddress) : undefined;
    const chain = options.trustProxy ? [sent('x-forwarded-for'), peer].filter(Boolean).join(', ') : peer;
    if (chain) headers.set('x-forwarded-for', chain);
    headers.set('x-forwarded-host', options.publicHost ?? host);
    headers.set('x-forwarded-proto', url.protocol.replace(':', ''));

    let response: Response;
    try {
      response = await callUpstream(target, {
        method: request.method,
        headers,
        signal: limit.signal,
        ...(body ? { body } : {}),
      });
    } catch (error) {
      limit.clear();
      if (error instanceof BadUpstreamAnswerError) return answer(502, 'bad_upstream');
      return answer(limit.expired ? 504 : 502, limit.expired ? 'collector_timeout' : 'collector_unreachable');
    }
    if (!usableStatus(response.status)) {
      limit.clear();
      await response.body?.cancel().catch(() => {});
      return answer(502, 'bad_upstream');
    }

    const out = new Headers();
    const answered = endToEnd(response.headers);
    for (const name of RETURNED_RESPONSE_HEADERS) {
      const value = answered(name);
      if (value !== null) out.set(name, value);
    }
    // Set-Cookie is the one header that cannot be read as one line: asked only whether it is end-to-end.
    // Stryker disable next-line ArrayDeclaration: a line without "=" is dropped by the rewrite anyway
    for (const cookie of answered('set-cookie') === null ? [] : response.headers.getSetCookie()) {
      const rewritten = rewriteSetCookie(cookie);
      if (rewritten) out.append('set-cookie', rewritten);
    }
    // The dynamic script embeds per-request values: no browser or CDN may keep it.
    if (/dyn_wdp\.js$/.test(target.pathname)) {
      out.set('cache-control', 'no-store, private');
      out.set('cdn-cache-control', 'no-store');
    }
    // Scripts load as they are; opened as a page, an answer can run nothing on this origin.
    out.set('content-security-policy', "sandbox; default-src 'none'");
    if (request.method === 'HEAD' || !response.body) {
      limit.clear();
      await response.body?.cancel();
      return new Response(null, { status: response.status, headers: out });
    }
    // The body arrives decoded: no content-encoding or content-length from upstream. The
    // deadline holds until it has been read or dropped: a body that stalls is cut too.
    return new Response(
      withDone(response.body, () => limit.clear()),
      { status: response.status, headers: out },
    );
  };
  return Object.assign(handler, { matches });
}
