/**
 * The integrator endpoint behind the browser package's `post` option:
 * POST { "blackbox": "..." } -> account create/update, upload, finalize (check.ts), under
 * the browser's Idempotency-Key (idempotency.ts), with the capture nonce checked (nonce.ts)
 * and the blackbox repaired when a page mangled it (repair.ts). Its HTTP answers are here.
 */
import type { DeviceRiskClient } from '../api/device-risk-client.js';
import { referenceRuleBroken } from '../api/account.js';
import {
  DeviceRiskError,
  ERR_INVALID_ACCOUNT_REQUEST,
  ERR_INVALID_BLACKBOX,
  ERR_INVALID_CONFIGURATION,
  ERR_RATE_LIMITED,
  ERR_SHUTTING_DOWN,
  isDeviceRiskError,
} from '../errors.js';
import { endpointMessages, MESSAGE_PREFIX } from '../messages.js';
import { createMemoryStore, keyPart, storeWhenReady, withTimeLimit, type Store } from '../store/store.js';
import { ownerMark } from '../store/lease.js';
import { defaultToldStore, toldMarkers, type ToldMarkers } from '../callbacks/told.js';
import { repairBlackbox, type BlackboxRepair } from './repair.js';
import type { DeviceRiskDetails } from '../api/result.js';
import {
  REFUSED_BODY_TOO_LARGE,
  REFUSED_CUSTOMER_LOOKUP,
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
} from '../net/http.js';
import { recordOutcome, recordRepairs } from '../metrics.js';
import { parseOutcome } from './outcome.js';
import type { CaptureOutcome } from '../../shared/types.js';
import { runCheck, type CustomerMapping, type CheckRunOptions, type DeviceRiskProgress } from './check.js';
import { createIdempotency, fingerprintOf } from './idempotency.js';
import { outcomeReports } from './reports.js';
import {
  accountVisitor,
  checkRateLimit,
  createLimiter,
  shopVisitor,
  type Limiter,
  type RateLimit,
  type VisitorOf,
} from './admission.js';
import { addressGroup, type AddressPrefix } from '../net/address.js';
import type { RequestContext } from '../fetch-handler.js';
import { claimNonce } from './nonce-claim.js';
import { claimBlackbox } from './reuse.js';
import { failureAnswer, namedFailure } from './failure-answer.js';
import { createQueuedChecks } from './queued.js';
import { endpointSettings, type EndpointPlainOptions, type EndpointSettings } from './settings.js';
import type { CheckQueue, QueuePlace } from '../queue/queue.js';
import { createDefaultQueue, type DefaultQueue } from '../queue/default.js';
import type { BacklogFigures } from '../queue/backlog.js';

/**
 * The endpoint's options: the plain ones (numbers and switches) are each one row of
 * src/server/endpoint/settings.ts (`EndpointPlainOptions`), member, default and check together.
 */
export interface DeviceRiskHandlerOptions extends EndpointPlainOptions {
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
  /**
   * The callback URL of every checkout whose `resolveCustomer` names none. Checked when the
   * handler is made against the service's rules (HTTPS, a host name, no port, no fragment, at
   * most 255 characters; docs/vendor-contract.md#the-account-request): a URL the service would
   * refuse is `invalid_configuration` naming the rule. On loopback against the emulator, any.
   */
  callbackUrl?: string;
  /**
   * When the browser is answered (docs/answer.md#the-browsers-answer). `'accepted'` (the
   * default): 202 `{ accepted, reference }` as soon as `queue` holds the checkout, which is
   * then checked as fast as the tenant's limits allow. `'checked'`: 200 with the transaction's
   * reference after finalize, the check run within the request (the default in Cloudflare
   * Workers, whose isolates keep no work after the answer).
   */
  answer?: 'accepted' | 'checked';
  /**
   * Where accepted checkouts wait (answer `'accepted'`). Default a file queue in `dataDir`
   * (processes on one directory share it; this process's memory in the edge build, which has no file system),
   * holding `maxQueuedChecks`; a fleet gives every instance the same
   * `createBullmqQueue` (blackbox-capture/server/bullmq), so that any instance checks them and
   * none is lost with the instance that accepted it. A `store` other than
   * `createMemoryStore` with no queue is refused (`invalid_configuration`): give one, even
   * `createMemoryQueue()` on purpose, or answer `'checked'` (docs/fleet.md#a-shared-store-needs-a-shared-queue).
   */
  queue?: CheckQueue;
  /**
   * Where the default queue keeps its SQLite file (`blackbox-capture.sqlite`, 0600), the directory
   * made (0700) when missing. Default the env BLACKBOX_CAPTURE_DATA_DIR, else `.blackbox-capture`
   * in the working directory. One that cannot be written, or a damaged file, is told to onError
   * at start and every checkout is answered 503 `invalid_configuration`; a full disk, 503
   * `store_full` until there is room (docs/server.md#the-data-directory).
   */
  dataDir?: string;
  /**
   * Checkouts the default queue holds at most; more are answered 503 `queue_full` with
   * Retry-After at once, the blackbox left in the form for a later post. Default what can be
   * checked within the trust bound at the client's limits: `accountRequestsPerSecond` (1 by
   * default) × `maxQueuedMs` (15 minutes), 900 (docs/server.md#admission). Never accepted to go stale.
   */
  maxQueuedChecks?: number;
  /**
   * This instance's name in the queue's OpenTelemetry gauges (the attribute `instance`), so
   * that a fleet's series stay apart: stable for the life of the process. Default hostname:pid
   * (docs/operating.md#queue-metrics).
   */
  instanceId?: string;
  /**
   * Where Idempotency-Key records, their leases and nonce claims live, and each decision is
   * marked told. Give every instance of a fleet the same shared store (createRedisStore), and
   * the callback handler the same one: a decision is then told once, by whichever brings it
   * first. Default: with the default queue, its data file (docs/server.md#the-data-directory);
   * otherwise (a queue given, the edge build, `answer: 'checked'`) this process's memory, holding
   * `idempotencyMaxKeys` keys. The told markers stay in memory per client either way, which a
   * callback handler made with the same client and no store shares.
   */
  store?: Store;
  /**
   * Told about every failure (errors serialise without secrets). Default: one line on
   * console.error. For a `NotCheckedError` (a queued checkout given up) it may return a
   * promise, the telling of the shop: the checkout leaves the queue once it resolves, and one
   * that rejects keeps it queued, to be told again (docs/server.md#shutting-down).
   */
  onError?: (error: unknown) => unknown;
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
   * Checkouts one caller (`context.clientAddress`, by its network: `addressPrefix`) may start:
   * `burst` at once, then `perMinute`; more are answered 429 `too_many_checkouts` with
   * Retry-After before they take store space or a call to the service. Counted per process. Default { burst: 5, perMinute: 6 }:
   * a shopper's page posts once and retries at most three times. Many shoppers behind one
   * address (a corporate proxy, a carrier's NAT): raise it, or set false and rely on
   * `checkoutsPerCustomer` (docs/server.md#admission).
   */
  checkoutsPerAddress?: RateLimit | false;
  /**
   * How many leading bits of a caller address name one visitor: its network counts as one
   * address for `checkoutsPerAddress` and takes one turn in the memory queue's fair order.
   * Default { ipv4: 32, ipv6: 64 }: one party holds a whole IPv6 /64 and can post from any of
   * its addresses. An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) is its IPv4 address.
   */
  addressPrefix?: AddressPrefix;
  /**
   * Your own notion of a visitor, read from the request: its session or cart id (from your
   * session cookie), or undefined when it carries none. Given, it is the visitor that
   * `checkoutsPerAddress` counts and the queue takes turns by, instead of the caller's network;
   * every request it names no visitor for counts as one visitor together, so that a flood from
   * many addresses that never got a session shares one bucket and one turn
   * (docs/fleet.md#many-addresses). The id is hashed before use. Anything but a function is
   * `invalid_configuration` when the handler is made; a function that throws or returns
   * anything but a string of 1 to 1024 characters or undefined is answered 500
   * `customer_lookup_failed` and told to `onError`.
   */
  visitor?: VisitorOf;
  /**
   * Checkouts one customer (`customerInternalReference`) may start, as `checkoutsPerAddress`.
   * Default { burst: 5, perMinute: 6 }. Give each guest a reference of its own (a session id):
   * guests sharing one reference share one bucket.
   */
  checkoutsPerCustomer?: RateLimit | false;
  /**
   * Your synchronous decision on the server (see runDeviceRiskCheck); the browser only ever
   * gets the reference. What it does never changes the browser's answer: a throw goes to `onError`.
   * Once per execution with the callback handler's `onResult` (same `store`): a decision the
   * callback told calls nothing here; one whose call here threw is told by the callback.
   */
  onResult?: (details: DeviceRiskDetails, options: ResultContext) => void | Promise<void>;
  now?: () => number;
}

/** What `onResult` gets beside the details: its signal, and which checkout the decision is for. */
export interface ResultContext {
  signal: AbortSignal;
  /** The checkout's reference: its Idempotency-Key, as the browser's 202 answer gave it. */
  reference?: string;
  /** Yours, from resolveCustomer: find the order by it. */
  customerInternalReference?: string;
  /** Yours, from resolveCustomer, if it gave one. */
  userReference?: string;
}

/** The endpoint: a fetch handler, with its queue's figures and its shutdown. */
export interface DeviceRiskHandler {
  (request: Request, context?: RequestContext): Promise<Response>;
  /** The queue's figures now: checks waiting, the oldest one's age, the drain rate. */
  backlog(): Promise<BacklogFigures>;
  /**
   * Shutting down (on SIGTERM): new checkouts are answered 503 `shutting_down` with
   * Retry-After 1 (the browser posts again, to another instance), the running checks finish;
   * a shared queue keeps the rest for other instances, the default file queue on disk for the
   * next process on its directory; a memory queue tells each checkout it held and did not
   * start to `onError` (`NotCheckedError`, code `not_checked`, with its order).
   */
  close(): Promise<void>;
}

export function createDeviceRiskHandler(options: DeviceRiskHandlerOptions): DeviceRiskHandler {
  // Every option read here is a setting, resolved once (settings.ts).
  const settings = endpointSettings(options);
  const { client, allowed, now, onError, leaseMs, recordTtlMs } = settings;
  const maxBody = settings.maxBodyBytes;
  const fallback = settings.answer === 'accepted' && !settings.queue ? defaultQueue(settings) : undefined;
  const { store, decisions } = storesOf(settings, fallback);
  const { tell, outcomeOnly } = outcomeTelling(settings);
  const prefix = keyPart(client.clientId ?? '');
  const namespace = `${prefix}:idempotency`;
  const admission = createAdmission(settings);
  const checkRun = checkRunOf(settings, decisions);
  const underKey = createIdempotency({
    store,
    client,
    namespace,
    leaseMs,
    waitMs: settings.waitMs,
    ttlMs: recordTtlMs,
    now,
    onError,
  });
  const queued =
    settings.answer === 'accepted'
      ? createQueuedChecks({
          queue: settings.queue ?? fallback!,
          store,
          namespace,
          recordTtlMs,
          client,
          underKey,
          checkOptions: (job, progress, save) => ({
            ...checkRun({ progress, save, reference: { reference: job.key, ...referencesOf(job.customer) } }),
            retryFailedResultRead: true,
          }),
          maxQueuedMs: settings.maxQueuedMs,
          queueTimeoutMs: settings.storeTimeoutMs,
          now,
          onError,
          ...(settings.instanceId === undefined ? {} : { instanceId: settings.instanceId }),
        })
      : undefined;

  /** The check of a request that passed every refusal: queued, or run now under its key. */
  async function check(
    request: Request,
    key: string | null,
    blackbox: string,
    customer: CustomerMapping,
    outcome: CaptureOutcome | undefined,
    place: QueuePlace,
  ): Promise<Response> {
    const told = () => outcome && tell(outcome, request);
    const reference = referencesOf(customer);
    const fingerprint = () =>
      fingerprintOf(request.headers.get('origin')!, customer.customerInternalReference, blackbox);
    // A default queue whose directory cannot be used: refused (the blackbox stays in the form), never held in memory unsaid.
    const unusable = await fallback?.failure();
    if (unusable) {
      onError(unusable);
      return refuse(503, ERR_INVALID_CONFIGURATION, endpointMessages.queueUnusable, { 'retry-after': '60' });
    }
    // The queue holds one job per key: a request without one gets a key of its own there.
    if (queued) return queued.accept(key, await fingerprint(), blackbox, customer, told, place);
    if (key === null) {
      told();
      return json(await runCheck(client, blackbox, customer, checkRun({ progress: {}, reference })), 200);
    }
    return underKey(key, {
      fingerprint: await fingerprint(),
      customerTransaction: customer.transaction !== undefined,
      run: (progress, save) =>
        runCheck(client, blackbox, customer, checkRun({ progress, save, reference: { reference: key, ...reference } })),
      onNewKey: told,
    });
  }

  /** Set by close(): new checkouts are answered 503 `shutting_down`. */
  let closing = false;
  const handle = async (request: Request, context?: RequestContext): Promise<Response> => {
    const parsed = await readCheckout(request, allowed, maxBody, onError);
    if (parsed instanceof Response) return parsed;
    const { blackbox, outcome, key } = parsed;
    if (!blackbox) return outcomeOnly(outcome!, request);
    // Closing: no checkout is taken that this instance could not see through; the browser posts again.
    if (closing) return refuse(503, ERR_SHUTTING_DOWN, endpointMessages.shuttingDown, { 'retry-after': '1' });
    if (parsed.repairs.length) {
      recordRepairs(parsed.repairs);
      settings.onRepair?.(parsed.repairs);
    }
    const admitted = await admission.visitor(request, context);
    if (admitted instanceof Response) return admitted;
    const { visitor } = admitted;
    let customer: CustomerMapping | Response;
    try {
      customer = await settings.resolveCustomer(request, context);
    } catch (error) {
      onError(error);
      return refuse(500, REFUSED_CUSTOMER_LOOKUP, endpointMessages.customerUnresolved);
    }
    if (customer instanceof Response) return customer;
    // An order the service would refuse is refused now (422, permanent), never accepted and then dropped.
    const brokenReference = referenceRuleBroken(customer);
    if (brokenReference) {
      onError(new DeviceRiskError(ERR_INVALID_ACCOUNT_REQUEST, brokenReference, { operation: 'account' }));
      return refuse(422, ERR_INVALID_ACCOUNT_REQUEST, brokenReference);
    }
    const refusedCustomer = admission.customer(customer.customerInternalReference);
    if (refusedCustomer) return refusedCustomer;
    const place = await admission.place(customer, visitor);
    if (place instanceof Response) return place;
    try {
      const refused = await claimed(settings, { store, prefix }, request, customer, parsed);
      if (refused) return refused;
      return await check(request, key, blackbox, customer, outcome, place);
    } catch (caught) {
      // Told in the kit's terms: a Redis at maxmemory is the store, not the service.
      const error = namedFailure(caught);
      onError(error);
      return failureAnswer(error);
    }
  };
  return Object.assign(handle, {
    backlog: queued ? queued.backlog : notQueued(settings.maxQueuedMs),
    close: async () => {
      closing = true;
      await queued?.close();
    },
  });
}

/** What a checkout's request holds once read and checked; a Response when it is refused. */
interface Checkout {
  /** Empty for an outcome-only report. */
  blackbox: string;
  repairs: BlackboxRepair[];
  nonce: unknown;
  outcome: CaptureOutcome | undefined;
  key: string | null;
}

/** Reads and checks a checkout's request: method, origin, media type, body, blackbox, Idempotency-Key. */
async function readCheckout(
  request: Request,
  allowed: Set<string>,
  maxBody: number,
  onError: (error: unknown) => void,
): Promise<Checkout | Response> {
  if (request.method !== 'POST') return refuse(405, REFUSED_METHOD, endpointMessages.usePost, { allow: 'POST' });
  const origin = request.headers.get('origin');
  if (!origin || !allowed.has(origin)) return refuse(403, REFUSED_ORIGIN, endpointMessages.originRefused);
  if (!/^application\/json\b/i.test(request.headers.get('content-type') ?? '')) {
    return refuse(415, REFUSED_MEDIA_TYPE, endpointMessages.sendJson);
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
  if (text === undefined) return refuse(413, REFUSED_BODY_TOO_LARGE, endpointMessages.tooLarge(maxBody));
  let checkout: Checkout;
  try {
    const body = JSON.parse(text) as { blackbox?: unknown; nonce?: unknown; outcome?: unknown } | null;
    const outcome = parseOutcome(body?.outcome);
    const key = request.headers.get('idempotency-key');
    // A capture that produced no blackbox: its outcome alone, recorded, no call to the service.
    if (body?.blackbox === undefined && outcome) return { blackbox: '', repairs: [], nonce: undefined, outcome, key };
    const repaired = repairBlackbox(body?.blackbox);
    checkout = { blackbox: repaired.blackbox, repairs: repaired.repairs, nonce: body?.nonce, outcome, key };
  } catch (error) {
    const code = isDeviceRiskError(error) ? error.code : ERR_INVALID_BLACKBOX;
    return refuse(400, code, isDeviceRiskError(error) ? error.message : endpointMessages.notJson);
  }
  if (checkout.key !== null && !/^[\x21-\x7e]{8,200}$/.test(checkout.key))
    return refuse(400, REFUSED_INVALID_KEY, endpointMessages.badKey);
  return checkout;
}

/**
 * The request's claims in the store, before its check, both for its key: its capture nonce
 * (with `nonceSecret`, nonce-claim.ts) and its blackbox (one transaction per blackbox,
 * reuse.ts). A refusal, or undefined to go on.
 */
async function claimed(
  settings: EndpointSettings,
  { store, prefix }: { store: Store; prefix: string },
  request: Request,
  customer: CustomerMapping,
  { blackbox, nonce, key }: Pick<Checkout, 'blackbox' | 'nonce' | 'key'>,
): Promise<Response | undefined> {
  const { now, onError, maxQueuedMs, nonceSecret, nonceSubject } = settings;
  const claimant = key ?? ownerMark();
  if (nonceSecret !== undefined) {
    const refused = await claimNonce(
      { store, secret: nonceSecret, prefix, now },
      nonce,
      nonceSubject?.(request, customer) ?? customer.customerInternalReference,
      claimant,
    );
    if (refused) return refused;
  }
  // The claim lasts the trust bound: a checkout older than that is refused as stale anyway.
  return claimBlackbox({ store, prefix, ttlMs: maxQueuedMs, onError }, blackbox, claimant);
}

/** Checkouts per caller address and per customer: a refusal (429) when one has started too many. */
function createAdmission(settings: EndpointSettings) {
  const { now, onError, addressPrefix: prefix, visitor: visitorOf } = settings;
  const limiter = (name: 'checkoutsPerAddress' | 'checkoutsPerCustomer'): Limiter | undefined => {
    const limit = settings[name];
    return limit === false ? undefined : createLimiter(checkRateLimit(limit, name), now);
  };
  const perAddress = limiter('checkoutsPerAddress');
  const perCustomer = limiter('checkoutsPerCustomer');
  let toldNoAddress = false;

  /** A refusal when `source` has started too many checkouts, else undefined (and one is counted). */
  function admit(limiter: Limiter | undefined, source: string, what: string): Response | undefined {
    const wait = limiter?.take(source);
    if (!wait) return undefined;
    onError(
      new DeviceRiskError(ERR_RATE_LIMITED, endpointMessages.tooManyLogged(what), {
        status: 429,
        retryAfter: wait,
        operation: 'admission',
      }),
    );
    return refuse(429, REFUSED_TOO_MANY_CHECKOUTS, endpointMessages.tooManyCheckouts(what), {
      'retry-after': String(wait),
    });
  }
  return {
    /**
     * Who posts (the shop's visitor, `visitor`, else the caller's network under `addressPrefix`,
     * if known), or a refusal: that visitor has started too many checkouts (429), or the shop's
     * function failed (500, told).
     */
    async visitor(request: Request, context: RequestContext | undefined): Promise<{ visitor?: string } | Response> {
      let visitor: string | undefined;
      try {
        if (visitorOf) visitor = await shopVisitor(visitorOf, request, context);
        else if (context?.clientAddress) visitor = `address ${addressGroup(context.clientAddress, prefix)}`;
      } catch (error) {
        onError(error);
        return refuse(500, REFUSED_CUSTOMER_LOOKUP, endpointMessages.visitorUnresolved);
      }
      return this.address(visitor) ?? (visitor === undefined ? {} : { visitor });
    },
    /** A refusal when the visitor (`visitor`'s answer) has started too many checkouts. */
    address(visitor: string | undefined): Response | undefined {
      if (visitor) return admit(perAddress, visitor, visitorOf ? 'visitor' : 'address');
      if (perAddress && !toldNoAddress) {
        toldNoAddress = true;
        // Said once, not as an error: the request goes on, limited per customer only.
        console.warn(MESSAGE_PREFIX + endpointMessages.noCallerAddress);
      }
      return undefined;
    },
    customer: (reference: string) => admit(perCustomer, reference, 'customer'),
    /**
     * The checkout's place in the queue (docs/server.md#signed-in-shoppers-first): a signed-in
     * shopper's turns go by its account, itself a visitor admission counts (429 past its
     * bucket), ahead of every other; else by visitor (the shop's, its network, or its customer
     * when neither is known), a guest (`signedIn: false`) shed first at the bound.
     */
    async place(customer: CustomerMapping, visitor: string | undefined): Promise<QueuePlace | Response> {
      if (customer.signedIn !== true)
        return {
          visitor: visitor ?? `customer ${customer.customerInternalReference}`,
          ...(customer.signedIn === false ? { lane: 'guest' as const } : {}),
        };
      if (!customer.userReference) {
        onError(new DeviceRiskError(ERR_INVALID_CONFIGURATION, endpointMessages.signedInWithoutAccount));
        return refuse(500, REFUSED_CUSTOMER_LOOKUP, endpointMessages.customerUnresolved);
      }
      const account = await accountVisitor(customer.userReference);
      return admit(perAddress, account, 'account') ?? { visitor: account, lane: 'signed-in' };
    },
  };
}

/**
 * The handler's store (the shop's, under its time limit; the default queue's file, beside the
 * checkouts it holds; or this process's memory) and the markers that tell each decision once,
 * with the callback handler's too: in the shop's store, or without one in the client's memory.
 */
function storesOf(settings: EndpointSettings, fallback: DefaultQueue | undefined) {
  const { leaseMs, now, onError, client } = settings;
  // Each key has a record, a nonce claim, its blackbox's claim and, while worked on, a lease: four entries.
  const memory = () => createMemoryStore({ maxEntries: 4 * settings.idempotencyMaxKeys, now });
  const store = settings.store
    ? withTimeLimit(settings.store, settings.storeTimeoutMs)
    : fallback
      ? storeWhenReady(fallback.keys().then((keys) => keys ?? memory()))
      : memory();
  const markersIn = settings.store ? store : defaultToldStore(client);
  return { store, decisions: toldMarkers(markersIn, client.clientId, leaseMs, onError, now) };
}

/**
 * The queue of a handler given none (queue/default.ts): a file queue in `dataDir` where the
 * runtime has a file system, else this process's memory; where, said once at start. A queue
 * given, even createMemoryQueue(), is the shop's choice and said nothing of.
 */
function defaultQueue({ dataDir, maxQueuedChecks, now, onError }: EndpointSettings): DefaultQueue {
  return createDefaultQueue({ dataDir, maxQueued: maxQueuedChecks, now, onError });
}

/** One check's own: its progress so far, where it is saved, and which checkout it is for. */
interface CheckRun {
  progress: DeviceRiskProgress;
  save?: CheckRunOptions['onProgress'];
  reference: { reference?: string; customerInternalReference: string; userReference?: string };
}

/** The check's options from the settings: its onResult, with its time limit and which checkout it is for. */
function checkRunOf(settings: EndpointSettings, told: ToldMarkers) {
  const { now, onError, resultWaitMs, onResultTimeoutMs, workflowKey, callbackUrl, onResult } = settings;
  return ({ progress, save, reference }: CheckRun): CheckRunOptions => ({
    workflowKey,
    ...(callbackUrl === undefined ? {} : { callbackUrl }),
    reportStatus: settings.reportStatus,
    progress,
    now,
    ...(save ? { onProgress: save } : {}),
    // Also without onResult: the execution's checkout is remembered for the callback's (told.ts).
    told,
    resultContext: reference,
    ...(onResult
      ? {
          // The key's record written again before the decision is told: an attempt fenced out tells nothing.
          ...(save ? { fence: () => save(progress) } : {}),
          onResult,
          resultWaitMs,
          onResultTimeoutMs,
        }
      : {}),
    onError,
  });
}

/** A handler that checks within the request has no backlog: its figures are all zero, the whole trust bound left. */
const notQueued = (maxQueuedMs: number) => async (): Promise<BacklogFigures> => ({
  queued: 0,
  oldestAgeMs: 0,
  drainPerSecond: 0,
  drainWindowMs: 0,
  drainSeconds: 0,
  staleLastMinute: 0,
  fleetWide: false,
  timeLeftMs: maxQueuedMs,
  acceptedPerSecond: 0,
});

/** Which order a decision is for, as resolveCustomer gave it. */
const referencesOf = ({ customerInternalReference, userReference }: Omit<CustomerMapping, 'transaction'>) => ({
  customerInternalReference,
  ...(userReference ? { userReference } : {}),
});

/** The page's outcomes: told to `onOutcome` and the metrics, and the outcome-only reports' answer. */
function outcomeTelling({ now, onError, onOutcome, ...settings }: EndpointSettings) {
  const reports = outcomeReports(settings.maxOutcomeReportsPerSecond, now);
  function tell(outcome: CaptureOutcome, request: Request): void {
    recordOutcome(outcome, request.headers.get('user-agent'));
    try {
      onOutcome?.(outcome, request);
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
      return refuse(429, REFUSED_TOO_MANY_REPORTS, endpointMessages.tooManyReports, {
        'retry-after': '1',
      });
    const key = request.headers.get('idempotency-key');
    if (key === null || !/^[\x21-\x7e]{8,200}$/.test(key) || reports.first(key)) tell(outcome, request);
    return json({ recorded: true }, 202);
  }
  return { tell, outcomeOnly };
}
