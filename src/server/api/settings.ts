/**
 * The settings modules of createDeviceRiskClient and createTokenSource: every option with its
 * default and its check (CLIENT_OPTIONS, TOKEN_SOURCE_OPTIONS: the tables docs/server.md's are
 * tested against), checked when each is made (docs/architecture.md#settings-modules).
 */
import { oneOf, REQUIRED, RULES, type OptionTable } from '../options-table.js';
import type { DeviceRiskClientOptions } from './device-risk-client.js';
import { MAX_RETRY_AFTER_SECONDS } from './retry.js';
import type { TokenSourceOptions } from './token-source.js';
import { STORE_TIMEOUT_MS } from '../store/store.js';
import { isRegion, REGION_NAMES } from './regions.js';

/** Every option of createDeviceRiskClient: its default (docs/server.md#the-clients-options) and its check. */
export const CLIENT_OPTIONS = {
  tokenSource: { default: REQUIRED, ...RULES.object, expects: 'a TokenSource (createTokenSource)' },
  region: { default: 'none: give baseUrl', valid: isRegion, expects: `one of ${REGION_NAMES.join(', ')}` },
  baseUrl: { default: "the region's account. host", ...RULES.text },
  apiBaseUrl: { default: "the region's api. host, or baseUrl's origin", ...RULES.text },
  retrievalBaseUrl: { default: "the region's retrieval. host, or baseUrl", ...RULES.text },
  userAgent: { default: REQUIRED, ...RULES.text },
  fetch: { default: 'globalThis.fetch', ...RULES.function },
  accountsPath: {
    default: '/api/v1/accounts',
    valid: (value) => typeof value === 'string' && value.startsWith('/'),
    expects: 'a path starting with "/"',
  },
  finalizeMethod: { default: 'PUT', ...oneOf('PUT', 'POST') },
  maxAttempts: { default: 3, ...RULES.positiveInteger },
  timeoutMs: { default: 15_000, ...RULES.ms },
  accountTimeoutMs: { default: 60_000, ...RULES.ms },
  expiryMarginMs: { default: 30_000, ...RULES.msOrZero },
  now: { default: 'Date.now', ...RULES.function },
  sleep: { default: 'a timer', ...RULES.function },
  limits: { default: 'the documented ones (DEFAULT_LIMITS)', ...RULES.object },
} as const satisfies OptionTable<DeviceRiskClientOptions>;

/** Every option of createTokenSource: its default (docs/server.md#the-token-sources-options) and its check. */
export const TOKEN_SOURCE_OPTIONS = {
  clientId: { default: REQUIRED, ...RULES.text },
  clientSecret: { default: REQUIRED, ...RULES.text },
  region: { default: 'none: give tokenUrl', valid: isRegion, expects: `one of ${REGION_NAMES.join(', ')}` },
  tokenUrl: { default: "the region's auth. host", ...RULES.text },
  userAgent: { default: REQUIRED, ...RULES.text },
  fetch: { default: 'globalThis.fetch', ...RULES.function },
  store: { default: "the source's own memory (createMemoryStore)", ...RULES.object },
  storeTimeoutMs: { default: STORE_TIMEOUT_MS, ...RULES.ms },
  lockLeaseMs: { default: 3000, ...RULES.ms },
  refreshMarginSeconds: { default: 60, ...RULES.secondsOrZero },
  maxRequestsPerSecond: { default: 10, ...RULES.positive },
  maxAttempts: { default: 4, ...RULES.positiveInteger },
  timeoutMs: { default: 10_000, ...RULES.ms },
  maxRetryAfterSeconds: { default: MAX_RETRY_AFTER_SECONDS, ...RULES.secondsOrZero },
  sleep: { default: 'a timer', ...RULES.function },
  now: { default: 'Date.now', ...RULES.function },
} as const satisfies OptionTable<TokenSourceOptions>;
