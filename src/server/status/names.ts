/**
 * The one list of the kit's metrics: the OpenTelemetry instruments (src/server/metrics.ts)
 * and the Prometheus exposition (exposition.ts) take their names, kinds and help from here,
 * so a dashboard's query names the same series whichever way it is exported
 * (docs/operating.md#metrics-and-the-status-page).
 */

export interface MetricDefinition {
  /** The OpenTelemetry instrument's name. */
  readonly name: string;
  readonly kind: 'counter' | 'gauge' | 'histogram';
  readonly help: string;
  /** The unit OpenTelemetry records; `ms` becomes the Prometheus suffix `_milliseconds`, `s` `_seconds`. */
  readonly unit?: 'ms' | 's';
}

export const METRICS = {
  outcomes: {
    name: 'blackbox_capture.capture.outcomes',
    kind: 'counter',
    help: 'Captures by how they ended, as the page reported them, and by the browser engine that sent the report',
  },
  duration: {
    name: 'blackbox_capture.capture.duration',
    kind: 'histogram',
    unit: 'ms',
    help: 'Time from the capture call to its final value or failure',
  },
  upstream: {
    name: 'blackbox_capture.upstream.calls',
    kind: 'counter',
    help: "Calls to the token service and the Device Risk API, by result (http_429: the service refused for the tenant's limit)",
  },
  repairs: {
    name: 'blackbox_capture.blackbox.repairs',
    kind: 'counter',
    help: 'Damaged blackboxes repaired before the upload',
  },
  queue: {
    name: 'blackbox_capture.queue.checks',
    kind: 'counter',
    help: 'Checks accepted, refused, finished and retried by the queue',
  },
  queueWait: {
    name: 'blackbox_capture.queue.wait',
    kind: 'histogram',
    unit: 'ms',
    help: 'Time from the acceptance of a check to its start',
  },
  decisions: { name: 'blackbox_capture.decisions', kind: 'counter', help: 'Decisions told to onResult, by type' },
  proxy: {
    name: 'blackbox_capture.proxy.answers',
    kind: 'counter',
    help: 'Answers of the first-party proxy, by result (ok, http_4xx, http_5xx from the collector; unreachable, timeout, bad_upstream its own 502 and 504)',
  },
  depth: { name: 'blackbox_capture.queue.depth', kind: 'gauge', help: 'Checks accepted and not yet finished' },
  oldest: {
    name: 'blackbox_capture.queue.oldest_age',
    kind: 'gauge',
    unit: 's',
    help: 'Age of the oldest check waiting',
  },
  drain: {
    name: 'blackbox_capture.queue.drain_rate',
    kind: 'gauge',
    help: 'Checks finished a second after trying (checked or failed), over the last minute; stale drops not counted',
  },
  stale: {
    name: 'blackbox_capture.queue.stale',
    kind: 'gauge',
    help: 'Checks dropped unchecked past the trust bound, over the last minute',
  },
  timeLeft: {
    name: 'blackbox_capture.queue.time_left',
    kind: 'gauge',
    unit: 's',
    help: 'Time before the oldest check waiting reaches the trust bound (the whole bound when none waits)',
  },
  needed: {
    name: 'blackbox_capture.queue.needed_rate',
    kind: 'gauge',
    help: 'Checks a second (one account request each) that would check every accepted checkout in time: the acceptance rate plus the backlog over the time left',
  },
  // The gateway's own (src/gateway: `npx blackbox-capture serve`), on its admin listener.
  requests: {
    name: 'blackbox_capture.gateway.requests',
    kind: 'counter',
    help: "Requests the gateway answered, by route (its table's path; unmatched: none) and status",
  },
  refusals: {
    name: 'blackbox_capture.gateway.refusals',
    kind: 'counter',
    help: "Requests the gateway refused (4xx and 5xx), by the answer's error code",
  },
  webhooks: {
    name: 'blackbox_capture.gateway.webhook_attempts',
    kind: 'counter',
    help: 'Deliveries tried to DECISION_URL, by result (delivered, http_3xx, http_4xx, http_5xx, timeout, network_error)',
  },
  outboxDepth: {
    name: 'blackbox_capture.gateway.outbox.depth',
    kind: 'gauge',
    help: "Decisions and failures kept for the shop and not yet delivered (the fleet's, on a shared Redis)",
  },
  outboxOldest: {
    name: 'blackbox_capture.gateway.outbox.oldest_undelivered',
    kind: 'gauge',
    unit: 's',
    help: 'Age of the oldest decision or failure not yet delivered to the shop (0 when none waits)',
  },
} as const satisfies Record<string, MetricDefinition>;

export type MetricKey = keyof typeof METRICS;

/** The name the Prometheus exporters give an instrument: dots become `_`, the unit a suffix, a counter `_total`. */
export function prometheusName(metric: MetricDefinition): string {
  const suffix = metric.unit === 'ms' ? '_milliseconds' : metric.unit === 's' ? '_seconds' : '';
  const base = metric.name.replace(/\./g, '_') + suffix;
  return metric.kind === 'counter' ? `${base}_total` : base;
}

/**
 * A reading's value in its metric's unit: the readings keep milliseconds (`oldestAgeMs`), a
 * gauge in seconds (Prometheus's base unit, which `promtool check metrics` holds names to) is
 * written in them, by both exporters.
 */
export const inUnit = (key: MetricKey, value: number): number =>
  (METRICS[key] as MetricDefinition).unit === 's' ? value / 1000 : value;
