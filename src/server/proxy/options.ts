/**
 * The first-party proxy's options, and their check when the proxy is made: a bad option is a
 * `DeviceRiskError` with `invalid_configuration` (or `insecure_url`) at start, never a surprise
 * on the first request.
 */
import { checkOptions } from '../options-table.js';
import { PROXY_OPTIONS } from './settings.js';
import { DEFAULT_URI_HOOK } from '../../shared/constants.js';
import { DeviceRiskError, ERR_INVALID_CONFIGURATION, onErrorOf } from '../errors.js';
import { validHost } from '../net/host.js';
import { proxyMessages } from '../messages.js';
import { requireSecureUrl } from '../net/secure-url.js';

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
   * Requests one client (the context's `clientAddress`) may have under way at once; past it,
   * 429 `too_many_requests` with Retry-After, so that one client cannot take the connections
   * to the collector every shopper shares (256 a collector). Default 64: a page loads a few
   * scripts at once, and shoppers behind a front left out of the trusted fronts share one address.
   */
  maxRequestsPerClient?: number;
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

/** The options checked, with their defaults in place. */
export interface ProxyConfig {
  prefix: string;
  upstream: URL;
  /** The collector's path, ending in "/": every forwarded path is below it. */
  basePath: string;
  methods: Set<string>;
  cookiePrefix: string;
  allowCookies: Set<string>;
  trustProxy: boolean;
  publicHost: string | undefined;
  timeoutMs: number;
  maxBodyBytes: number;
  maxRequestsPerClient: number;
  onError: (error: unknown) => void;
}

export const COOKIE_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

const invalid = (message: string) => new DeviceRiskError(ERR_INVALID_CONFIGURATION, message);

export function proxyConfig(options: FirstPartyProxyOptions): ProxyConfig {
  checkOptions(options, PROXY_OPTIONS);
  const prefix = (options.prefix ?? PROXY_OPTIONS.prefix.default).replace(/\/+$/, '');
  if (
    !/^\/[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/.test(prefix) ||
    prefix.split('/').some((s) => s === '..' || s === '.')
  ) {
    throw invalid(proxyMessages.badPrefix(DEFAULT_URI_HOOK));
  }
  const upstream = requireSecureUrl(options.collectorUrl, 'collectorUrl');
  if (upstream.search || upstream.hash) throw invalid(proxyMessages.collectorUrlQuery);
  const methods = new Set<string>(options.methods ?? ['GET', 'HEAD']);
  for (const method of methods) {
    if (!['GET', 'HEAD', 'POST'].includes(method)) throw invalid(proxyMessages.badMethod(method));
  }
  const cookiePrefix = options.cookiePrefix ?? PROXY_OPTIONS.cookiePrefix.default;
  const allowCookies = new Set(options.allowCookies ?? []);
  if (!COOKIE_NAME.test(cookiePrefix) || [...allowCookies].some((name) => !COOKIE_NAME.test(name))) {
    throw invalid(proxyMessages.badCookieNames);
  }
  // Stryker disable next-line ConditionalExpression: an absent publicHost would be checked as the text "undefined", a valid name
  if (options.publicHost !== undefined && !validHost(options.publicHost)) throw invalid(proxyMessages.badPublicHost);
  return {
    prefix,
    upstream,
    basePath: upstream.pathname.endsWith('/') ? upstream.pathname : upstream.pathname + '/',
    methods,
    cookiePrefix,
    allowCookies,
    trustProxy: options.trustProxy ?? PROXY_OPTIONS.trustProxy.default,
    publicHost: options.publicHost,
    timeoutMs: options.timeoutMs ?? PROXY_OPTIONS.timeoutMs.default,
    maxBodyBytes: options.maxBodyBytes ?? PROXY_OPTIONS.maxBodyBytes.default,
    maxRequestsPerClient: options.maxRequestsPerClient ?? PROXY_OPTIONS.maxRequestsPerClient.default,
    onError: onErrorOf(options.onError),
  };
}
