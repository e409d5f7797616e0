/**
 * The first-party reverse proxy: requests under the prefix (default /iojs) go to
 * the vendor's first-party collector with the prefix stripped, so the browser
 * loads the dynamic script from the integrator's own domain.
 */
import { DeviceRiskError, ERR_INVALID_CONFIGURATION, requireSecureUrl } from './errors.js';
import type { RequestContext } from './node.js';

/** The vendor's first-party hosts (field notes). */
export const COLLECTOR_URLS = {
  production: 'https://first.iovation.com/',
  sandbox: 'https://ci-first.iovation.com/',
} as const;

export interface FirstPartyProxyOptions {
  /** Path prefix on your site; must equal the browser's `uriHook`. Default `/iojs`. */
  prefix?: string;
  /** The collector's address (the prefix maps to its root). */
  collectorUrl: string;
  fetch?: typeof fetch;
  /** Upstream time limit in ms. Default 10000. */
  timeoutMs?: number;
}

/** Hop-by-hop headers (RFC 9110 7.6.1): never forwarded in either direction. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'];
const FORWARDED_REQUEST_HEADERS = ['user-agent', 'accept-language', 'referer', 'cookie', 'accept', 'if-none-match', 'if-modified-since', 'content-type'];
const RETURNED_RESPONSE_HEADERS = ['content-type', 'cache-control', 'etag', 'last-modified', 'expires', 'vary'];

/** True when the (decoded) path could leave the prefix: "..", "." segments, backslashes, encoded slashes. */
function escapes(rawPath: string): boolean {
  let decoded: string;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    return true; // malformed escapes
  }
  if (/%2f|%5c/i.test(rawPath) || decoded.includes('\\') || decoded.includes('\0')) return true;
  return decoded.split('/').some((segment) => segment === '..' || segment === '.');
}

function dropHopByHop(headers: Headers): void {
  const listed = (headers.get('connection') ?? '').split(',').map((h) => h.trim().toLowerCase()).filter(Boolean);
  for (const name of [...HOP_BY_HOP, ...listed]) headers.delete(name);
}

const answer = (status: number, text: string) =>
  new Response(text, { status, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' } });

export function createFirstPartyProxy(options: FirstPartyProxyOptions): ((request: Request, context?: RequestContext) => Promise<Response>) & { matches(request: Request): boolean } {
  const prefix = (options.prefix ?? '/iojs').replace(/\/+$/, '');
  if (!/^\/[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/.test(prefix) || prefix.split('/').includes('..')) {
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, `prefix must be an absolute path such as "/iojs"`);
  }
  const upstream = requireSecureUrl(options.collectorUrl, 'collectorUrl');
  const upstreamBase = upstream.href.endsWith('/') ? upstream.href : upstream.href + '/';
  const doFetch = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 10_000;

  const rawPathOf = (request: Request) => {
    // new URL() would already have resolved "..": read the path as the client sent it.
    const afterOrigin = request.url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '');
    return afterOrigin.split(/[?#]/)[0] ?? '';
  };
  const matches = (request: Request) => {
    const path = rawPathOf(request);
    return path === prefix || path.startsWith(prefix + '/');
  };

  const handler = async (request: Request, context?: RequestContext): Promise<Response> => {
    const rawPath = rawPathOf(request);
    if (!(rawPath === prefix || rawPath.startsWith(prefix + '/'))) return answer(404, 'not found');
    const rest = rawPath.slice(prefix.length + 1);
    if (escapes(rest)) return answer(400, 'bad path');
    if (!['GET', 'HEAD', 'POST'].includes(request.method)) return answer(405, 'method not allowed');
    const url = new URL(request.url);
    const target = new URL(rest + url.search, upstreamBase);

    const headers = new Headers();
    for (const name of FORWARDED_REQUEST_HEADERS) {
      const value = request.headers.get(name);
      if (value !== null) headers.set(name, value);
    }
    const client = context?.clientAddress;
    const prior = request.headers.get('x-forwarded-for');
    if (client || prior) headers.set('x-forwarded-for', [prior, client].filter(Boolean).join(', '));
    headers.set('x-forwarded-host', request.headers.get('host') ?? url.host);
    headers.set('x-forwarded-proto', url.protocol.replace(':', ''));
    dropHopByHop(headers);

    let response: Response;
    try {
      response = await doFetch(target, {
        method: request.method,
        headers,
        redirect: 'manual',
        signal: AbortSignal.any([request.signal, AbortSignal.timeout(timeoutMs)]),
        ...(request.method === 'POST' ? { body: request.body, duplex: 'half' } : {}),
      } as RequestInit);
    } catch {
      return answer(502, 'first-party collector unreachable');
    }

    const out = new Headers();
    for (const name of RETURNED_RESPONSE_HEADERS) {
      const value = response.headers.get(name);
      if (value !== null) out.set(name, value);
    }
    for (const cookie of response.headers.getSetCookie()) out.append('set-cookie', cookie);
    // The dynamic script embeds per-request values: no browser or CDN may keep it.
    if (/dyn_wdp\.js$/.test(target.pathname)) {
      out.set('cache-control', 'no-store, private');
      out.set('cdn-cache-control', 'no-store');
    }
    // fetch() has decoded the body: no content-encoding or content-length from upstream.
    dropHopByHop(out);
    return new Response(request.method === 'HEAD' ? null : response.body, { status: response.status, headers: out });
  };
  return Object.assign(handler, { matches });
}
