/**
 * createDeviceRiskHandler's settings module: every option with its default and its check
 * (ENDPOINT_OPTIONS, the table docs/server.md's endpoint options are tested against), checked
 * when the handler is made: a bad option is `invalid_configuration` naming it then, never a
 * checkout lost later (docs/architecture.md#settings-modules).
 */
import { contractedRate } from '../api/device-risk-client.js';
import { callbackUrlRuleBroken } from '../api/account.js';
import { checkAddressPrefix, DEFAULT_ADDRESS_PREFIX, type AddressPrefix } from '../net/address.js';
import { systemNow, type Now } from '../time/clock.js';
import { DeviceRiskError, ERR_INVALID_CONFIGURATION, onErrorOf } from '../errors.js';
import { endpointMessages } from '../messages.js';
import {
  checkOptions,
  oneOf,
  REQUIRED,
  RULES,
  type OptionRow,
  type OptionRule,
  type OptionTable,
  type PlainOptions,
  plainSettings,
} from '../options-table.js';
import { isMemoryStore, STORE_TIMEOUT_MS } from '../store/store.js';
import { checkVisitorOption, type RateLimit } from './admission.js';
import type { DeviceRiskHandlerOptions } from './handler.js';
import { DEFAULT_MAX_QUEUED_MS } from './queued.js';

/** Any origin URL list, e.g. ["https://shop.example"]. */
const ORIGINS: OptionRule = {
  valid: (value) =>
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((origin) => typeof origin === 'string' && URL.canParse(origin) && new URL(origin).origin !== 'null'),
  expects: 'a list of the origins of your checkout pages, e.g. ["https://shop.example"]',
};
const RATE_LIMIT: OptionRule = {
  valid: (value) =>
    value === false ||
    (RULES.object.valid(value) &&
      ['burst', 'perMinute'].every((n) => RULES.positive.valid((value as Record<string, unknown>)[n]))),
  expects: 'false or { burst, perMinute } with positive numbers',
};
const NONCE_SECRET: OptionRule = {
  valid: (value) => typeof value === 'string' && value.length >= 32,
  expects: 'a string of at least 32 characters',
};
const methods = (what: string, ...names: string[]): OptionRule => ({
  valid: (value) =>
    RULES.object.valid(value) && names.every((name) => typeof (value as Record<string, unknown>)[name] === 'function'),
  expects: `${what} (${names.join(', ')})`,
});

/**
 * The endpoint's plain options, numbers and switches: each row is at once the option's member
 * of DeviceRiskHandlerOptions (its type from its default, its comment what the editor shows),
 * its default and its check. A new one is a row here, its use in handler.ts and its docs row.
 */
export const PLAIN_ENDPOINT_OPTIONS = {
  /** Largest request body in bytes. Default 16384. */
  maxBodyBytes: { default: 16 * 1024, ...RULES.positiveInteger },
  /** Read the transaction's status after finalize for the answer. Default true. */
  reportStatus: { default: true, ...RULES.boolean },
  /**
   * How long an accepted blackbox is trusted, in ms: one that waited longer is not uploaded,
   * and `onError` hears `blackbox_stale`. Default 15 minutes: the capture nonce's lifetime, and
   * half the transaction token's 30 minutes (docs/fleet.md#the-trust-bound).
   */
  maxQueuedMs: { default: DEFAULT_MAX_QUEUED_MS, ...RULES.ms },
  /**
   * Time limit of each call to `store`, and of the queue's add and count on a request's path, in
   * ms: a store or queue that hangs is answered 503 with Retry-After, as one that is down (an add
   * that may land later, as held). Default 3000.
   */
  storeTimeoutMs: { default: STORE_TIMEOUT_MS, ...RULES.ms },
  /** How long an Idempotency-Key is remembered, in ms. Default 24 hours. */
  idempotencyTtlMs: { default: 24 * 3_600_000, ...RULES.ms },
  /**
   * Keys (with their nonce claims) the default memory store holds at most (without the default
   * queue's file: a queue given, the edge build, or `answer: 'checked'`). None is dropped before
   * `idempotencyTtlMs`: when it is full, new checkouts are answered 503 `store_full` with
   * Retry-After until old keys expire. Default 100000; above that, use a shared store.
   */
  idempotencyMaxKeys: { default: 100_000, ...RULES.positiveInteger },
  /** How long an instance holds a key it works on without renewing its lease, in ms: a dead owner's key is taken over after it. Default 10000. */
  idempotencyLeaseMs: { default: 10_000, ...RULES.ms },
  /**
   * How long a request waits, on another attempt working on its key or on a shared store that
   * is away, before answering 409 or 503 with Retry-After, in ms. Default 5000: half the
   * browser package's time limit for its POST (10 s), so that the answer reaches it.
   */
  idempotencyWaitMs: { default: 5_000, ...RULES.msOrZero },
  /** Outcome-only reports taken per second by this process; more are answered 429. Default 20 (bursts of 5 times that). */
  maxOutcomeReportsPerSecond: { default: 20, ...RULES.positive },
  /** How long `onResult` may take, in ms (its signal aborts then, and `onError` hears `result_handler_timeout`). Default 30000. */
  onResultTimeoutMs: { default: 30_000, ...RULES.ms },
  /** How long a request waits for the result before answering. Default 0: one read after finalize. */
  resultWaitMs: { default: 0, ...RULES.msOrZero },
} as const satisfies Record<string, OptionRow>;

/** The members PLAIN_ENDPOINT_OPTIONS makes: each optional, of its default's type. */
export type EndpointPlainOptions = PlainOptions<typeof PLAIN_ENDPOINT_OPTIONS>;

/** Every option of createDeviceRiskHandler: its default (docs/server.md#the-endpoints-options) and its check. */
export const ENDPOINT_OPTIONS = {
  client: { default: REQUIRED, ...RULES.object, expects: 'a DeviceRiskClient (createDeviceRiskClient)' },
  allowedOrigins: { default: REQUIRED, ...ORIGINS },
  resolveCustomer: { default: REQUIRED, ...RULES.function },
  workflowKey: {
    default: 'none: each customer names its own',
    valid: (value) => typeof value === 'number' || RULES.text.valid(value),
    expects: 'a string or a number',
  },
  callbackUrl: { default: "none: the service's account settings", ...RULES.text },
  answer: { default: "'accepted'; 'checked' in Cloudflare Workers without a queue", ...oneOf('accepted', 'checked') },
  queue: {
    default: "a file queue in dataDir; in the edge build, this process's memory (createMemoryQueue)",
    ...methods('a CheckQueue', 'add', 'process', 'counts', 'close'),
  },
  dataDir: { default: 'BLACKBOX_CAPTURE_DATA_DIR, else .blackbox-capture in the working directory', ...RULES.text },
  maxQueuedChecks: {
    default: 'accountRequestsPerSecond × maxQueuedMs: 900',
    ...RULES.positiveInteger,
  },
  instanceId: { default: 'hostname:pid', ...RULES.text },
  store: {
    default: "the default queue's file in dataDir; else this process's memory (createMemoryStore)",
    ...methods('a Store', 'get', 'set', 'setIfAbsent'),
  },
  onError: { default: 'one line on console.error', ...RULES.function },
  nonceSecret: { default: 'none: no nonce is asked for', ...NONCE_SECRET },
  nonceSubject: { default: "the customer's customerInternalReference", ...RULES.function },
  onRepair: { default: 'none', ...RULES.function },
  onOutcome: { default: 'none', ...RULES.function },
  checkoutsPerAddress: { default: { burst: 5, perMinute: 6 }, ...RATE_LIMIT },
  addressPrefix: { default: DEFAULT_ADDRESS_PREFIX, ...RULES.object, expects: '{ ipv4, ipv6 }' },
  visitor: {
    default: "the caller's network (addressPrefix)",
    ...RULES.function,
    expects: 'a function of the request that returns your visitor id (a session, a cart) or undefined',
  },
  checkoutsPerCustomer: { default: { burst: 5, perMinute: 6 }, ...RATE_LIMIT },
  onResult: { default: 'none', ...RULES.function },
  now: { default: 'Date.now', ...RULES.function },
  ...PLAIN_ENDPOINT_OPTIONS,
} as const satisfies OptionTable<DeviceRiskHandlerOptions>;

/** Cloudflare Workers says so in `navigator.userAgent`: its isolates run nothing after the answer. */
const inWorkers = () =>
  typeof navigator !== 'undefined' && (navigator as { userAgent?: string }).userAgent === 'Cloudflare-Workers';

/** When the browser is answered: as given, or `'checked'` in Workers without a queue, else `'accepted'`. */
const answerOf = (options: DeviceRiskHandlerOptions) =>
  options.answer ?? (inWorkers() && !options.queue ? 'checked' : 'accepted');

/** The handler's options checked and completed with their defaults: every plain one, and these. */
/** The options the handler takes as given, each checked by its row of ENDPOINT_OPTIONS. */
type GivenOptions = Pick<
  DeviceRiskHandlerOptions,
  | 'client'
  | 'resolveCustomer'
  | 'workflowKey'
  | 'callbackUrl'
  | 'onResult'
  | 'queue'
  | 'dataDir'
  | 'instanceId'
  | 'store'
  | 'nonceSecret'
  | 'nonceSubject'
  | 'onRepair'
  | 'onOutcome'
  | 'visitor'
>;

/**
 * Every option of the endpoint, resolved once: the handler reads these, never an option
 * (docs/architecture.md#settings-modules).
 */
export interface EndpointSettings extends Required<EndpointPlainOptions>, GivenOptions {
  /** The allowed origins, as `URL.origin` spells them. */
  allowed: Set<string>;
  answer: 'accepted' | 'checked';
  now: Now;
  onError: (error: unknown) => void;
  /** `idempotencyLeaseMs`, `idempotencyTtlMs` and `idempotencyWaitMs`, as the key's record names them. */
  leaseMs: number;
  recordTtlMs: number;
  waitMs: number;
  /** Each `false` (no limit) or the limit, the row's default when not given. */
  checkoutsPerAddress: RateLimit | false;
  checkoutsPerCustomer: RateLimit | false;
  /** `addressPrefix`, checked, the default when not given. */
  addressPrefix: Required<AddressPrefix>;
  /** The default queue's bound: `maxQueuedChecks`, else defaultMaxQueued's. */
  maxQueuedChecks: number;
}

/**
 * The options checked when the handler is made (each by its row of ENDPOINT_OPTIONS, then the
 * rules between options), with their defaults; throws `invalid_configuration`.
 */
export function endpointSettings(options: DeviceRiskHandlerOptions): EndpointSettings {
  checkOptions(options, ENDPOINT_OPTIONS);
  if (options.callbackUrl !== undefined) {
    const broken = callbackUrlRuleBroken(options.callbackUrl, options.client.localService);
    if (broken) throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, broken);
  }
  const answer = answerOf(options);
  // A store of its own (shared, or the shop's) with the default queue: a fleet's accepted
  // checkouts would wait in each instance's memory and die with it. A queue given on purpose,
  // even createMemoryQueue, is the shop's choice; a memory store is one instance's anyway.
  if (options.store && !isMemoryStore(options.store) && !options.queue && answer === 'accepted') {
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, endpointMessages.sharedStoreNeedsQueue);
  }
  const plain = plainSettings(options, PLAIN_ENDPOINT_OPTIONS);
  const { client, resolveCustomer, workflowKey, callbackUrl, onResult, queue, dataDir, instanceId, store } = options;
  const { nonceSecret, nonceSubject, onRepair, onOutcome } = options;
  return {
    ...plain,
    ...{ client, resolveCustomer, workflowKey, callbackUrl, onResult, queue, dataDir, instanceId, store },
    ...{ nonceSecret, nonceSubject, onRepair, onOutcome },
    visitor: checkVisitorOption(options.visitor),
    addressPrefix: checkAddressPrefix(options.addressPrefix),
    maxQueuedChecks: defaultMaxQueued(options),
    allowed: new Set(options.allowedOrigins.map((o: string) => new URL(o).origin)),
    answer,
    now: options.now ?? systemNow,
    onError: onErrorOf(options.onError),
    leaseMs: plain.idempotencyLeaseMs,
    recordTtlMs: plain.idempotencyTtlMs,
    waitMs: plain.idempotencyWaitMs,
    checkoutsPerAddress: options.checkoutsPerAddress ?? ENDPOINT_OPTIONS.checkoutsPerAddress.default,
    checkoutsPerCustomer: options.checkoutsPerCustomer ?? ENDPOINT_OPTIONS.checkoutsPerCustomer.default,
  };
}

/**
 * The default memory queue's bound: the checkouts the tenant's account limit lets through
 * within the trust bound (1 a second × 15 minutes: 900). More would wait past it and be dropped
 * stale after the shopper was told "accepted": they are refused at once instead (`queue_full`).
 */
export function defaultMaxQueued(
  options: Pick<DeviceRiskHandlerOptions, 'client' | 'maxQueuedChecks' | 'maxQueuedMs'>,
): number {
  const given = options.maxQueuedChecks;
  if (given !== undefined) {
    if (!RULES.positiveInteger.valid(given))
      throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, endpointMessages.maxQueuedChecks);
    return given;
  }
  const perSecond = contractedRate(options.client);
  return Math.max(1, Math.floor((perSecond * (options.maxQueuedMs ?? ENDPOINT_OPTIONS.maxQueuedMs.default)) / 1000));
}
