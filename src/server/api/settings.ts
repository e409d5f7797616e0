/**
 * createDeviceRiskClient's settings module: every option with its default and its check
 * (CLIENT_OPTIONS, the table docs/server.md's client options are tested against), checked when
 * the client is made (docs/architecture.md#settings-modules).
 */
import { oneOf, REQUIRED, RULES, type OptionTable } from '../options-table.js';
import type { DeviceRiskClientOptions } from './device-risk-client.js';
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
