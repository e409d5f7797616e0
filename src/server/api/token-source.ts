/**
 * OAuth 2.0 client-credentials token source for the identity-verification API.
 * One cached access token per client, refreshed shortly before it expires (token/cache.ts);
 * concurrent callers share one request, each waiting for it under its own signal, and a fleet
 * one instance's (a lock in the store);
 * at most N token requests a second for everything sharing the store (rate-limit.ts); 429
 * waits and retries; 400/401/403 fail at once (token/request.ts).
 */
import { checkOptions } from '../options-table.js';
import { TOKEN_SOURCE_OPTIONS } from './settings.js';
import { DeviceRiskError, ERR_INVALID_CONFIGURATION, ERR_NETWORK } from '../errors.js';
import { apiMessages, tokenMessages } from '../messages.js';
import { requireSecureUrl } from '../net/secure-url.js';
import { sleep, systemNow } from '../time/clock.js';
import { createReferenceTagger, createSealer, storeNamespace } from './seal.js';
import { deadline, within } from '../time/deadline.js';
import { createMemoryStore, withTimeLimit, type Store } from '../store/store.js';
import { takeLease } from '../store/lease.js';
import { createRateLimiter } from './rate-limit.js';
import { createTokenCache } from './token/cache.js';
import { createTokenRequest, failureWithin } from './token/request.js';
import { byRegion, isRegion, REGION_NAMES, type Region } from './regions.js';

export type { Region } from './regions.js';

/** The regional token addresses, on each region's `auth.` host (regions.ts). */
export const TOKEN_URLS: Record<Region, string> = byRegion('auth', '/oauth2/token');

export interface CachedToken {
  accessToken: string;
  /** Epoch ms at which the service stops accepting it. */
  expiresAt: number;
  /** Epoch ms at which it was issued. */
  issuedAt?: number;
}

export interface TokenSourceOptions {
  clientId: string;
  clientSecret: string;
  /** A region of REGIONS (regions.ts); or give `tokenUrl`. */
  region?: Region;
  tokenUrl?: string;
  /** Names your company and app, e.g. "AcmeShop Checkout/1.4" (the service refuses library defaults). */
  userAgent: string;
  fetch?: typeof fetch;
  /**
   * Where the token, the rate limit and the 429 backoff are kept. Give every instance of a
   * fleet the same shared store (createRedisStore): one instance fetches, the others wait
   * for its token. Default: this source's own memory, made with it and gone with it (two
   * sources share a token only through a store given to both).
   */
  store?: Store;
  /** Time limit of each store call in ms: a store that hangs counts as failed (`store_unavailable`). Default 3000. */
  storeTimeoutMs?: number;
  /** How long a fetching instance holds the fleet's token lock without renewing it, in ms. Default 3000. */
  lockLeaseMs?: number;
  /** Refresh this many seconds before expiry. Default 60. */
  refreshMarginSeconds?: number;
  /** Token requests allowed per second for this client id, across everything sharing the store. Default 10 (the service's limit). */
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
  /**
   * How retries and 429 backoffs wait (tests pass one that does not wait). Default a timer.
   * Waits for a rate-limit slot or for another instance's token always use a timer.
   */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The clock of token expiry and of 429 backoffs. Default `Date.now`. */
  now?: () => number;
}

export interface TokenSource {
  /**
   * A valid access token, from the cache or a new request. `signal` ends this call's wait
   * alone: other callers sharing the request still get the token.
   */
  getToken(options?: { signal?: AbortSignal }): Promise<string>;
  /** Forget the cached token (after the API refused it), unless another instance has already replaced it. */
  invalidate(refused?: string): Promise<void>;
  /**
   * The client id (not secret). The source's own keys in a store are bound to the secret
   * too: sources holding the same secret share a token, a source with another secret shares
   * nothing with them.
   */
  readonly clientId: string;
  /**
   * Encrypts a secret (a transaction token) for a shared store: AES-256-GCM with a key
   * derived from the client secret (HKDF-SHA-256), so that every instance of the fleet can
   * open it and the store never holds it in clear text.
   */
  seal(secret: string): Promise<string>;
  /** Opens what `seal` produced; rejects (`invalid_response`) when it was altered or sealed with another secret. */
  unseal(sealed: string): Promise<string>;
  /** A new `userReference` that `vouches` recognises (seal.ts, createReferenceTagger). */
  tagReference?(): Promise<string>;
  /** Whether a callback's `userReference` is one `tagReference` made with this client secret. */
  vouches?(reference: unknown): Promise<boolean>;
  /** The origin of the token service, for logs. */
  readonly tokenUrl: string;
  /**
   * Where the Device Risk client keeps the service's other limits (rate-limit.ts): this
   * source's store, under keys bound to its client id and secret.
   */
  readonly limitStore?: { store: Store; keyOf: (name: string) => Promise<string> };
}

export { TOKEN_LIFETIME_BOUNDS, tokenLifetimeSeconds } from './token/cache.js';

/** How often an instance waiting for another's token looks for it, in ms. */
const LOCK_POLL_MS = 25;

export function createTokenSource(options: TokenSourceOptions): TokenSource {
  const { clientId, clientSecret } = options;
  if (!clientId || !clientSecret)
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, tokenMessages.credentialsRequired);
  if (!options.userAgent?.trim()) throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, apiMessages.userAgentRequired);
  const rawUrl = options.tokenUrl ?? (isRegion(options.region) ? TOKEN_URLS[options.region] : undefined);
  if (!rawUrl) throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, tokenMessages.regionOrTokenUrl(REGION_NAMES));
  const tokenUrl = requireSecureUrl(rawUrl, 'tokenUrl').href;
  checkOptions(options, TOKEN_SOURCE_OPTIONS);
  const defaults = TOKEN_SOURCE_OPTIONS;
  const doFetch = options.fetch ?? fetch;
  // A store of its own unless given one: no state of the module's outlives the source, and what
  // sources share is what the shop gave them (the client's one source: createDeviceRiskClient).
  const store = options.store ? withTimeLimit(options.store, options.storeTimeoutMs) : createMemoryStore();
  const leaseMs = options.lockLeaseMs ?? defaults.lockLeaseMs.default;
  const now = options.now ?? systemNow;
  const pause = options.sleep ?? sleep;
  const marginMs = (options.refreshMarginSeconds ?? defaults.refreshMarginSeconds.default) * 1000;
  const perSecond = options.maxRequestsPerSecond ?? defaults.maxRequestsPerSecond.default;
  const maxAttempts = options.maxAttempts ?? defaults.maxAttempts.default;
  const timeoutMs = options.timeoutMs ?? defaults.timeoutMs.default;
  const maxRetryAfterMs = (options.maxRetryAfterSeconds ?? defaults.maxRetryAfterSeconds.default) * 1000;
  // Keys name the client, the token service and a tag of the secret, never the secret: a
  // source can only ever find a token fetched with its own secret (and its own lock, backoff
  // and rate slots, so that a wrong secret cannot hold up the right one either).
  let namespace: Promise<string> | undefined;
  const keyOf = async (name: string) =>
    `${await (namespace ??= storeNamespace(clientId, clientSecret, tokenUrl))}:${name}`;
  // RFC 6749 2.3.1: form-encode both, then Basic. btoa rather than Buffer: edge runtimes have no Buffer.
  const formEncode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
  const authorization = 'Basic ' + btoa(`${formEncode(clientId)}:${formEncode(clientSecret)}`);
  /** The request this process's callers share, and how many of them still wait for it. */
  let inFlight: { token: Promise<string>; abandon: AbortController; waiting: number } | undefined;
  // docs/vendor-contract.md#the-service: 10 token requests a second per tenant, then 429.
  const limiter = createRateLimiter({
    store,
    keyOf,
    name: 'token',
    operation: 'token',
    perSecond,
    maxBackoffMs: maxRetryAfterMs,
    now,
    pause,
  });
  const { seal, unseal } = createSealer(clientId, clientSecret);
  const tagger = createReferenceTagger(clientId, clientSecret);
  const cache = createTokenCache({ store, keyOf, now, marginMs, seal, unseal });
  const { storedToken } = cache;
  const requestToken = createTokenRequest({
    tokenUrl,
    authorization,
    userAgent: options.userAgent,
    fetch: doFetch,
    now,
    pause,
    maxAttempts,
    timeoutMs,
    maxRetryAfterMs,
    limiter,
    cache,
  });

  const waitedInVain = (cause: unknown) =>
    new DeviceRiskError(ERR_NETWORK, tokenMessages.noTokenWhileWaiting(new URL(tokenUrl).origin, timeoutMs), {
      operation: 'token',
      cause,
    });

  /**
   * The fleet's token: the instance holding the lock fetches, the others wait for the token
   * it stores. The lock is a lease renewed while the fetch runs, so an instance that dies
   * holding it blocks the others for at most `lockLeaseMs`.
   */
  async function obtain(callerSignal?: AbortSignal): Promise<string> {
    const limit = deadline(timeoutMs, callerSignal);
    try {
      for (;;) {
        const token = await storedToken();
        if (token) return token.accessToken;
        const lock = await takeLease(store, await keyOf('token-lock'), leaseMs, 'token lock');
        if (lock) {
          try {
            // Another instance may have stored a token between the read and the lock. The request
            // runs within what is left of this call's limit: `timeoutMs` bounds the whole call,
            // the wait for another instance's lock included (docs/answer.md, createTokenSource).
            return (await storedToken())?.accessToken ?? (await requestToken(limit.signal));
          } finally {
            await lock.release();
          }
        }
        await sleep(LOCK_POLL_MS, limit.signal);
      }
    } catch (error) {
      throw failureWithin(error, limit, waitedInVain, callerSignal);
    } finally {
      limit.clear();
    }
  }

  return {
    tokenUrl,
    clientId,
    limitStore: { store, keyOf },
    seal,
    unseal,
    tagReference: tagger.tag,
    vouches: tagger.vouches,
    async getToken({ signal } = {}) {
      const cached = await storedToken();
      if (cached) return cached.accessToken;
      if (signal?.aborted) throw signal.reason;
      // Concurrent callers in this process share one request; a failed request is not cached.
      // The request is no caller's: it runs under its own time limit (`timeoutMs`, in obtain),
      // and each caller's signal ends only that caller's wait, with its own reason
      // (docs/answer.md, createTokenSource). Once every caller waiting for it has left, it is
      // given up, so that no request outlives its callers.
      if (!inFlight) {
        const abandon = new AbortController();
        const started = {
          abandon,
          waiting: 0,
          token: obtain(abandon.signal).finally(() => {
            if (inFlight === started) inFlight = undefined;
          }),
        };
        inFlight = started;
      }
      const shared = inFlight;
      shared.waiting++;
      if (!signal) return shared.token;
      try {
        return await within(shared.token, signal);
      } catch (error) {
        if (signal.aborted && error === signal.reason && --shared.waiting === 0) {
          // The next caller starts a request of its own rather than joining one given up.
          if (inFlight === shared) inFlight = undefined;
          shared.abandon.abort(error);
        }
        throw error;
      }
    },
    invalidate: (refused) => cache.invalidate(refused),
  };
}
