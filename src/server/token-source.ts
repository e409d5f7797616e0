/**
 * OAuth 2.0 client-credentials token source for the identity-verification API.
 * One cached access token per client, refreshed shortly before it expires;
 * concurrent callers share one request; at most N token requests a second from
 * this process; 429 waits and retries; 400/401/403 fail at once.
 */
import {
  DeviceRiskError,
  ERR_INVALID_CONFIGURATION,
  ERR_INVALID_RESPONSE,
  ERR_NETWORK,
  ERR_RATE_LIMITED,
  ERR_TOKEN_REJECTED,
  ERR_UPSTREAM,
  requireSecureUrl,
  retryAfterSeconds,
  sleep,
  upstreamSummary,
} from './errors.js';
import { deadline } from './deadline.js';

export type Region = 'US' | 'EU' | 'SG';

/** The regional token addresses (field notes). */
export const TOKEN_URLS: Record<Region, string> = {
  US: 'https://auth.amer-1.jumio.ai/oauth2/token',
  EU: 'https://auth.emea-1.jumio.ai/oauth2/token',
  SG: 'https://auth.apac-1.jumio.ai/oauth2/token',
};

export interface CachedToken {
  accessToken: string;
  /** Epoch ms at which the service stops accepting it. */
  expiresAt: number;
  /** Epoch ms at which it was issued. */
  issuedAt?: number;
}

/** Where tokens are kept; share one store between server instances to share tokens. */
export interface TokenStore {
  get(key: string): CachedToken | undefined | Promise<CachedToken | undefined>;
  set(key: string, token: CachedToken): void | Promise<void>;
  delete(key: string): void | Promise<void>;
}

export function createMemoryTokenStore(): TokenStore {
  const tokens = new Map<string, CachedToken>();
  return {
    get: (key) => tokens.get(key),
    set: (key, token) => void tokens.set(key, token),
    delete: (key) => void tokens.delete(key),
  };
}

export interface TokenSourceOptions {
  clientId: string;
  clientSecret: string;
  /** US, EU or SG; or give `tokenUrl`. */
  region?: Region;
  tokenUrl?: string;
  /** Names your company and app, e.g. "AcmeShop Checkout/1.4" (the service refuses library defaults). */
  userAgent: string;
  fetch?: typeof fetch;
  store?: TokenStore;
  /** Refresh this many seconds before expiry. Default 60. */
  refreshMarginSeconds?: number;
  /** Token requests allowed per second from this process to this token URL (all sources together). Default 10 (the service's limit). */
  maxRequestsPerSecond?: number;
  /** Attempts for 429, 5xx and network failures. Default 4. */
  maxAttempts?: number;
  /**
   * Time limit of a whole `getToken` call in ms, waits for the rate limit and for
   * `Retry-After` included. Default 10000.
   */
  timeoutMs?: number;
  /** The longest `Retry-After` waited for, in seconds; a longer one fails at once with `rate_limited`. Default 30. */
  maxRetryAfterSeconds?: number;
  /** How retries wait (tests pass one that does not wait). Default a timer. Rate-limit waits always use a timer. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => number;
}

export interface TokenSource {
  /** A valid access token, from the cache or a new request. */
  getToken(options?: { signal?: AbortSignal }): Promise<string>;
  /** Forget the cached token (after the API refused it). */
  invalidate(): Promise<void>;
  /** The origin of the token service, for logs. */
  readonly tokenUrl: string;
}

const BASE_BACKOFF_MS = 250;
const RATE_WINDOW_MS = 1100;
/** `expires_in` is taken within these bounds (seconds): a tiny one would mean a request per call, a huge one a token cached for ever. */
export const TOKEN_LIFETIME_BOUNDS = { min: 10, max: 24 * 3600, default: 3600 } as const;

/** The lifetime in seconds a token answer's `expires_in` stands for (see TOKEN_LIFETIME_BOUNDS). */
export function tokenLifetimeSeconds(expiresIn: unknown): number {
  if (typeof expiresIn !== 'number' || !(expiresIn > 0)) return TOKEN_LIFETIME_BOUNDS.default;
  return Math.min(TOKEN_LIFETIME_BOUNDS.max, Math.max(TOKEN_LIFETIME_BOUNDS.min, expiresIn));
}

/** Send times of token requests in this process, per token URL: the limit holds process-wide. */
const sentByTokenUrl = new Map<string, number[]>();

export function createTokenSource(options: TokenSourceOptions): TokenSource {
  const { clientId, clientSecret } = options;
  if (!clientId || !clientSecret) throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, 'clientId and clientSecret are required');
  if (!options.userAgent?.trim()) throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, 'userAgent is required, e.g. "YourCompany YourApp/1.0"');
  const rawUrl = options.tokenUrl ?? (options.region ? TOKEN_URLS[options.region] : undefined);
  if (!rawUrl) throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, `give region (${Object.keys(TOKEN_URLS).join(', ')}) or tokenUrl`);
  const tokenUrl = requireSecureUrl(rawUrl, 'tokenUrl').href;
  const doFetch = options.fetch ?? fetch;
  const store = options.store ?? createMemoryTokenStore();
  const now = options.now ?? Date.now;
  const marginMs = (options.refreshMarginSeconds ?? 60) * 1000;
  const perSecond = options.maxRequestsPerSecond ?? 10;
  const maxAttempts = options.maxAttempts ?? 4;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxRetryAfterMs = (options.maxRetryAfterSeconds ?? 30) * 1000;
  // The cache key names the client, never the secret.
  const key = `${tokenUrl} ${clientId}`;
  // RFC 6749 2.3.1: form-encode both, then Basic. btoa rather than Buffer: edge runtimes have no Buffer.
  const formEncode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
  const authorization = 'Basic ' + btoa(`${formEncode(clientId)}:${formEncode(clientSecret)}`);
  const sent = sentByTokenUrl.get(tokenUrl) ?? [];
  sentByTokenUrl.set(tokenUrl, sent);
  let inFlight: Promise<string> | undefined;
  /**
   * Fresh until `refreshMarginSeconds` before expiry, but never less than half its
   * lifetime is used: a token shorter-lived than the margin would mean a request per call.
   */
  const fresh = (token: CachedToken) => token.expiresAt - Math.min(marginMs, (token.expiresAt - (token.issuedAt ?? token.expiresAt)) / 2) > now();

  /**
   * Waits for a slot so that no second holds more than `perSecond` requests. The
   * window is a little longer than a second: requests do not reach the service
   * in exactly the rhythm they leave.
   */
  async function rateSlot(signal?: AbortSignal): Promise<void> {
    for (;;) {
      const t = Date.now();
      while (sent.length > 0 && sent[0]! <= t - RATE_WINDOW_MS) sent.shift();
      if (sent.length < perSecond) {
        sent.push(t);
        return;
      }
      await sleep(sent[0]! + RATE_WINDOW_MS - t + 1, signal);
    }
  }

  async function requestToken(callerSignal?: AbortSignal): Promise<string> {
    // One limit for the whole call: rate-limit slots, backoff and Retry-After waits included.
    const limit = deadline(timeoutMs, callerSignal);
    const { signal } = limit;
    const timedOut = (cause?: unknown) =>
      new DeviceRiskError(ERR_NETWORK, `no token from ${new URL(tokenUrl).origin} within ${timeoutMs} ms`, { operation: 'token', cause });
    /** Waits before the next attempt, unless it would outlast the time limit or none is left: then the last error stands. */
    const wait = async (ms: number, error: DeviceRiskError) => {
      if (attempt >= maxAttempts || Date.now() + ms >= started + timeoutMs) throw error;
      await (options.sleep ?? sleep)(ms, signal);
    };
    const started = Date.now();
    let lastError: DeviceRiskError | undefined;
    let attempt = 0;
    try {
      for (attempt = 1; attempt <= maxAttempts; attempt++) {
        await rateSlot(signal);
        let response: Response;
        try {
          response = await doFetch(tokenUrl, {
            method: 'POST',
            headers: {
              authorization,
              accept: 'application/json',
              'content-type': 'application/x-www-form-urlencoded',
              'user-agent': options.userAgent,
            },
            body: 'grant_type=client_credentials',
            redirect: 'manual',
            signal,
          });
        } catch (cause) {
          if (callerSignal?.aborted) throw callerSignal.reason;
          if (limit.expired) throw timedOut(cause);
          lastError = new DeviceRiskError(ERR_NETWORK, `token request to ${new URL(tokenUrl).origin} failed (network error)`, { operation: 'token', cause });
          await wait(Math.random() * BASE_BACKOFF_MS * 2 ** attempt, lastError);
          continue;
        }
        if (response.ok) {
          const body = (await response.json().catch(() => undefined)) as { access_token?: unknown; expires_in?: unknown; token_type?: unknown } | undefined;
          if (typeof body?.access_token !== 'string' || !body.access_token || typeof body.token_type !== 'string' || body.token_type.toLowerCase() !== 'bearer') {
            throw new DeviceRiskError(ERR_INVALID_RESPONSE, 'token response lacks access_token or a Bearer token_type', { operation: 'token', status: response.status });
          }
          const issuedAt = now();
          await store.set(key, { accessToken: body.access_token, issuedAt, expiresAt: issuedAt + tokenLifetimeSeconds(body.expires_in) * 1000 });
          return body.access_token;
        }
        const summary = await upstreamSummary(response);
        const retryAfter = retryAfterSeconds(response);
        if (response.status === 429) {
          lastError = new DeviceRiskError(ERR_RATE_LIMITED, `token service rate limit reached (429)${summary}`, { status: 429, operation: 'token', ...(retryAfter === undefined ? {} : { retryAfter }) });
          // A long Retry-After is the service's answer for now: say so at once instead of stalling every caller.
          if (retryAfter !== undefined && retryAfter * 1000 > maxRetryAfterMs) throw lastError;
          await wait(retryAfter !== undefined ? retryAfter * 1000 : Math.random() * BASE_BACKOFF_MS * 2 ** attempt, lastError);
          continue;
        }
        if (response.status >= 500) {
          lastError = new DeviceRiskError(ERR_UPSTREAM, `token service answered ${response.status}${summary}`, { status: response.status, operation: 'token' });
          await wait(Math.random() * BASE_BACKOFF_MS * 2 ** attempt, lastError);
          continue;
        }
        // 3xx (redirects are not followed), 400, 401, 403: retrying cannot help.
        throw new DeviceRiskError(ERR_TOKEN_REJECTED, `token service refused the client-credentials request with ${response.status}${summary}`, { status: response.status, operation: 'token' });
      }
      throw lastError!;
    } catch (error) {
      if (callerSignal?.aborted && error === callerSignal.reason) throw error;
      if (limit.expired && !(error instanceof DeviceRiskError)) throw timedOut(error);
      throw error;
    } finally {
      limit.clear();
    }
  }

  return {
    tokenUrl,
    async getToken({ signal } = {}) {
      const cached = await store.get(key);
      if (cached && fresh(cached)) return cached.accessToken;
      // Concurrent callers share one request; a failed request is not cached.
      inFlight ??= requestToken(signal).finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
    async invalidate() {
      await store.delete(key);
    },
  };
}
