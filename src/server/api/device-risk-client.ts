/**
 * The Device Risk calls of the identity-verification API: account create or
 * update on the account host, blackbox upload to exactly the credential's part address,
 * finalize on `api.workflowExecution`, and status on the retrieval host. Each role has a
 * host of its own (regions.ts): the upload and finalize addresses the service returns are
 * checked against the API host (`apiBaseUrl`, by default the region's `api.` host) and the
 * documented shapes before any request carries a token to them. The client puts together one module per operation
 * (account, upload, finalize, retrieval) over one call with retries (call.ts), under the
 * service's limits (rate-limit.ts).
 */
import { checkOptions } from '../options-table.js';
import { CLIENT_OPTIONS } from './settings.js';
import { DeviceRiskError, ERR_INVALID_CONFIGURATION } from '../errors.js';
import { apiMessages } from '../messages.js';
import { requireSecureUrl } from '../net/secure-url.js';
import { sleep, systemNow } from '../time/clock.js';
import { MAX_RETRY_AFTER_SECONDS } from './retry.js';
import type { DeviceRiskDetails } from './result.js';
import type { TokenSource } from './token-source.js';
import { byRegion, isRegion, REGION_NAMES, regionOfOrigin, regionOrigin, type Region } from './regions.js';
import { createRateLimiter, type WindowFrom } from './rate-limit.js';
import { createMemoryStore } from '../store/store.js';
import { createCall } from './call.js';
import { createTransactions, DeviceRiskTransaction } from './transaction.js';
import { createAccountCalls, type AccountRequest } from './account.js';
import { createUpload } from './upload.js';
import { createFinalize } from './finalize.js';
import { createRetrieval } from './retrieval.js';

export { DeviceRiskTransaction } from './transaction.js';
export { checkAccountRequest, type AccountRequest } from './account.js';
export { BLACKBOX_PATTERN, checkBlackbox, MAX_BLACKBOX_LENGTH } from './upload.js';

/** Where account create and update go, per region: its `account.` host (regions.ts). */
export const API_BASE_URLS: Record<Region, string> = byRegion('account');
/** Where the upload and finalize addresses of a create answer are, per region: its `api.` host. */
export const TRANSACTION_BASE_URLS: Record<Region, string> = byRegion('api');
/** Where status and details are read, per region: its `retrieval.` host. */
export const RETRIEVAL_BASE_URLS: Record<Region, string> = byRegion('retrieval');

export interface DeviceRiskClientOptions {
  tokenSource: TokenSource;
  /** A region of REGIONS (regions.ts); or give `baseUrl`. */
  region?: Region;
  /** Where account create and update go; default the region's `account.` host. */
  baseUrl?: string;
  /**
   * The host the upload and finalize addresses of a create answer must be on: any other is
   * refused (`forged_address`) before a token goes to it. Default the region's `api.` host,
   * also when `baseUrl` is a region's documented account host; with another `baseUrl` (a
   * private deployment), that address's own origin.
   */
  apiBaseUrl?: string;
  /** Where `status` and `details` are read; default the region's `retrieval.` host, or `baseUrl`. */
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
   * Default 5: every 5 s from a send holds at most 5 of them. Keep it at most half the
   * service's burst: requests that arrive late may bunch up to twice it.
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

/** The tenant's account limit a client keeps: what a whole fleet's queue drains at, at most. */
export function contractedRate(client: { readonly limits?: Readonly<Partial<DeviceRiskLimits>> }): number {
  return client.limits?.accountRequestsPerSecond ?? DEFAULT_LIMITS.accountRequestsPerSecond;
}

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
  /** The service is on loopback (the emulator): a callbackUrl on loopback is allowed then. */
  readonly localService?: boolean;
  /** The client id (not secret): the namespace of this client's keys in a shared store. */
  readonly clientId: string;
  /** The limits this client keeps (`limits`, with the documented defaults): the endpoint sizes its queue by them. */
  readonly limits?: Readonly<Required<DeviceRiskLimits>>;
  /** How long an account create may take (`accountTimeoutMs`): how long a create can be on the wire. */
  readonly accountTimeoutMs?: number;
  /** How long one upload request can be on the wire (`timeoutMs`): an owner that dies leaves at most that one. */
  readonly uploadTimeoutMs?: number;
}

/**
 * The three hosts a client calls, from `region` or the addresses given: each role on its own
 * (docs/vendor-contract.md#hosts-by-role). A `baseUrl` that is a region's documented account
 * host brings that region's API and retrieval hosts; any other stands for every role.
 */
function hostsOf(options: DeviceRiskClientOptions): { base: URL; apiBase: URL; retrievalBase: URL } {
  if (options.region !== undefined && !isRegion(options.region))
    throw new DeviceRiskError(
      ERR_INVALID_CONFIGURATION,
      apiMessages.unknownRegion(String(options.region), REGION_NAMES),
    );
  const rawBase = options.baseUrl ?? (options.region ? API_BASE_URLS[options.region] : undefined);
  if (!rawBase) throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, apiMessages.regionOrBaseUrl(REGION_NAMES));
  const base = requireSecureUrl(rawBase, 'baseUrl');
  const region = options.baseUrl === undefined ? options.region : regionOfOrigin(base.origin, 'account');
  const apiBase = requireSecureUrl(
    options.apiBaseUrl ?? (region ? regionOrigin(region, 'api') : base.origin),
    'apiBaseUrl',
  );
  const retrievalBase = requireSecureUrl(
    options.retrievalBaseUrl ?? (region ? regionOrigin(region, 'retrieval') : rawBase),
    'retrievalBaseUrl',
  );
  return { base, apiBase, retrievalBase };
}

export function createDeviceRiskClient(options: DeviceRiskClientOptions): DeviceRiskClient {
  if (!options.userAgent?.trim()) throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, apiMessages.userAgentRequired);
  const { base, apiBase, retrievalBase } = hostsOf(options);
  checkOptions(options, CLIENT_OPTIONS);
  const defaults = CLIENT_OPTIONS;
  const doFetch = options.fetch ?? fetch;
  const now = options.now ?? systemNow;
  const maxAttempts = options.maxAttempts ?? defaults.maxAttempts.default;
  const timeoutMs = options.timeoutMs ?? defaults.timeoutMs.default;
  const accountTimeoutMs = options.accountTimeoutMs ?? defaults.accountTimeoutMs.default;
  const sleepFor = options.sleep ?? sleep;
  const margin = options.expiryMarginMs ?? defaults.expiryMarginMs.default;
  const accountsPath = options.accountsPath ?? defaults.accountsPath.default;
  const { tokenSource } = options;
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  for (const [name, value] of Object.entries(limits))
    if (!(typeof value === 'number' && value > 0 && value < Infinity))
      throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, apiMessages.limitNotPositive(name));
  // The token source's store and namespace: a fleet sharing one store shares these limits.
  // A token source of your own that names no store: this client's memory alone.
  const shared = tokenSource.limitStore ?? { store: createMemoryStore(), keyOf: async (name: string) => name };
  const limiter = (
    name: string,
    operation: string,
    limit: { perSecond: number; burst?: number; windowFrom?: WindowFrom },
  ) =>
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
    // The service takes short bursts (10 by default): the whole quota, counted from the send.
    windowFrom: 'send',
  });
  const retrievalLimiter = limiter('retrieval', 'retrieval', { perSecond: limits.retrievalsPerSecond });
  const call = createCall({
    userAgent: options.userAgent,
    fetch: doFetch,
    now,
    sleep: sleepFor,
    maxAttempts,
    timeoutMs,
    tokenSource,
  });
  const transactions = createTransactions(apiBase, now, margin);
  // Against a service on loopback (the emulator), a callbackUrl on loopback too is allowed.
  const localService = base.protocol === 'http:';
  const accounts = createAccountCalls({
    call,
    transactions,
    tokenSource,
    now,
    base,
    accountsPath,
    accountTimeoutMs,
    limiter: accountLimiter,
    localService,
  });
  const retrieval = createRetrieval({ call, tokenSource, retrievalBase, limiter: retrievalLimiter, sleep: sleepFor });

  return {
    retrievalOrigin: retrievalBase.origin,
    localService,
    clientId: tokenSource.clientId,
    limits,
    accountTimeoutMs,
    uploadTimeoutMs: timeoutMs,
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
    transactionFrom: (answer, tokenLifetimeMs) => transactions.transactionFrom(answer, tokenLifetimeMs),
    ...retrieval,
    ...accounts,
    uploadBlackbox: createUpload(call, transactions),
    finalize: createFinalize(
      call,
      transactions,
      options.finalizeMethod ?? defaults.finalizeMethod.default,
      retrieval.status,
    ),
  };
}
