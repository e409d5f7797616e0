/**
 * The status entry's settings module: createStatusMonitor's, createMetricsHandler's and
 * createStatusHandler's options with their defaults and checks
 * (docs/architecture.md#settings-modules); docs/server.md's status options are tested against them.
 */
import { REQUIRED, RULES, type OptionRule, type OptionTable } from '../options-table.js';
import type { MetricsHandlerOptions, StatusHandlerOptions } from './index.js';
import type { StatusMonitorOptions } from './monitor.js';

const MONITOR: OptionRule = { ...RULES.object, expects: 'a StatusMonitor (createStatusMonitor)' };
const INSTANCE_ID = { default: 'hostname:pid', ...RULES.text };

/** Every option of createStatusMonitor: its default (docs/server.md#the-status-monitors-options) and its check. */
export const STATUS_MONITOR_OPTIONS = {
  store: { default: "this process's memory (createMemoryStore)", ...RULES.object },
  namespace: { default: 'bbc:status:', ...RULES.text },
  instanceId: INSTANCE_ID,
  // A sample a second at most: the series keeps a day of them (series.ts).
  sampleIntervalMs: {
    default: 10_000,
    valid: (value) => typeof value === 'number' && Number.isFinite(value) && value >= 1000,
    expects: 'a number of milliseconds, 1000 or more',
  },
  onError: { default: 'one line on console.error', ...RULES.function },
  now: { default: 'Date.now', ...RULES.function },
} as const satisfies OptionTable<StatusMonitorOptions>;

/** Every option of createMetricsHandler (docs/server.md#the-metrics-handlers-options). */
export const METRICS_HANDLER_OPTIONS = {
  monitor: { default: REQUIRED, ...MONITOR },
} as const satisfies OptionTable<MetricsHandlerOptions>;

/** Every option of createStatusHandler (docs/server.md#the-status-handlers-options). */
export const STATUS_HANDLER_OPTIONS = {
  monitor: { default: REQUIRED, ...MONITOR },
  instanceId: INSTANCE_ID,
  // The page fetches this URL only, never one of the request's: it must be one, absolute.
  doctor: {
    default: 'none: the page has no doctor button',
    valid: (value) =>
      typeof (value as { url?: unknown } | null)?.url === 'string' && URL.canParse((value as { url: string }).url),
    expects: '{ url } with the absolute URL of the checkout page the doctor checks',
  },
  figures: { default: 'none', ...RULES.function },
} as const satisfies OptionTable<StatusHandlerOptions>;
