/**
 * The callback handler's options, checked and completed with their defaults once, when the
 * handler is made: a wrong option is `invalid_configuration` then, never a callback lost later.
 */
import { systemNow, type Now } from '../clock.js';
import type { DeviceRiskClient } from '../api/device-risk-client.js';
import { checkRateLimit, createLimiter, type Limiter } from '../endpoint/admission.js';
import { DeviceRiskError, ERR_INVALID_CONFIGURATION, logError } from '../errors.js';
import { callbackMessages } from '../messages.js';
import type { RequestContext } from '../fetch-handler.js';
import { createMemoryStore, withTimeLimit, type Store } from '../store/store.js';
import { defaultToldStore, toldMarkers, type ToldMarkers } from '../told.js';
import { callbackNamespace } from './record.js';
import { sourceMatcher } from './sources.js';
import type { CallbackHandlerOptions } from './types.js';

export interface CallbackSettings {
  client: DeviceRiskClient;
  onResult: CallbackHandlerOptions['onResult'];
  /** Whether the caller may send callbacks (`allowedSources`). */
  allowed: (request: Request, context?: RequestContext) => boolean;
  store: Store;
  /** Each decision told once, with the endpoint's checks too (src/server/told.ts). */
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
  const now = options.now ?? systemNow;
  const recordTtlMs = options.recordTtlMs ?? 7 * 86_400_000;
  const retryForMs = options.retryForMs ?? 86_400_000;
  const sweepIntervalMs = options.sweepIntervalMs ?? 30_000;
  const onResultTimeoutMs = options.onResultTimeoutMs ?? 30_000;
  if (!(onResultTimeoutMs > 0)) throw configurationError(callbackMessages.positiveMs('onResultTimeoutMs'));
  const untagged = checkRateLimit(options.untaggedCallbacks ?? { burst: 50, perMinute: 300 }, 'untaggedCallbacks');
  if (!(retryForMs > 0 && retryForMs < recordTtlMs)) throw configurationError(callbackMessages.retryOutlivesRecord);
  if (!(sweepIntervalMs > 0)) throw configurationError(callbackMessages.positiveMs('sweepIntervalMs'));
  const store = options.store ? withTimeLimit(options.store, options.storeTimeoutMs) : undefined;
  const report = options.onError ?? logError;
  const leaseMs = options.leaseMs ?? 60_000;
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
    retryDelayMs: options.retryDelayMs ?? 1000,
    maxRetryDelayMs: options.maxRetryDelayMs ?? 60_000,
    maxBodyBytes: options.maxBodyBytes ?? 16 * 1024,
    leaseMs,
    retryForMs,
    sweepIntervalMs,
    onResultTimeoutMs,
    // One key ('untagged') for the whole process: a limiter of one source.
    untagged: createLimiter(untagged, now, 1),
  };
}
