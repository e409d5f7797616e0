/**
 * The first-party reverse proxy: requests under the prefix (default /iojs) go to
 * the vendor's first-party collector with the prefix stripped, so the browser
 * loads the dynamic script from the integrator's own domain.
 *
 * It runs on the shop's own origin, so it is built to forward nothing else: the
 * upstream address is the collector's origin and base path with the remaining
 * path appended as a path (never parsed as a URL of its own), only the vendor's
 * own cookies travel, and every answer is sandboxed should it ever be opened as
 * a page. Its parts, by operation: options.ts (checked once), paths.ts (what is
 * forwarded), headers.ts and cookies.ts (what crosses), upstream.ts (the call).
 */
import { deadline } from '../time/deadline.js';
import { BodyTimeoutError, bodyTimedOut, isBodyTimeout, readCapped } from '../net/http.js';
import { validHost } from '../net/host.js';
import { addressGroup, DEFAULT_ADDRESS_PREFIX } from '../net/address.js';
import { recordProxy } from '../metrics.js';
import type { ProxyResult } from '../status/names.js';
import type { RequestContext } from '../fetch-handler.js';
import { browserResponseHeaders, collectorRequestHeaders } from './headers.js';
import { withDone } from '../net/direct-body.js';
import { proxyConfig, type FirstPartyProxyOptions, type ProxyConfig } from './options.js';
import { collectorPath, rawPathOf, underPrefix } from './paths.js';
import { BadUpstreamAnswerError, usableStatus } from './upstream-answer.js';
import { upstreamCaller } from './upstream.js';

export { COLLECTOR_URLS, type FirstPartyProxyOptions, type ProxyMethod } from './options.js';
export { collectorPath } from './paths.js';

/** The proxy's own answer: a JSON error with a stable code, never cached. */
/** The collector's answer for the proxy's health metric (docs/operating.md#metrics-and-the-status-page). */
const statusClass = (status: number): ProxyResult => (status >= 500 ? 'http_5xx' : status >= 400 ? 'http_4xx' : 'ok');

/** The collector's answers, relayed: none of their words is the proxy's (a router reads no code from them). */
const relayed = new WeakSet<Response>();
const relay = (response: Response): Response => {
  relayed.add(response);
  return response;
};
/** Whether `response` is the collector's answer relayed by a first-party proxy, not one of the kit's own. */
export const isRelayed = (response: Response): boolean => relayed.has(response);

const answer = (status: number, code: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ error: { code } }), {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
  });

/**
 * A POST body, read under the exchange's clock: the body, or the answer that ends the
 * request (408 when it arrives too slowly, 413 when it is over the cap).
 */
async function readBody(
  request: Request,
  config: ProxyConfig,
  limit: ReturnType<typeof deadline>,
): Promise<Uint8Array<ArrayBuffer> | Response> {
  let body: Uint8Array<ArrayBuffer> | undefined;
  try {
    body = await readCapped(request, config.maxBodyBytes, config.timeoutMs, limit.signal);
  } catch (error) {
    limit.clear();
    if (!isBodyTimeout(error) && !limit.expired) throw error; // the client went away, or its body broke
    const timedOut = isBodyTimeout(error) ? error : new BodyTimeoutError(config.timeoutMs);
    config.onError(timedOut);
    return bodyTimedOut(timedOut);
  }
  if (body) return body;
  limit.clear();
  return answer(413, 'body_too_large');
}

const noop = () => {};

/**
 * Each client's requests under way, at most `max`: a slot taken returns its release (once
 * is enough; again does nothing), none past `max`. An entry lives only while its client has
 * a request under way.
 */
function clientSlots(max: number): (client: string) => (() => void) | undefined {
  const held = new Map<string, number>();
  return (client) => {
    const count = held.get(client) ?? 0;
    if (count >= max) return undefined;
    held.set(client, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = held.get(client)! - 1;
      if (left > 0) held.set(client, left);
      else held.delete(client);
    };
  };
}

export function createFirstPartyProxy(
  options: FirstPartyProxyOptions,
): ((request: Request, context?: RequestContext) => Promise<Response>) & { matches(request: Request): boolean } {
  const config = proxyConfig(options);
  const { prefix, upstream, basePath, methods } = config;
  const callUpstream = upstreamCaller(options.fetch);
  const slots = clientSlots(config.maxRequestsPerClient);
  const matches = (request: Request) => underPrefix(rawPathOf(request), prefix);

  const handler = async (request: Request, context?: RequestContext): Promise<Response> => {
    const rawPath = rawPathOf(request);
    if (!underPrefix(rawPath, prefix)) return answer(404, 'not_found');
    const rest = collectorPath(rawPath.slice(prefix.length + 1));
    if (rest === undefined) return answer(400, 'bad_path');
    if (!methods.has(request.method)) return answer(405, 'method_not_allowed', { allow: [...methods].join(', ') });
    const host = request.headers.get('host') ?? new URL(request.url).host;
    if (!validHost(host)) return answer(400, 'bad_host');

    const target = new URL(upstream.origin + basePath + rest + new URL(request.url).search);
    // Stryker disable next-line ConditionalExpression,LogicalOperator,StringLiteral: collectorPath() already keeps the rest a path below the base; this only confirms it
    if (target.origin !== upstream.origin || !target.pathname.startsWith(basePath)) return answer(400, 'bad_path');

    // One client's requests under way at once are bounded: the connections to the collector are every shopper's.
    // One visitor is one IPv4 address or one IPv6 /64, as admission counts them: a client that
    // rotates addresses within its /64 is one client.
    const client = context?.clientAddress;
    const release = client === undefined ? noop : slots(addressGroup(client, DEFAULT_ADDRESS_PREFIX));
    if (!release) return answer(429, 'too_many_requests', { 'retry-after': '1' });
    // One clock for the exchange, started before the body is read: a client that trickles its
    // body spends the collector's time, and the request never takes more than timeoutMs.
    const limit = deadline(config.timeoutMs, request.signal);
    // The exchange's slot goes with its clock: cleared (answered, failed, its body read or
    // dropped) or run out.
    const clear = limit.clear.bind(limit);
    limit.clear = () => {
      clear();
      release();
    };
    limit.signal.addEventListener('abort', release, { once: true });
    const body = request.method === 'POST' ? await readBody(request, config, limit) : undefined;
    if (body instanceof Response) return body;

    let response: Response;
    try {
      response = await callUpstream(target, {
        method: request.method,
        headers: collectorRequestHeaders(request, context, config, host),
        signal: limit.signal,
        ...(body ? { body } : {}),
      });
    } catch (error) {
      limit.clear();
      recordProxy(error instanceof BadUpstreamAnswerError ? 'bad_upstream' : limit.expired ? 'timeout' : 'unreachable');
      if (error instanceof BadUpstreamAnswerError) return answer(502, 'bad_upstream');
      return answer(limit.expired ? 504 : 502, limit.expired ? 'collector_timeout' : 'collector_unreachable');
    }
    recordProxy(!usableStatus(response.status) ? 'bad_upstream' : statusClass(response.status));
    if (!usableStatus(response.status)) {
      limit.clear();
      await response.body?.cancel().catch(() => {});
      return answer(502, 'bad_upstream');
    }

    const out = browserResponseHeaders(response, config, target);
    if (request.method === 'HEAD' || !response.body) {
      limit.clear();
      await response.body?.cancel();
      return relay(new Response(null, { status: response.status, headers: out }));
    }
    // The body arrives decoded: no content-encoding or content-length from upstream. The
    // deadline holds until it has been read or dropped: a body that stalls is cut too.
    return relay(
      new Response(
        withDone(response.body, () => limit.clear()),
        { status: response.status, headers: out },
      ),
    );
  };
  return Object.assign(handler, { matches });
}
