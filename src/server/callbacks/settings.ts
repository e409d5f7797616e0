/**
 * The callback handler's options, checked and completed with their defaults once, when the
 * handler is made: a wrong option is `invalid_configuration` then, never a callback lost later.
 */
import { systemNow, type Now } from '../time/clock.js';
import type { DeviceRiskClient } from '../api/device-risk-client.js';
import { checkRateLimit, createLimiter, type Limiter } from '../endpoint/admission.js';
import { DeviceRiskError, ERR_INVALID_CONFIGURATION, onErrorOf } from '../errors.js';
import { checkOptions, REQUIRED, RULES, type OptionTable } from '../options-table.js';
import { STORE_TIMEOUT_MS } from '../store/store.js';
import { callbackMessages } from '../messages.js';
import type { RequestContext } from '../fetch-handler.js';
import { createMemoryStore, withTimeLimit, type Store } from '../store/store.js';
import { defaultToldStore, toldMarkers, type ToldMarkers } from './told.js';
import { callbackNamespace } from './record.js';
import { sourceMatcher } from './sources.js';
import type { CallbackHandlerOptions } from './types.js';

export interface CallbackSettings {
  client: DeviceRiskClient;
  onResult: CallbackHandlerOptions['onResult'];
  /** Whether the caller may send callbacks (`allowedSources`). */
  allowed: (request: Request, context?: RequestContext) => boolean;
  store: Store;
  /** Each decision told once, with the endpoint's checks too (src/server/callbacks/told.ts). */
  told: ToldMarkers;
  now: Now;
  report: (error: unknown) => void;
  /** The store's namespace of this tenant's callbacks. */
  namespace: string;
  recordTtlMs: number;
  retryDelayMs: number;
  maxRetryDelayMs: number;
  maxBodyBytes: number;
  leaseMs: number;
  retryForMs: number;
  sweepIntervalMs: number;
  onResultTimeoutMs: number;
  /** This process's allowance of callbacks without the kit's reference (`untaggedCallbacks`). */
  untagged: Limiter;
}

/** Every option of createCallbackHandler: its default (docs/server.md#the-callback-handlers-options) and its check. */
export const CALLBACK_OPTIONS = {
  client: { default: REQUIRED, ...RULES.object, expects: 'a DeviceRiskClient (createDeviceRiskClient)' },
  onResult: { default: REQUIRED, ...RULES.function },
  onResultTimeoutMs: { default: 30_000, ...RULES.ms },
  untaggedCallbacks: {
    default: { burst: 50, perMinute: 300 },
    ...RULES.object,
    expects: '{ burst, perMinute } with positive numbers',
  },
  allowedSources: {
    default: REQUIRED,
    valid: (value) => value === 'any' || typeof value === 'function' || Array.isArray(value),
    expects: "'any', a function or a list of addresses and networks",
  },
  store: { default: "this process's memory (createMemoryStore)", ...RULES.object },
  storeTimeoutMs: { default: STORE_TIMEOUT_MS, ...RULES.ms },
  leaseMs: { default: 60_000, ...RULES.msOrZero },
  onError: { default: 'one line on console.error', ...RULES.function },
  retryDelayMs: { default: 1000, ...RULES.ms },
  maxRetryDelayMs: { default: 60_000, ...RULES.ms },
  retryForMs: { default: 86_400_000, ...RULES.ms },
  sweepIntervalMs: { default: 30_000, ...RULES.ms },
  recordTtlMs: { default: 7 * 86_400_000, ...RULES.ms },
  maxBodyBytes: { default: 16 * 1024, ...RULES.positiveInteger },
  now: { default: 'Date.now', ...RULES.function },
} as const satisfies OptionTable<CallbackHandlerOptions>;

const configurationError = (message: string) => new DeviceRiskError(ERR_INVALID_CONFIGURATION, message);

/** Who may call, from `allowedSources`; throws on a missing rule or an entry that is no address. */
function sourceRule(rule: CallbackHandlerOptions['allowedSources'] | undefined): CallbackSettings['allowed'] {
  if (rule === undefined) throw configurationError(callbackMessages.allowedSourcesRequired);
  if (rule === 'any') return () => true;
  if (typeof rule === 'function') return rule;
  const matches = sourceMatcher(rule);
  return (_request, context) => !!context?.clientAddress && matches(context.clientAddress);
}

/** The options with their defaults (docs/answer.md); throws `invalid_configuration`. */
export function callbackSettings(options: CallbackHandlerOptions): CallbackSettings {
  const { client, onResult } = options;
  if (typeof onResult !== 'function') throw configurationError(callbackMessages.onResultRequired);
  const allowed = sourceRule(options.allowedSources);
  checkOptions(options, CALLBACK_OPTIONS);
  const defaults = CALLBACK_OPTIONS;
  const now = options.now ?? systemNow;
  const recordTtlMs = options.recordTtlMs ?? defaults.recordTtlMs.default;
  const retryForMs = options.retryForMs ?? defaults.retryForMs.default;
  const sweepIntervalMs = options.sweepIntervalMs ?? defaults.sweepIntervalMs.default;
  const onResultTimeoutMs = options.onResultTimeoutMs ?? defaults.onResultTimeoutMs.default;
  if (!(onResultTimeoutMs > 0)) throw configurationError(callbackMessages.positiveMs('onResultTimeoutMs'));
  const untagged = checkRateLimit(options.untaggedCallbacks ?? defaults.untaggedCallbacks.default, 'untaggedCallbacks');
  if (!(retryForMs > 0 && retryForMs < recordTtlMs)) throw configurationError(callbackMessages.retryOutlivesRecord);
  if (!(sweepIntervalMs > 0)) throw configurationError(callbackMessages.positiveMs('sweepIntervalMs'));
  const store = options.store ? withTimeLimit(options.store, options.storeTimeoutMs) : undefined;
  const report = onErrorOf(options.onError);
  const leaseMs = options.leaseMs ?? defaults.leaseMs.default;
  return {
    client,
    onResult,
    allowed,
    store: store ?? createMemoryStore(),
    // Without a store of its own, the client's in this process: an endpoint made with it and given none shares it.
    told: toldMarkers(store ?? defaultToldStore(client), client.clientId, leaseMs, report, now),
    now,
    report,
    namespace: callbackNamespace(client.clientId),
    recordTtlMs,
    retryDelayMs: options.retryDelayMs ?? defaults.retryDelayMs.default,
    maxRetryDelayMs: options.maxRetryDelayMs ?? defaults.maxRetryDelayMs.default,
    maxBodyBytes: options.maxBodyBytes ?? defaults.maxBodyBytes.default,
    leaseMs,
    retryForMs,
    sweepIntervalMs,
    onResultTimeoutMs,
    // One key ('untagged') for the whole process: a limiter of one source.
    untagged: createLimiter(untagged, now, 1),
  };
}
