/**
 * The integrator endpoint behind the browser package's `post` option:
 * POST { "blackbox": "..." } -> account create/update, upload, finalize (check.ts), under
 * the browser's Idempotency-Key (idempotency.ts), with the capture nonce checked (nonce.ts)
 * and the blackbox repaired when a page mangled it (repair.ts). Its HTTP answers are here.
 */
import type { DeviceRiskClient } from '../api/device-risk-client.js';
import {
  DeviceRiskError,
  ERR_FORGED_ADDRESS,
  ERR_IDEMPOTENCY_KEY_IN_USE,
  ERR_INVALID_ACCOUNT_REQUEST,
  ERR_INVALID_BLACKBOX,
  ERR_INVALID_CONFIGURATION,
  ERR_NETWORK,
  ERR_NONCE_EXPIRED,
  ERR_NONCE_INVALID,
  ERR_NONCE_MISSING,
  ERR_NONCE_REUSED,
  ERR_RATE_LIMITED,
  ERR_REQUEST_REJECTED,
  ERR_STORE_FULL,
  ERR_STORE_UNAVAILABLE,
  isDeviceRiskError,
  logError,
} from '../errors.js';
import { systemNow } from '../clock.js';
import { createMemoryStore, fromStore, keyPart, withTimeLimit, type Store } from '../store/store.js';
import { ownerMark } from '../store/lease.js';
import { repairBlackbox, type BlackboxRepair } from './repair.js';
import { verifyCaptureNonce, type VerifiedNonce } from './nonce.js';
import type { DeviceRiskDetails } from '../api/result.js';
import {
  REFUSED_BODY_TOO_LARGE,
  REFUSED_CUSTOMER_LOOKUP,
  REFUSED_INTERNAL,
  REFUSED_INVALID_KEY,
  REFUSED_MEDIA_TYPE,
  REFUSED_METHOD,
  REFUSED_ORIGIN,
  REFUSED_TOO_MANY_CHECKOUTS,
  REFUSED_TOO_MANY_REPORTS,
  bodyTimedOut,
  isBodyTimeout,
  json,
  readLimited,
  refuse,
} from '../http.js';
import { recordOutcome, recordRepairs } from '../metrics.js';
import { parseOutcome } from './outcome.js';
import type { CaptureOutcome } from '../../shared/types.js';
import {
  runDeviceRiskCheck,
  type CustomerMapping,
  type DeviceRiskCheckOptions,
  type DeviceRiskProgress,
} from './check.js';
import { createIdempotency, fingerprintOf, inUse } from './idempotency.js';
import { outcomeReports } from './reports.js';
import { checkRateLimit, createLimiter, type Limiter, type RateLimit } from './admission.js';
import type { RequestContext } from '../node.js';

export interface DeviceRiskHandlerOptions {
  client: DeviceRiskClient;
  /** Origins allowed to post, e.g. ["https://shop.example"]. */
  allowedOrigins: readonly string[];
  /** Maps the request to your customer; return a Response (e.g. 401) to refuse it. */
  resolveCustomer: (
    request: Request,
    context?: RequestContext,
  ) => CustomerMapping | Response | Promise<CustomerMapping | Response>;
  /** Default workflow definition key. */
  workflowKey?: string | number;
  /** Largest request body in bytes. Default 16384. */
  maxBodyBytes?: number;
  /** Read the transaction's status after finalize for the answer. Default true. */
  reportStatus?: boolean;
  /**
   * Where Idempotency-Key records, their leases and nonce claims live. Give every instance of
   * a fleet the same shared store (createRedisStore). Default: this process's memory, holding
   * `idempotencyMaxKeys` keys.
   */
  store?: Store;
  /** Time limit of each call to `store` in ms: a store that hangs is answered 503 with Retry-After, as one that is down. Default 3000. */
  storeTimeoutMs?: number;
  /** How long an Idempotency-Key is remembered, in ms. Default 24 hours. */
  idempotencyTtlMs?: number;
  /**
   * Keys (with their nonce claims) the default memory store holds at most. None is dropped
   * before `idempotencyTtlMs`: when it is full, new checkouts are answered 503 `store_full`
   * with Retry-After until old keys expire. Default 100000; above that, use a shared store.
   */
  idempotencyMaxKeys?: number;
  /** How long an instance holds a key it works on without renewing its lease, in ms: a dead owner's key is taken over after it. Default 10000. */
  idempotencyLeaseMs?: number;
  /**
   * How long a request waits, on another attempt working on its key or on a shared store that
   * is away, before answering 409 or 503 with Retry-After, in ms. Default 5000: half the
   * browser package's time limit for its POST (10 s), so that the answer reaches it.
   */
  idempotencyWaitMs?: number;
  /** Told about every failure (errors serialise without secrets). Default: one line on console.error. */
  onError?: (error: unknown) => void;
  /**
   * Replay protection (defence in depth): the secret of `createCaptureNonce`. Given, every
   * request must carry the nonce issued for its customer (`{ blackbox, nonce }`), unexpired
   * and not used before (an atomic claim in `store`: once across a fleet; a retry with the
   * same Idempotency-Key may carry it again).
   */
  nonceSecret?: string;
  /** What the nonce was issued for. Default the customer's `customerInternalReference`. */
  nonceSubject?: (request: Request, customer: CustomerMapping) => string;
  /** Told when a blackbox damaged on its way (spaces for "+", percent-encoding, …) was repaired: count these, then fix the form code. */
  onRepair?: (repairs: BlackboxRepair[]) => void;
  /**
   * Told how each capture went, as the page reported it: with the blackbox (`{ blackbox,
   * outcome }`, once per Idempotency-Key), or alone when the capture produced none
   * (`{ outcome }`, answered 202). Also recorded as OpenTelemetry metrics when
   * `@opentelemetry/api` is installed. Untrusted input: malformed outcomes are dropped.
   * Outcome-only reports come before any customer is known, so they write nothing to the
   * store: they are bounded (`maxOutcomeReportsPerSecond`) and told once per key per process.
   */
  onOutcome?: (outcome: CaptureOutcome, request: Request) => void;
  /**
   * Checkouts one caller address (`context.clientAddress`) may start: `burst` at once, then
   * `perMinute`; more are answered 429 `too_many_checkouts` with Retry-After before they take
   * store space or a call to the service. Counted per process. Default { burst: 5, perMinute: 6 }:
   * a shopper's page posts once and retries at most three times. Many shoppers behind one
   * address (a corporate proxy, a carrier's NAT): raise it, or set false and rely on
   * `checkoutsPerCustomer` (docs/server.md#admission).
   */
  checkoutsPerAddress?: RateLimit | false;
  /**
   * Checkouts one customer (`customerInternalReference`) may start, as `checkoutsPerAddress`.
   * Default { burst: 5, perMinute: 6 }. Give each guest a reference of its own (a session id):
   * guests sharing one reference share one bucket.
   */
  checkoutsPerCustomer?: RateLimit | false;
  /** Outcome-only reports taken per second by this process; more are answered 429. Default 20 (bursts of 5 times that). */
  maxOutcomeReportsPerSecond?: number;
  /**
   * Your synchronous decision on the server (see runDeviceRiskCheck); the browser only ever
   * gets the reference. What it does never changes the browser's answer: a throw goes to `onError`.
   */
  onResult?: (details: DeviceRiskDetails, options: { signal: AbortSignal }) => void | Promise<void>;
  /** How long `onResult` may take, in ms (its signal aborts then, and `onError` hears `result_handler_timeout`). Default 30000. */
  onResultTimeoutMs?: number;
  /** How long a request waits for the result before answering. Default 0: one read after finalize. */
  resultWaitMs?: number;
  now?: () => number;
}

/** How many checkouts one address or one customer may start, by default. */
const DEFAULT_ADMISSION: RateLimit = { burst: 5, perMinute: 6 };

export function createDeviceRiskHandler(
  options: DeviceRiskHandlerOptions,
): (request: Request, context?: RequestContext) => Promise<Response> {
  const { client } = options;
  if (!Array.isArray(options.allowedOrigins) || options.allowedOrigins.length === 0) {
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, 'allowedOrigins must list the origins of your checkout pages');
  }
  const allowed = new Set(options.allowedOrigins.map((o: string) => new URL(o).origin));
  if (
    options.nonceSecret !== undefined &&
    (typeof options.nonceSecret !== 'string' || options.nonceSecret.length < 32)
  ) {
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, 'nonceSecret must be a string of at least 32 characters');
  }
  const maxBody = options.maxBodyBytes ?? 16 * 1024;
  const ttl = options.idempotencyTtlMs ?? 24 * 3_600_000;
  const leaseMs = options.idempotencyLeaseMs ?? 10_000;
  const waitMs = options.idempotencyWaitMs ?? 5_000;
  const now = options.now ?? systemNow;
  // Each key has a record, a nonce claim and, while worked on, a lease: three entries.
  const store = options.store
    ? withTimeLimit(options.store, options.storeTimeoutMs)
    : createMemoryStore({ maxEntries: 3 * (options.idempotencyMaxKeys ?? 100_000), now });
  const reports = outcomeReports(options.maxOutcomeReportsPerSecond ?? 20, now);
  const namespace = `${keyPart(client.clientId ?? '')}:idempotency`;
  const onError = options.onError ?? logError;
  const limiter = (limit: RateLimit | false | undefined, name: string): Limiter | undefined =>
    limit === false ? undefined : createLimiter(checkRateLimit(limit ?? DEFAULT_ADMISSION, name), now);
  const perAddress = limiter(options.checkoutsPerAddress, 'checkoutsPerAddress');
  const perCustomer = limiter(options.checkoutsPerCustomer, 'checkoutsPerCustomer');
  let toldNoAddress = false;

  /** A refusal when `source` has started too many checkouts, else undefined (and one is counted). */
  function admit(limiter: Limiter | undefined, source: string, what: string): Response | undefined {
    const wait = limiter?.take(source);
    if (!wait) return undefined;
    onError(
      new DeviceRiskError(ERR_RATE_LIMITED, `a checkout was refused: too many from one ${what}`, {
        status: 429,
        retryAfter: wait,
        operation: 'admission',
      }),
    );
    return refuse(429, REFUSED_TOO_MANY_CHECKOUTS, `Too many checkouts from one ${what}; retry later`, {
      'retry-after': String(wait),
    });
  }

  const check = (
    progress: DeviceRiskProgress,
    onProgress?: DeviceRiskCheckOptions['onProgress'],
  ): DeviceRiskCheckOptions => ({
    workflowKey: options.workflowKey,
    reportStatus: options.reportStatus,
    progress,
    now,
    ...(onProgress ? { onProgress } : {}),
    ...(options.onResult
      ? {
          onResult: options.onResult,
          resultWaitMs: options.resultWaitMs ?? 0,
          ...(options.onResultTimeoutMs === undefined ? {} : { onResultTimeoutMs: options.onResultTimeoutMs }),
        }
      : {}),
    onError,
  });

  /** Verifies the nonce and claims it for this Idempotency-Key; a refusal, or undefined to go on. */
  async function claimNonce(nonce: unknown, subject: string, claimant: string): Promise<Response | undefined> {
    if (nonce === undefined || nonce === null || nonce === '')
      return refuse(400, ERR_NONCE_MISSING, 'This endpoint requires the capture nonce issued with the page');
    let verified: VerifiedNonce;
    try {
      verified = await verifyCaptureNonce(nonce, { secret: options.nonceSecret!, subject, now });
    } catch (error) {
      const code = isDeviceRiskError(error) ? error.code : ERR_NONCE_INVALID;
      return refuse(
        code === ERR_NONCE_EXPIRED ? 400 : 403,
        code,
        code === ERR_NONCE_EXPIRED
          ? 'The capture nonce has expired'
          : 'The capture nonce is not valid for this customer',
      );
    }
    const nonceKey = `${keyPart(client.clientId ?? '')}:nonce:${verified.id}`;
    const ttl = Math.max(1, verified.expiresAt - now());
    // A store failure throws store_unavailable: the handler answers it as every other (503, Retry-After).
    if (await fromStore(store.setIfAbsent(nonceKey, claimant, ttl), 'nonce claim')) return undefined;
    // Used before: by this very request's earlier attempt (same key) is fine.
    if ((await fromStore(store.get(nonceKey), 'nonce read')) === claimant) return undefined;
    return refuse(409, ERR_NONCE_REUSED, 'This capture nonce was used before: a blackbox is checked once');
  }

  function tell(outcome: CaptureOutcome, request: Request): void {
    recordOutcome(outcome);
    try {
      options.onOutcome?.(outcome, request);
    } catch (error) {
      onError(error);
    }
  }

  /**
   * An outcome-only report: anyone can send one, before any customer is known, so it writes
   * nothing to the store. Told once per Idempotency-Key (the page retries it once) as far as
   * this process remembers, answered 202; past the rate bound, 429.
   */
  function outcomeOnly(outcome: CaptureOutcome, request: Request): Response {
    if (!reports.take())
      return refuse(429, REFUSED_TOO_MANY_REPORTS, 'Too many outcome reports; this one was not recorded', {
        'retry-after': '1',
      });
    const key = request.headers.get('idempotency-key');
    if (key === null || !/^[\x21-\x7e]{8,200}$/.test(key) || reports.first(key)) tell(outcome, request);
    return json({ recorded: true }, 202);
  }

  const underKey = createIdempotency({
    store,
    client,
    namespace,
    leaseMs,
    waitMs,
    ttlMs: ttl,
    now,
    onError,
  });

  return async (request, context) => {
    if (request.method !== 'POST') return refuse(405, REFUSED_METHOD, 'Use POST', { allow: 'POST' });
    const origin = request.headers.get('origin');
    if (!origin || !allowed.has(origin)) return refuse(403, REFUSED_ORIGIN, 'This origin may not post blackboxes');
    if (!/^application\/json\b/i.test(request.headers.get('content-type') ?? '')) {
      return refuse(415, REFUSED_MEDIA_TYPE, 'Send JSON: Content-Type: application/json');
    }
    let text: string | undefined;
    try {
      text = await readLimited(request, maxBody);
    } catch (error) {
      // A body that trickles in is cut at its time limit: 408, and said.
      if (!isBodyTimeout(error)) throw error;
      onError(error);
      return bodyTimedOut(error);
    }
    if (text === undefined) return refuse(413, REFUSED_BODY_TOO_LARGE, `The body is larger than ${maxBody} bytes`);
    let blackbox: string;
    let nonce: unknown;
    let outcome: CaptureOutcome | undefined;
    try {
      const body = JSON.parse(text) as { blackbox?: unknown; nonce?: unknown; outcome?: unknown } | null;
      nonce = body?.nonce;
      outcome = parseOutcome(body?.outcome);
      // A capture that produced no blackbox: its outcome alone, recorded, no call to the service.
      if (body?.blackbox === undefined && outcome) return outcomeOnly(outcome, request);
      const repaired = repairBlackbox(body?.blackbox);
      blackbox = repaired.blackbox;
      if (repaired.repairs.length) {
        recordRepairs(repaired.repairs);
        options.onRepair?.(repaired.repairs);
      }
    } catch (error) {
      const code = isDeviceRiskError(error) ? error.code : ERR_INVALID_BLACKBOX;
      return refuse(
        400,
        code,
        isDeviceRiskError(error) ? error.message : 'The body must be JSON: { "blackbox": "..." }',
      );
    }
    const key = request.headers.get('idempotency-key');
    if (key !== null && !/^[\x21-\x7e]{8,200}$/.test(key))
      return refuse(400, REFUSED_INVALID_KEY, 'Idempotency-Key must be 8 to 200 visible ASCII characters');

    const address = context?.clientAddress;
    if (address) {
      const refused = admit(perAddress, address, 'address');
      if (refused) return refused;
    } else if (perAddress && !toldNoAddress) {
      toldNoAddress = true;
      // Said once, not as an error: the request goes on, limited per customer only.
      console.warn(
        '[blackbox-capture/server] no caller address was given (pass { clientAddress } as the second argument): checkouts are not limited per address',
      );
    }

    let customer: CustomerMapping | Response;
    try {
      customer = await options.resolveCustomer(request, context);
    } catch (error) {
      onError(error);
      return refuse(500, REFUSED_CUSTOMER_LOOKUP, 'The customer could not be resolved');
    }
    if (customer instanceof Response) return customer;
    const refusedCustomer = admit(perCustomer, customer.customerInternalReference, 'customer');
    if (refusedCustomer) return refusedCustomer;

    try {
      if (options.nonceSecret !== undefined) {
        const refused = await claimNonce(
          nonce,
          options.nonceSubject?.(request, customer) ?? customer.customerInternalReference,
          key ?? ownerMark(),
        );
        if (refused) return refused;
      }
      const told = () => outcome && tell(outcome, request);
      if (key === null) {
        told();
        return json(await runDeviceRiskCheck(client, blackbox, customer, check({})), 200);
      }
      const fingerprint = await fingerprintOf(origin, customer.customerInternalReference, blackbox);
      return await underKey(
        key,
        fingerprint,
        customer.transaction !== undefined,
        (progress, save) => runDeviceRiskCheck(client, blackbox, customer, check(progress, save)),
        told,
      );
    } catch (error) {
      onError(error);
      const status = isDeviceRiskError(error) ? error.status : undefined;
      const code = isDeviceRiskError(error) ? error.code : REFUSED_INTERNAL;
      if (isDeviceRiskError(error) && (error.code === ERR_INVALID_CONFIGURATION || error.code === ERR_FORGED_ADDRESS)) {
        return refuse(500, code, 'The device-risk check is misconfigured');
      }
      // Permanent refusals: no Retry-After, and a 4xx so that the browser does not try again.
      if (code === ERR_INVALID_ACCOUNT_REQUEST)
        return refuse(
          422,
          code,
          'The account request for this customer breaks the service rules; retrying will not help',
        );
      if (code === ERR_REQUEST_REJECTED && status !== undefined && status >= 400 && status < 500 && status !== 429) {
        return refuse(
          status,
          code,
          `The device-risk service refused the request (HTTP ${status}); retrying will not help`,
        );
      }
      // Upstream trouble: tell the browser to try again later with the same key.
      const retryAfter = String(
        Math.min(isDeviceRiskError(error) && error.retryAfter !== undefined ? error.retryAfter : 2, 60),
      );
      if (code === ERR_IDEMPOTENCY_KEY_IN_USE) return inUse(1);
      const unavailable =
        status === 429 ||
        status === 503 ||
        code === ERR_NETWORK ||
        code === ERR_RATE_LIMITED ||
        code === ERR_STORE_UNAVAILABLE ||
        code === ERR_STORE_FULL;
      return refuse(
        unavailable ? 503 : 502,
        code,
        'The device-risk service could not be reached; retry with the same Idempotency-Key',
        { 'retry-after': retryAfter },
      );
    }
  };
}
