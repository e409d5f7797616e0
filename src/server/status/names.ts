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
  /** Its labels (OpenTelemetry's attributes): a counter is counted with exactly these (tally.ts's `count`). */
  readonly labels: readonly string[];
}

/**
 * The queue counter's events, each with what it means where its name does not say
 * (docs/operating.md#queue-metrics): the counter's help and the docs' table are made from it.
 */
export const QUEUE_EVENTS = {
  accepted: '',
  refused: 'queue full',
  checked: '',
  failed: '',
  stale: 'past the trust bound',
  retried: '',
  service_refused: 'a 429 from the service',
  replayed: "a job whose key was answered before it ran: a browser's retry added as the first job ended",
} as const;
export type QueueEvent = keyof typeof QUEUE_EVENTS;

/** The labels of the queue's gauges: the instance that reports, and whose queue (`instance` or `fleet`: docs/operating.md). */
const QUEUE_GAUGE = ['instance', 'scope'] as const;

export const METRICS = {
  outcomes: {
    name: 'blackbox_capture.capture.outcomes',
    kind: 'counter',
    labels: ['outcome', 'engine'],
    help: 'Captures by how they ended, as the page reported them, and by the engine of the browser that sent the report (chromium, firefox, webkit, other: from its User-Agent)',
  },
  duration: {
    name: 'blackbox_capture.capture.duration',
    kind: 'histogram',
    unit: 'ms',
    labels: ['outcome'],
    help: 'Time from the capture call to its final value or failure',
  },
  upstream: {
    name: 'blackbox_capture.upstream.calls',
    kind: 'counter',
    labels: ['operation', 'result'],
    help: "Calls to the token service and the Device Risk API, by operation (token, account create, upload, finalize, status, …) and result (ok, http_4xx, http_429, http_5xx, network_error; http_429: the service refused for the tenant's limit)",
  },
  repairs: {
    name: 'blackbox_capture.blackbox.repairs',
    kind: 'counter',
    labels: ['repair'],
    help: 'Damaged blackboxes repaired before the upload, by repair (spaces_for_plus, percent_encoding, line_breaks, quotes)',
  },
  queue: {
    name: 'blackbox_capture.queue.checks',
    kind: 'counter',
    labels: ['event'],
    help: `Checks by event: ${Object.entries(QUEUE_EVENTS)
      .map(([event, meaning]) => (meaning ? `${event} (${meaning})` : event))
      .join(', ')}`,
  },
  queueWait: {
    name: 'blackbox_capture.queue.wait',
    kind: 'histogram',
    unit: 'ms',
    labels: [],
    help: 'Time from the acceptance of a check to its start',
  },
  decisions: {
    name: 'blackbox_capture.decisions',
    kind: 'counter',
    labels: ['type'],
    help: 'Decisions told to onResult, by type (PASSED, REJECTED, WARNING, NOT_EXECUTED, other)',
  },
  proxy: {
    name: 'blackbox_capture.proxy.answers',
    kind: 'counter',
    labels: ['result'],
    help: 'Answers of the first-party proxy, by result (ok, http_4xx, http_5xx from the collector; unreachable, timeout, bad_upstream its own 502 and 504)',
  },
  depth: {
    name: 'blackbox_capture.queue.depth',
    kind: 'gauge',
    labels: QUEUE_GAUGE,
    help: 'Checks accepted and not yet finished',
  },
  oldest: {
    name: 'blackbox_capture.queue.oldest_age',
    kind: 'gauge',
    unit: 's',
    labels: QUEUE_GAUGE,
    help: 'Age of the oldest check waiting',
  },
  drain: {
    name: 'blackbox_capture.queue.drain_rate',
    kind: 'gauge',
    labels: QUEUE_GAUGE,
    help: 'Checks finished a second after trying (checked or failed), over the last minute; stale drops not counted',
  },
  stale: {
    name: 'blackbox_capture.queue.stale',
    kind: 'gauge',
    labels: QUEUE_GAUGE,
    help: 'Checks dropped unchecked past the trust bound, over the last minute',
  },
  timeLeft: {
    name: 'blackbox_capture.queue.time_left',
    kind: 'gauge',
    unit: 's',
    labels: QUEUE_GAUGE,
    help: 'Time before the oldest check waiting reaches the trust bound (the whole bound when none waits)',
  },
  needed: {
    name: 'blackbox_capture.queue.needed_rate',
    kind: 'gauge',
    labels: QUEUE_GAUGE,
    help: 'Checks a second (one account request each) that would check every accepted checkout in time: the acceptance rate plus the backlog over the time left',
  },
  // The gateway's own (src/gateway: `npx blackbox-capture serve`), on its admin listener.
  requests: {
    name: 'blackbox_capture.gateway.requests',
    kind: 'counter',
    labels: ['route', 'status'],
    help: "Requests the gateway answered, by route (its table's path; unmatched: none) and status",
  },
  refusals: {
    name: 'blackbox_capture.gateway.refusals',
    kind: 'counter',
    labels: ['code'],
    help: "Requests the gateway refused (4xx and 5xx), by the answer's error code (status_<n> for an answer without one)",
  },
  webhooks: {
    name: 'blackbox_capture.gateway.webhook_attempts',
    kind: 'counter',
    labels: ['result'],
    help: 'Deliveries tried to DECISION_URL, by result (delivered, http_3xx, http_4xx, http_5xx, timeout, network_error)',
  },
  outboxDepth: {
    name: 'blackbox_capture.gateway.outbox.depth',
    kind: 'gauge',
    labels: [],
    help: "Decisions and failures kept for the shop and not yet delivered (the fleet's, on a shared Redis)",
  },
  outboxOldest: {
    name: 'blackbox_capture.gateway.outbox.oldest_undelivered',
    kind: 'gauge',
    unit: 's',
    labels: [],
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
