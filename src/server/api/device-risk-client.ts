/**
 * The Device Risk calls of the identity-verification API: account create or
 * update, blackbox upload to exactly `api.parts.device_risk`, finalize on
 * `api.workflowExecution`, and status. Addresses the service returns are checked
 * against the configured API origin and the documented shapes before any
 * request carries a token to them.
 */
import {
  DeviceRiskError,
  ERR_ABORTED,
  ERR_FORGED_ADDRESS,
  ERR_INVALID_BLACKBOX,
  ERR_INVALID_ACCOUNT_REQUEST,
  ERR_INVALID_CONFIGURATION,
  ERR_INVALID_RESPONSE,
  ERR_NETWORK,
  ERR_NO_DEVICE_RISK_CREDENTIAL,
  ERR_RATE_LIMITED,
  ERR_REQUEST_REJECTED,
  ERR_RESULT_NOT_READY,
  ERR_TRANSACTION_TOKEN_EXPIRED,
  ERR_WORKFLOW_EXPIRED,
  ERR_UPSTREAM,
} from '../errors.js';
import { requireSecureUrl } from '../secure-url.js';
import { sleep, systemNow } from '../clock.js';
import { deadline, within } from '../deadline.js';
import { recordUpstream } from '../metrics.js';
import { backoffMs, MAX_RETRY_AFTER_SECONDS, retryAfterSeconds, upstreamSummary } from './retry.js';
import { parseDetails, RESULT_SCHEDULE_SECONDS, type DeviceRiskDetails } from './result.js';
import type { Region, TokenSource } from './token-source.js';
import { createRateLimiter, type RateLimiter } from './rate-limit.js';
import { createMemoryStore } from '../store/store.js';

/** The regional API base addresses (docs/vendor-contract.md#the-service). */
export const API_BASE_URLS: Record<Region, string> = {
  US: 'https://account.amer-1.jumio.ai',
  EU: 'https://account.emea-1.jumio.ai',
  SG: 'https://account.apac-1.jumio.ai',
};
export const RETRIEVAL_BASE_URLS: Record<Region, string> = {
  US: 'https://retrieval.amer-1.jumio.ai',
  EU: 'https://retrieval.emea-1.jumio.ai',
  SG: 'https://retrieval.apac-1.jumio.ai',
};

const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
const EXECUTION_SHAPE = new RegExp(`^/api/v1/accounts/${UUID}/workflow-executions/${UUID}$`);
const PART_SHAPE = new RegExp(
  `^/api/v1/accounts/${UUID}/workflow-executions/${UUID}/credentials/${UUID}/parts/DEVICE_RISK$`,
);
/** The blackbox alphabet (base64, "@" in some old ones) and the longest one accepted. */
export const BLACKBOX_PATTERN = /^[A-Za-z0-9+/@]+=*$/;
export const MAX_BLACKBOX_LENGTH = 8001;
const DEFAULT_TRANSACTION_TOKEN_LIFETIME_MS = 30 * 60_000;

export interface AccountRequest {
  customerInternalReference: string;
  workflowDefinition: { key: string | number };
  userReference?: string;
  callbackUrl?: string;
  /** Like "30m" (5m to 60d). Default 30m. */
  tokenLifetime?: string;
  [key: string]: unknown;
}

/**
 * One transaction's Device Risk credential. The transaction token is held
 * privately: it does not show in `JSON.stringify`, logs or `console.log`.
 */
export class DeviceRiskTransaction {
  readonly accountId: string;
  readonly workflowExecutionId: string;
  readonly credentialId: string;
  readonly uploadUrl: string;
  readonly finalizeUrl: string;
  /** Epoch ms after which the transaction token is no longer accepted. */
  readonly tokenExpiresAt: number;
  readonly #token: string;

  constructor(fields: Omit<DeviceRiskTransaction, 'token' | 'toJSON'> & { token: string }) {
    this.accountId = fields.accountId;
    this.workflowExecutionId = fields.workflowExecutionId;
    this.credentialId = fields.credentialId;
    this.uploadUrl = fields.uploadUrl;
    this.finalizeUrl = fields.finalizeUrl;
    this.tokenExpiresAt = fields.tokenExpiresAt;
    this.#token = fields.token;
  }

  /** @internal The bearer token for upload and finalize. */
  get token(): string {
    return this.#token;
  }

  toJSON() {
    const { accountId, workflowExecutionId, credentialId, uploadUrl, finalizeUrl, tokenExpiresAt } = this;
    return { accountId, workflowExecutionId, credentialId, uploadUrl, finalizeUrl, tokenExpiresAt };
  }
}

export interface DeviceRiskClientOptions {
  tokenSource: TokenSource;
  /** US, EU or SG; or give `baseUrl`. */
  region?: Region;
  baseUrl?: string;
  /** Where `status` is read; default the regional retrieval host, or `baseUrl`. */
  retrievalBaseUrl?: string;
  /** Names your company and app, e.g. "AcmeShop Checkout/1.4". */
  userAgent: string;
  fetch?: typeof fetch;
  /** Path of account create (update appends `/{accountId}`). Default `/api/v1/accounts`. */
  accountsPath?: string;
  /** Default PUT (docs/vendor-contract.md#the-service). */
  finalizeMethod?: 'PUT' | 'POST';
  /** Attempts for calls that are safe to repeat. Default 3. */
  maxAttempts?: number;
  /** Time limit of one request in ms. Default 15000. */
  timeoutMs?: number;
  /**
   * Time limit of an account create or update in ms. Default 60000. A create that
   * times out may still have been made by the service, and is not repeated (its
   * outcome is unknown), so keep this well above the service's latency.
   */
  accountTimeoutMs?: number;
  /** A transaction token this close to expiry counts as expired. Default 30 s. */
  expiryMarginMs?: number;
  now?: () => number;
  /** How the client waits between attempts and polls (tests pass one that does not wait). Default a timer. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /**
   * The service's limits per tenant this client keeps, for every instance whose token
   * source shares one store (createRedisStore on a fleet). Default the documented ones
   * (docs/vendor-contract.md#the-service); raise them to what your contract grants.
   */
  limits?: DeviceRiskLimits;
}

/** The service's request limits per tenant (docs/vendor-contract.md#the-service). Upload and finalize have none. */
export interface DeviceRiskLimits {
  /** Account creates and updates a second (the requests that start a transaction). Default 1. */
  accountRequestsPerSecond?: number;
  /**
   * Account requests sent at once before the average applies ("short bursts allowed").
   * Default 5: every window of 5.5 s holds at most 5 of them.
   */
  accountBurst?: number;
  /** Retrievals (status and details reads) a second. Default 15. */
  retrievalsPerSecond?: number;
}

/** The documented defaults (docs/vendor-contract.md#the-service). */
export const DEFAULT_LIMITS: Required<DeviceRiskLimits> = {
  accountRequestsPerSecond: 1,
  accountBurst: 5,
  retrievalsPerSecond: 15,
};

export interface DeviceRiskClient {
  /** The origin of the retrieval API: callbacks' hrefs must point there. */
  readonly retrievalOrigin: string;
  createAccount(body: AccountRequest): Promise<DeviceRiskTransaction>;
  updateAccount(accountId: string, body: AccountRequest): Promise<DeviceRiskTransaction>;
  uploadBlackbox(transaction: DeviceRiskTransaction, blackbox: string): Promise<void>;
  finalize(transaction: DeviceRiskTransaction): Promise<void>;
  status(transaction: Pick<DeviceRiskTransaction, 'accountId' | 'workflowExecutionId'>): Promise<string>;
  /** The workflow details from the retrieval API: the decision, and the Device Risk answer. */
  details(transaction: Pick<DeviceRiskTransaction, 'accountId' | 'workflowExecutionId'>): Promise<DeviceRiskDetails>;
  /**
   * Polls the status on the documented schedule (at most 10 reads, RESULT_SCHEDULE_SECONDS
   * after the upload) and answers the details once it is PROCESSED. Rejects with
   * `workflow_expired` for SESSION_EXPIRED or TOKEN_EXPIRED, `result_not_ready` when the
   * reads run out, and the signal's reason when aborted. Use callbacks where you can: they
   * are the service's authoritative answer (createCallbackHandler).
   */
  waitForResult(
    transaction: Pick<DeviceRiskTransaction, 'accountId' | 'workflowExecutionId'>,
    options?: { signal?: AbortSignal; schedule?: readonly number[] },
  ): Promise<DeviceRiskDetails>;
  /** Picks and checks the Device Risk credential of an account create/update answer. */
  transactionFrom(answer: unknown, tokenLifetimeMs?: number): DeviceRiskTransaction;
  /** The transaction as a string for a shared store: its token sealed with a key derived from the client secret. */
  sealTransaction(transaction: DeviceRiskTransaction): Promise<string>;
  /** The transaction back from `sealTransaction`'s string (on any instance with the same client secret). */
  openTransaction(sealed: string): Promise<DeviceRiskTransaction>;
  /**
   * A `userReference` the kit sets on the account requests it makes when you give none, so
   * that the service's callback for that execution is known as this shop's (`vouches`).
   */
  referenceTag?(): Promise<string>;
  /** Whether a callback's `userReference` is one `referenceTag` made with this client secret. */
  vouches?(userReference: unknown): Promise<boolean>;
  /** The client id (not secret): the namespace of this client's keys in a shared store. */
  readonly clientId: string;
  /** How long an account create may take (`accountTimeoutMs`): how long a create can be on the wire. */
  readonly accountTimeoutMs?: number;
}

/** Checks a blackbox before it is sent anywhere. */
export function checkBlackbox(blackbox: unknown): string {
  if (typeof blackbox !== 'string' || blackbox === '')
    throw new DeviceRiskError(ERR_INVALID_BLACKBOX, 'the blackbox must be a non-empty string');
  if (blackbox.length > MAX_BLACKBOX_LENGTH)
    throw new DeviceRiskError(ERR_INVALID_BLACKBOX, `the blackbox is longer than ${MAX_BLACKBOX_LENGTH} characters`);
  if (!BLACKBOX_PATTERN.test(blackbox))
    throw new DeviceRiskError(
      ERR_INVALID_BLACKBOX,
      'the blackbox has characters outside its alphabet (A-Z a-z 0-9 + / = @): was it form- or URL-encoded?',
    );
  return blackbox;
}

const FORBIDDEN_REFERENCE = /[<>"/;`%{}|]/;

/**
 * The documented rules of an account request (docs/vendor-contract.md#the-service), checked before the
 * call: the service refuses a bad one with a 400 that no retry can mend.
 */
export function checkAccountRequest(body: AccountRequest): void {
  const refuse = (message: string) => {
    throw new DeviceRiskError(ERR_INVALID_ACCOUNT_REQUEST, message, { operation: 'account' });
  };
  const reference = body?.customerInternalReference;
  if (typeof reference !== 'string' || reference === '' || reference.length > 100)
    refuse('customerInternalReference must be 1 to 100 characters');
  if (FORBIDDEN_REFERENCE.test(reference))
    refuse('customerInternalReference must not contain any of < > " / ; ` % { } |');
  const key = body.workflowDefinition?.key;
  if ((typeof key !== 'string' && typeof key !== 'number') || key === '') refuse('workflowDefinition.key is required');
  if (body.userReference !== undefined && (typeof body.userReference !== 'string' || body.userReference.length > 100))
    refuse('userReference must be at most 100 characters');
  if (body.callbackUrl !== undefined && (typeof body.callbackUrl !== 'string' || body.callbackUrl.length > 255))
    refuse('callbackUrl must be at most 255 characters');
  if (body.tokenLifetime !== undefined && !/^\d+[mhd]$/.test(body.tokenLifetime))
    refuse('tokenLifetime must look like "30m", "12h" or "5d"');
}

function lifetimeMs(value: string | undefined): number {
  const match = value === undefined ? undefined : /^(\d+)([mhd])$/.exec(value);
  if (!match) return DEFAULT_TRANSACTION_TOKEN_LIFETIME_MS;
  return Number(match[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'm' | 'h' | 'd'];
}

export function createDeviceRiskClient(options: DeviceRiskClientOptions): DeviceRiskClient {
  if (!options.userAgent?.trim())
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, 'userAgent is required, e.g. "YourCompany YourApp/1.0"');
  const rawBase = options.baseUrl ?? (options.region ? API_BASE_URLS[options.region] : undefined);
  if (!rawBase) throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, 'give region (US, EU, SG) or baseUrl');
  const base = requireSecureUrl(rawBase, 'baseUrl');
  const retrievalBase = requireSecureUrl(
    options.retrievalBaseUrl ?? (options.baseUrl ? options.baseUrl : RETRIEVAL_BASE_URLS[options.region!]),
    'retrievalBaseUrl',
  );
  const doFetch = options.fetch ?? fetch;
  const now = options.now ?? systemNow;
  const maxAttempts = options.maxAttempts ?? 3;
  const timeoutMs = options.timeoutMs ?? 15_000;
  const accountTimeoutMs = options.accountTimeoutMs ?? 60_000;
  const sleepFor = options.sleep ?? sleep;
  const margin = options.expiryMarginMs ?? 30_000;
  const accountsPath = options.accountsPath ?? '/api/v1/accounts';
  const { tokenSource } = options;
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  for (const [name, value] of Object.entries(limits))
    if (!(typeof value === 'number' && value > 0 && value < Infinity))
      throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, `limits.${name} must be a positive number`);
  // The token source's store and namespace: a fleet sharing one store shares these limits.
  // A token source of your own that names no store: this client's memory alone.
  const shared = tokenSource.limitStore ?? { store: createMemoryStore(), keyOf: async (name: string) => name };
  const limiter = (name: string, operation: string, limit: { perSecond: number; burst?: number }) =>
    createRateLimiter({
      ...shared,
      ...limit,
      name,
      operation,
      maxBackoffMs: MAX_RETRY_AFTER_SECONDS * 1000,
      now,
      pause: sleepFor,
    });
  const accountLimiter = limiter('account', 'account', {
    perSecond: limits.accountRequestsPerSecond,
    burst: limits.accountBurst,
  });
  const retrievalLimiter = limiter('retrieval', 'retrieval', { perSecond: limits.retrievalsPerSecond });

  /** The address must be on the API's origin and of the documented shape. */
  function checkAddress(value: unknown, shape: RegExp, what: string): string {
    let url: URL | undefined;
    try {
      url = typeof value === 'string' ? new URL(value) : undefined;
    } catch {
      url = undefined;
    }
    if (!url || url.origin !== base.origin || !shape.test(url.pathname) || url.search || url.hash || url.username) {
      throw new DeviceRiskError(
        ERR_FORGED_ADDRESS,
        `refusing the ${what} address: it is not on ${base.origin} or not of the documented shape`,
      );
    }
    return url.href;
  }

  /**
   * One API call with retries. `repeatable` says whether a 5xx or a network
   * failure may be retried (the call is safe to repeat); 429 always may. A call under one
   * of the service's limits (`limiter`) waits for its slot first, within the call's time
   * limit, and a 429 it gets makes every instance sharing the store back off.
   */
  async function call(
    operation: string,
    url: string,
    init: {
      method: string;
      body?: string;
      bearer: () => Promise<string> | string;
      accessToken?: boolean;
      timeoutMs?: number;
      limiter?: RateLimiter;
      /** The whole call within `timeoutMs` (slot waits, backoffs and every attempt), not each attempt. */
      wholeCall?: boolean;
    },
    repeatable: boolean,
  ): Promise<Response> {
    let lastError: DeviceRiskError | undefined;
    let refreshedToken = false;
    // Waits before the next attempt; after the last one there is nothing to wait for.
    const wait = (attempt: number, ms: number) => (attempt < maxAttempts ? sleepFor(ms) : undefined);
    const attemptMs = init.timeoutMs ?? timeoutMs;
    const started = now();
    const endsAt = started + attemptMs;
    // The limit's waits take at most half the time limit: the request keeps the other half.
    const waitEndsAt = started + attemptMs / 2;
    const callLimit = deadline(attemptMs);
    let waitedUntil: number | undefined;
    try {
      for (let attempt = 1; attempt <= maxAttempts; attempt++) {
        let response: Response;
        const answered = init.limiter
          ? await init.limiter.acquire(callLimit.signal, endsAt, {
              waitEndsAt,
              operation,
              ...(waitedUntil === undefined ? {} : { waitedUntil }),
            })
          : undefined;
        const limit = deadline(init.wholeCall ? Math.max(0, endsAt - now()) : attemptMs);
        let bearer: string | undefined;
        try {
          bearer = await init.bearer();
          response = await doFetch(url, {
            method: init.method,
            headers: {
              authorization: `Bearer ${bearer}`,
              accept: 'application/json',
              'user-agent': options.userAgent,
              ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
            },
            ...(init.body === undefined ? {} : { body: init.body }),
            redirect: 'manual',
            signal: limit.signal,
          });
          // The body is read by the caller: the limit covers it too.
          const body = await within(response.arrayBuffer(), limit.signal);
          const { status, statusText, headers } = response;
          recordUpstream(operation, status);
          response = new Response([101, 204, 205, 304].includes(status) ? null : body, { status, statusText, headers });
        } catch (cause) {
          // Before any wait for a retry: the slot's window runs from the failure.
          await answered?.();
          if (cause instanceof DeviceRiskError) throw cause; // from the token source
          recordUpstream(operation, ERR_NETWORK);
          lastError = new DeviceRiskError(
            ERR_NETWORK,
            `${operation} failed (${limit.expired ? 'no answer in time' : 'network error'})`,
            { operation, cause },
          );
          if (!repeatable) throw lastError;
          await wait(attempt, backoffMs(attempt));
          continue;
        } finally {
          limit.clear();
        }
        await answered?.();
        if (response.ok) return response;
        const summary = await upstreamSummary(response);
        const retryAfter = retryAfterSeconds(response, now);
        if (response.status === 401 && init.accessToken && !refreshedToken) {
          // The cached access token may have been revoked or expired early: get a new one once.
          refreshedToken = true;
          await tokenSource.invalidate(bearer);
          attempt--;
          continue;
        }
        if (response.status === 429 || (response.status >= 500 && repeatable)) {
          lastError = new DeviceRiskError(
            response.status === 429 ? ERR_RATE_LIMITED : ERR_UPSTREAM,
            `${operation} answered ${response.status}${summary}`,
            {
              operation,
              status: response.status,
              ...(retryAfter === undefined ? {} : { retryAfter }),
            },
          );
          const waitMs = backoffMs(attempt, retryAfter, MAX_RETRY_AFTER_SECONDS);
          if (response.status === 429 && init.limiter) {
            // Every instance backs off, not only this one; this one waits here, unless the
            // wait would outlast the call: then the 429 is the answer, with its Retry-After.
            waitedUntil = await init.limiter.backOff(waitMs);
            if (attempt >= maxAttempts || now() + waitMs >= waitEndsAt) throw lastError;
          }
          await wait(attempt, waitMs);
          continue;
        }
        throw new DeviceRiskError(
          response.status >= 500 ? ERR_UPSTREAM : ERR_REQUEST_REJECTED,
          `${operation} answered ${response.status}${summary}`,
          {
            operation,
            status: response.status,
            ...(retryAfter === undefined ? {} : { retryAfter }),
          },
        );
      }
      throw lastError!;
    } finally {
      callLimit.clear();
    }
  }

  function transactionFrom(
    answer: unknown,
    tokenLifetime = DEFAULT_TRANSACTION_TOKEN_LIFETIME_MS,
    issuedAt = now(),
  ): DeviceRiskTransaction {
    const a = answer as
      { account?: { id?: unknown }; workflowExecution?: { id?: unknown; credentials?: unknown } } | undefined;
    const credentials = a?.workflowExecution?.credentials ?? (a as { credentials?: unknown } | undefined)?.credentials;
    if (!Array.isArray(credentials))
      throw new DeviceRiskError(ERR_INVALID_RESPONSE, 'the account answer has no credentials array', {
        operation: 'account',
      });
    const credential = credentials.find(
      (c: { category?: unknown; allowedChannels?: unknown; api?: { parts?: { device_risk?: unknown } } }) =>
        c?.category === 'DATA' &&
        Array.isArray(c.allowedChannels) &&
        c.allowedChannels.includes('API') &&
        typeof c.api?.parts?.device_risk === 'string',
    ) as
      | { id?: unknown; api: { token?: unknown; parts: { device_risk: string }; workflowExecution?: unknown } }
      | undefined;
    if (!credential) {
      throw new DeviceRiskError(
        ERR_NO_DEVICE_RISK_CREDENTIAL,
        'the account answer has no Device Risk credential (category DATA, channel API, api.parts.device_risk): does the workflow include Device Risk?',
        { operation: 'account' },
      );
    }
    const { token } = credential.api;
    if (typeof token !== 'string' || !token)
      throw new DeviceRiskError(ERR_INVALID_RESPONSE, 'the Device Risk credential has no api.token', {
        operation: 'account',
      });
    const uploadUrl = checkAddress(credential.api.parts.device_risk, PART_SHAPE, 'upload (api.parts.device_risk)');
    const finalizeUrl = checkAddress(
      credential.api.workflowExecution,
      EXECUTION_SHAPE,
      'finalize (api.workflowExecution)',
    );
    const [, , , , accountId, , workflowExecutionId, , credentialId] = new URL(uploadUrl).pathname.split('/');
    if (
      finalizeUrl !== uploadUrl.slice(0, finalizeUrl.length) ||
      (credential.id !== undefined && credential.id !== credentialId)
    ) {
      throw new DeviceRiskError(
        ERR_FORGED_ADDRESS,
        'the upload and finalize addresses do not belong to the same transaction and credential',
      );
    }
    return new DeviceRiskTransaction({
      accountId: accountId!,
      workflowExecutionId: workflowExecutionId!,
      credentialId: credentialId!,
      uploadUrl,
      finalizeUrl,
      tokenExpiresAt: issuedAt + tokenLifetime,
      token,
    });
  }

  async function account(operation: string, url: string, method: string, body: AccountRequest, repeatable: boolean) {
    checkAccountRequest(body);
    const started = now();
    const response = await call(
      operation,
      url,
      {
        method,
        body: JSON.stringify(body),
        bearer: () => tokenSource.getToken(),
        accessToken: true,
        timeoutMs: accountTimeoutMs,
        limiter: accountLimiter,
        wholeCall: true,
      },
      repeatable,
    );
    const answer: unknown = await response.json().catch(() => {
      throw new DeviceRiskError(ERR_INVALID_RESPONSE, `${operation} answered with something other than JSON`, {
        operation,
      });
    });
    // The lifetime counts from when the request left, not from when the answer came.
    return transactionFrom(answer, lifetimeMs(body.tokenLifetime), started);
  }

  function usable(transaction: DeviceRiskTransaction, operation: string): void {
    if (!(transaction instanceof DeviceRiskTransaction))
      throw new DeviceRiskError(
        ERR_INVALID_CONFIGURATION,
        `${operation} needs a transaction from createAccount or updateAccount`,
      );
    // Re-check: a transaction object may have been rebuilt from stored data.
    checkAddress(transaction.uploadUrl, PART_SHAPE, 'upload');
    checkAddress(transaction.finalizeUrl, EXECUTION_SHAPE, 'finalize');
    if (now() >= transaction.tokenExpiresAt - margin) {
      throw new DeviceRiskError(
        ERR_TRANSACTION_TOKEN_EXPIRED,
        `the transaction token of workflow execution ${transaction.workflowExecutionId} has expired; update the account for a new one`,
        { operation },
      );
    }
  }

  async function status(
    transaction: Pick<DeviceRiskTransaction, 'accountId' | 'workflowExecutionId'>,
  ): Promise<string> {
    const ids = idsOf(transaction, 'status');
    const url = new URL(
      `/api/v1/accounts/${ids.accountId}/workflow-executions/${ids.workflowExecutionId}/status`,
      retrievalBase,
    ).href;
    const response = await call(
      'status',
      url,
      { method: 'GET', bearer: () => tokenSource.getToken(), accessToken: true, limiter: retrievalLimiter },
      true,
    );
    const body = (await response.json().catch(() => undefined)) as
      { workflowExecution?: { status?: unknown } } | undefined;
    const value = body?.workflowExecution?.status;
    if (typeof value !== 'string')
      throw new DeviceRiskError(ERR_INVALID_RESPONSE, 'status answer lacks workflowExecution.status', {
        operation: 'status',
      });
    return value;
  }

  /** The ids of a transaction, checked: they go into a URL that carries the access token. */
  function idsOf(transaction: Pick<DeviceRiskTransaction, 'accountId' | 'workflowExecutionId'>, operation: string) {
    const { accountId, workflowExecutionId } = transaction ?? {};
    if (![accountId, workflowExecutionId].every((id) => typeof id === 'string' && new RegExp(`^${UUID}$`).test(id))) {
      throw new DeviceRiskError(
        ERR_INVALID_CONFIGURATION,
        `${operation} needs the UUIDs of an account and a workflow execution`,
        { operation },
      );
    }
    return { accountId, workflowExecutionId };
  }

  async function details(
    transaction: Pick<DeviceRiskTransaction, 'accountId' | 'workflowExecutionId'>,
  ): Promise<DeviceRiskDetails> {
    const ids = idsOf(transaction, 'details');
    const url = new URL(
      `/api/v1/accounts/${ids.accountId}/workflow-executions/${ids.workflowExecutionId}`,
      retrievalBase,
    ).href;
    const response = await call(
      'details',
      url,
      { method: 'GET', bearer: () => tokenSource.getToken(), accessToken: true, limiter: retrievalLimiter },
      true,
    );
    return parseDetails(await response.json().catch(() => undefined), ids);
  }

  async function waitForResult(
    transaction: Pick<DeviceRiskTransaction, 'accountId' | 'workflowExecutionId'>,
    { signal, schedule = RESULT_SCHEDULE_SECONDS }: { signal?: AbortSignal; schedule?: readonly number[] } = {},
  ): Promise<DeviceRiskDetails> {
    const ids = idsOf(transaction, 'waitForResult');
    let last = 'unknown';
    let waited = 0;
    const aborted = () =>
      new DeviceRiskError(ERR_ABORTED, `waiting for the result of ${ids.workflowExecutionId} was aborted`, {
        operation: 'waitForResult',
        cause: signal?.reason,
      });
    for (const at of schedule.slice(0, 10)) {
      if (signal?.aborted) throw aborted();
      await sleepFor(Math.max(0, at - waited) * 1000, signal).catch((error: unknown) => {
        throw signal?.aborted ? aborted() : error;
      });
      waited = at;
      if (signal?.aborted) throw aborted();
      last = await status(ids);
      if (last === 'PROCESSED') return details(ids);
      if (last === 'SESSION_EXPIRED' || last === 'TOKEN_EXPIRED') {
        throw new DeviceRiskError(
          ERR_WORKFLOW_EXPIRED,
          `workflow execution ${ids.workflowExecutionId} ended ${last}: it has no result`,
          { operation: 'waitForResult', status: 200 },
        );
      }
    }
    throw new DeviceRiskError(
      ERR_RESULT_NOT_READY,
      `workflow execution ${ids.workflowExecutionId} was still ${last} after ${schedule.slice(0, 10).length} reads`,
      { operation: 'waitForResult' },
    );
  }

  return {
    retrievalOrigin: retrievalBase.origin,
    clientId: tokenSource.clientId,
    accountTimeoutMs,
    async sealTransaction(transaction) {
      return JSON.stringify({ ...transaction.toJSON(), token: await tokenSource.seal(transaction.token) });
    },
    async openTransaction(sealed) {
      const fields = JSON.parse(sealed) as ReturnType<DeviceRiskTransaction['toJSON']> & { token: string };
      return new DeviceRiskTransaction({ ...fields, token: await tokenSource.unseal(fields.token) });
    },
    ...(tokenSource.tagReference && tokenSource.vouches
      ? { referenceTag: () => tokenSource.tagReference!(), vouches: (ref: unknown) => tokenSource.vouches!(ref) }
      : {}),
    transactionFrom,
    status,
    details,
    waitForResult,
    createAccount: (body) => account('account create', new URL(accountsPath, base).href, 'POST', body, false),
    updateAccount(accountId, body) {
      if (!new RegExp(`^${UUID}$`).test(accountId))
        throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, 'accountId must be a UUID');
      return account('account update', new URL(`${accountsPath}/${accountId}`, base).href, 'PUT', body, true);
    },
    async uploadBlackbox(transaction, blackbox) {
      usable(transaction, 'upload');
      const sessionId = checkBlackbox(blackbox);
      // Uploading the same blackbox again is harmless, so failures are retried.
      await call(
        'upload',
        transaction.uploadUrl,
        { method: 'POST', body: JSON.stringify({ sessionId }), bearer: () => transaction.token },
        true,
      );
    },
    async finalize(transaction) {
      usable(transaction, 'finalize');
      try {
        await call(
          'finalize',
          transaction.finalizeUrl,
          { method: options.finalizeMethod ?? 'PUT', bearer: () => transaction.token },
          true,
        );
      } catch (error) {
        // A retried finalize whose first attempt went through answers 409: check before failing.
        if ((error as DeviceRiskError).status === 409 && (await status(transaction).catch(() => '')) === 'PROCESSED')
          return;
        throw error;
      }
    },
  };
}
