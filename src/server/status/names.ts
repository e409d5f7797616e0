/**
 * The one list of the kit's metrics: the OpenTelemetry instruments (src/server/metrics.ts)
 * and the Prometheus exposition (exposition.ts) take their names, kinds and help from here,
 * so a dashboard's query names the same series whichever way it is exported
 * (docs/operating.md#metrics-and-the-status-page).
 */
import { DECISION_LABELS, ENGINES } from './engine.js';

export interface MetricDefinition {
  /** The OpenTelemetry instrument's name. */
  readonly name: string;
  readonly kind: 'counter' | 'gauge' | 'histogram';
  readonly help: string;
  /** The unit OpenTelemetry records; `ms` becomes the Prometheus suffix `_milliseconds`, `s` `_seconds`. */
  readonly unit?: 'ms' | 's';
  /** Its labels (OpenTelemetry's attributes): a counter is counted with exactly these (tally.ts's `count`). */
  readonly labels: readonly string[];
  /** The values a label takes, for each label whose values are a closed list: what a query may name. */
  readonly values?: Readonly<Record<string, readonly string[]>>;
}

/**
 * The queue counter's events, each with what it means where its name does not say
 * (docs/operating.md#queue-metrics): the counter's help and the docs' table are made from it.
 */
const QUEUE_EVENTS = {
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

/**
 * The calls to the token service and the Device Risk API, by the operation they are counted
 * under (src/server/api/call.ts's `Call`, and the token request).
 */
const UPSTREAM_OPERATIONS = [
  'token',
  'account create',
  'account update',
  'upload',
  'finalize',
  'status',
  'details',
] as const;
export type UpstreamOperation = (typeof UPSTREAM_OPERATIONS)[number];

/** The result of a call to the service (src/server/metrics.ts's `recordUpstream`): its status class, or no answer. */
const UPSTREAM_RESULTS = {
  ok: '',
  http_4xx: '',
  http_429: "the service refused for the tenant's limit",
  http_5xx: '',
  network_error: '',
} as const;
export type UpstreamResult = keyof typeof UPSTREAM_RESULTS;

/**
 * The repairs of a damaged blackbox (src/server/endpoint/repair.ts, whose `BlackboxRepair` is
 * this list's): here, not there, because that module reaches the metrics through the API client.
 */
export const BLACKBOX_REPAIRS = {
  spaces_for_plus: 'spaces where + was, from form decoding',
  percent_encoding: '%2B left encoded',
  line_breaks: 'from wrapping',
  quotes: 'surrounding quotes',
} as const;

/** An answer of the first-party proxy (src/server/proxy/proxy.ts): the collector's status class, or its own failure. */
const PROXY_RESULTS = {
  ok: "the collector's 2xx or 3xx",
  http_4xx: '',
  http_5xx: '',
  unreachable: 'its own 502: the collector not reached',
  timeout: 'its own 504: no answer in time',
  bad_upstream: 'its own 502: an answer it does not pass on',
} as const;
export type ProxyResult = keyof typeof PROXY_RESULTS;

/**
 * A delivery to the shop's DECISION_URL (src/gateway/outbox.ts): here with the gateway's other
 * metrics, since the kit does not import the gateway; the gateway takes the type through parts.ts.
 */
const WEBHOOK_RESULTS = {
  delivered: '',
  http_3xx: '',
  http_4xx: '',
  http_5xx: 'a status past 599 too',
  timeout: '',
  network_error: '',
} as const;
export type WebhookResult = keyof typeof WEBHOOK_RESULTS;

/** A list of label values for a help text: each with its meaning in brackets where it has one. */
const listed = (values: Readonly<Record<string, string>>): string =>
  Object.entries(values)
    .map(([value, meaning]) => (meaning ? `${value} (${meaning})` : value))
    .join(', ');

/** The labels of the queue's gauges: the instance that reports, and whose queue (`instance` or `fleet`: docs/operating.md). */
const QUEUE_GAUGE = ['instance', 'scope'] as const;
/** Whose queue a gauge reads: this instance's own, or the fleet's (a shared queue). */
const QUEUE_SCOPES = ['instance', 'fleet'] as const;
export type QueueScope = (typeof QUEUE_SCOPES)[number];
const keys = (values: Readonly<Record<string, string>>): string[] => Object.keys(values);

export const METRICS = {
  outcomes: {
    name: 'blackbox_capture.capture.outcomes',
    kind: 'counter',
    labels: ['outcome', 'engine'],
    values: { engine: ENGINES },
    help: `Captures by how they ended, as the page reported them, and by the engine of the browser that sent the report (${ENGINES.join(', ')}: from its User-Agent)`,
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
    values: { operation: UPSTREAM_OPERATIONS, result: keys(UPSTREAM_RESULTS) },
    help: `Calls to the token service and the Device Risk API, by operation (${UPSTREAM_OPERATIONS.join(', ')}) and result: ${listed(UPSTREAM_RESULTS)}`,
  },
  repairs: {
    name: 'blackbox_capture.blackbox.repairs',
    kind: 'counter',
    labels: ['repair'],
    values: { repair: keys(BLACKBOX_REPAIRS) },
    help: `Damaged blackboxes repaired before the upload, by repair: ${listed(BLACKBOX_REPAIRS)}`,
  },
  queue: {
    name: 'blackbox_capture.queue.checks',
    kind: 'counter',
    labels: ['event'],
    values: { event: keys(QUEUE_EVENTS) },
    help: `Checks by event: ${listed(QUEUE_EVENTS)}`,
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
    values: { type: DECISION_LABELS },
    help: `Decisions told to onResult, by type (${DECISION_LABELS.join(', ')})`,
  },
  proxy: {
    name: 'blackbox_capture.proxy.answers',
    kind: 'counter',
    labels: ['result'],
    values: { result: keys(PROXY_RESULTS) },
    help: `Answers of the first-party proxy, by result: ${listed(PROXY_RESULTS)}`,
  },
  depth: {
    name: 'blackbox_capture.queue.depth',
    kind: 'gauge',
    labels: QUEUE_GAUGE,
    values: { scope: QUEUE_SCOPES },
    help: 'Checks accepted and not yet finished, less those only reading their decision',
  },
  oldest: {
    name: 'blackbox_capture.queue.oldest_age',
    kind: 'gauge',
    unit: 's',
    labels: QUEUE_GAUGE,
    values: { scope: QUEUE_SCOPES },
    help: 'Age of the oldest check waiting',
  },
  drain: {
    name: 'blackbox_capture.queue.drain_rate',
    kind: 'gauge',
    labels: QUEUE_GAUGE,
    values: { scope: QUEUE_SCOPES },
    help: 'Checks finished a second after trying (checked or failed), over the last minute; stale drops not counted',
  },
  stale: {
    name: 'blackbox_capture.queue.stale',
    kind: 'gauge',
    labels: QUEUE_GAUGE,
    values: { scope: QUEUE_SCOPES },
    help: 'Checks dropped unchecked past the trust bound, over the last minute',
  },
  timeLeft: {
    name: 'blackbox_capture.queue.time_left',
    kind: 'gauge',
    unit: 's',
    labels: QUEUE_GAUGE,
    values: { scope: QUEUE_SCOPES },
    help: 'Time before the oldest check waiting reaches the trust bound (the whole bound when none waits)',
  },
  needed: {
    name: 'blackbox_capture.queue.needed_rate',
    kind: 'gauge',
    labels: QUEUE_GAUGE,
    values: { scope: QUEUE_SCOPES },
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
    values: { result: keys(WEBHOOK_RESULTS) },
    help: `Deliveries tried to DECISION_URL, by result: ${listed(WEBHOOK_RESULTS)}`,
  },
  webhooksGivenUp: {
    name: 'blackbox_capture.gateway.webhooks_given_up',
    kind: 'counter',
    labels: [],
    help: 'Decisions and failures the gateway gave up on after refused deliveries for six days: each an order the shop never took (GET /decisions shows it a day more)',
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
