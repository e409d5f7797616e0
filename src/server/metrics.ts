/**
 * OpenTelemetry metrics of the server kit, through `@opentelemetry/api` when the
 * application has it (an optional peer dependency): with no API installed, or no SDK
 * registered, nothing is recorded and nothing breaks. Each counter is also kept in this
 * process (status/tally.ts) for the Prometheus exposition and the status page; the names are
 * status/names.ts's, with their kinds, units, labels and help (docs/operating.md lists them,
 * written from that table). The queue's gauges carry `instance` (this process: the handler's
 * `instanceId`, default hostname:pid) and `scope`: `fleet` for a shared queue's figures (the
 * same on every instance: take `max`, never `sum`, over instances), `instance` for a queue of
 * this process's own (memory: `sum` over instances). With a status monitor
 * (status/monitor.ts), fleet figures are observed by the one instance that holds its reporter
 * lease, so that `sum` is true too. docs/operating.md#queue-metrics.
 */
import type { CaptureOutcome } from '../shared/types.js';
import type { BlackboxRepair } from './endpoint/repair.js';
import { ERR_NETWORK } from './errors.js';
import { decisionLabel, engineOf } from './status/engine.js';
import {
  inUnit,
  METRICS,
  type MetricKey,
  type ProxyResult,
  type QueueEvent,
  type QueueScope,
  type UpstreamOperation,
  type UpstreamResult,
} from './status/names.js';
import { count, type CounterKey, type LabelsOf } from './status/tally.js';

/** The histograms of names.ts: recorded here only (the exposition has no histograms). */
type HistogramKey = { [K in MetricKey]: (typeof METRICS)[K]['kind'] extends 'histogram' ? K : never }[MetricKey];

/**
 * An instrument for every counter and histogram of names.ts, made from its row: a metric added
 * there is exported by OpenTelemetry with nothing more to write here.
 */
interface Instruments {
  counters: Record<CounterKey, { add(value: number, attributes: Record<string, string>): void }>;
  histograms: Record<HistogramKey, { record(value: number, attributes?: Record<string, string>): void }>;
}

/** What a handler's queue says when the gauges are read. */
export interface BacklogSource {
  (): Promise<{
    queued: number;
    oldestAgeMs: number;
    drainPerSecond: number;
    staleLastMinute: number;
    /** The figures are the whole fleet's (a shared queue), read the same on every instance. */
    fleetWide: boolean;
    timeLeftMs: number;
    acceptedPerSecond: number;
  }>;
}

/** One series of the queue gauges: an instance's queues of one scope, added up. */
export interface BacklogReading {
  instance: string;
  scope: QueueScope;
  queued: number;
  oldestAgeMs: number;
  drainPerSecond: number;
  staleLastMinute: number;
  /** The least time left of these queues, in ms; none for a reading made only of the acceptance rate (an instance on a shared queue). */
  timeLeftMs?: number;
  /** Checks a second these queues need: for `instance`, this instance's acceptance rate plus its own backlog's; for `fleet`, the shared backlog's. */
  neededPerSecond: number;
}

/** The queues the gauges report, each with the instance it names; summed per instance and scope (a process may run several handlers). */
const backlogSources = new Map<BacklogSource, string | undefined>();

/** Whether this process reports the fleet's figures (the status monitor's reporter lease); true without a monitor. */
let fleetReporter: () => boolean = () => true;

/** Set by the status monitor: fleet figures are then read on the one instance that holds its lease. */
export function reportFleetFiguresWhen(holder: () => boolean): void {
  fleetReporter = holder;
}

let defaultInstance: Promise<string> | undefined;

/**
 * This process's name in the gauges when the handler gives none: hostname:pid where the
 * runtime has them (Node, Bun, Deno), otherwise a random id for the life of the isolate.
 */
export function defaultInstanceId(): Promise<string> {
  const osName = 'node:os';
  defaultInstance ??= import(/* @vite-ignore */ osName)
    .then((os: typeof import('node:os')) => os.hostname())
    .catch(() => undefined)
    .then((host) => {
      const pid = (globalThis as { process?: { pid?: number } }).process?.pid;
      return host && pid !== undefined ? `${host}:${pid}` : `${host ?? 'isolate'}:${crypto.randomUUID().slice(0, 8)}`;
    });
  return defaultInstance;
}

/** Checks a second that clear `queued` within `timeLeftMs` (one second at least: a backlog past its bound needs all of it now). */
const backlogNeed = (queued: number, timeLeftMs: number) =>
  queued === 0 ? 0 : queued / Math.max(1, timeLeftMs / 1000);

/**
 * The queue gauges now, one reading per instance and scope. The acceptance rate is each
 * instance's own, so it goes to its `instance` reading whatever the queue; a shared queue's
 * figures are left out on an instance that is not the fleet's reporter.
 */
export async function readBacklogs(): Promise<BacklogReading[]> {
  const readings = new Map<string, BacklogReading>();
  const reporter = fleetReporter();
  for (const [source, instanceId] of backlogSources) {
    const figures = await source().catch(() => undefined);
    if (!figures) continue;
    const instance = instanceId ?? (await defaultInstanceId());
    const reading = (scope: BacklogReading['scope']) => {
      const id = `${instance}\u0000${scope}`;
      const found =
        readings.get(id) ??
        ({
          instance,
          scope,
          queued: 0,
          oldestAgeMs: 0,
          drainPerSecond: 0,
          staleLastMinute: 0,
          neededPerSecond: 0,
        } satisfies BacklogReading);
      readings.set(id, found);
      return found;
    };
    reading('instance').neededPerSecond += figures.acceptedPerSecond;
    if (figures.fleetWide && !reporter) continue;
    const sum = reading(figures.fleetWide ? 'fleet' : 'instance');
    sum.queued += figures.queued;
    sum.oldestAgeMs = Math.max(sum.oldestAgeMs, figures.oldestAgeMs);
    sum.drainPerSecond += figures.drainPerSecond;
    sum.staleLastMinute += figures.staleLastMinute;
    sum.timeLeftMs = Math.min(sum.timeLeftMs ?? Infinity, figures.timeLeftMs);
    sum.neededPerSecond += backlogNeed(figures.queued, figures.timeLeftMs);
  }
  return [...readings.values()];
}

type Recording = (instruments: Instruments) => void;

let instruments: Instruments | null | undefined;
let loading: Promise<void> | undefined;
const queued: Recording[] = [];

type Meter = ReturnType<typeof import('@opentelemetry/api').metrics.getMeter>;

const counter = (meter: Meter, key: keyof typeof METRICS) =>
  meter.createCounter(METRICS[key].name, { description: METRICS[key].help });
const histogram = (meter: Meter, key: keyof typeof METRICS) =>
  meter.createHistogram(METRICS[key].name, { description: METRICS[key].help, unit: 'ms' });
const gauge = (meter: Meter, key: keyof typeof METRICS) => {
  const metric: { help: string; unit?: 'ms' | 's' } = METRICS[key];
  return meter.createObservableGauge(METRICS[key].name, {
    description: metric.help,
    ...(metric.unit ? { unit: metric.unit } : {}),
  });
};

/** The queue gauges, observed together from readBacklogs(). */
function observeGauges(meter: Meter): void {
  const withKey = (key: MetricKey) => [key, gauge(meter, key)] as const;
  const gauges = {
    queued: withKey('depth'),
    oldestAgeMs: withKey('oldest'),
    drainPerSecond: withKey('drain'),
    staleLastMinute: withKey('stale'),
    timeLeftMs: withKey('timeLeft'),
    neededPerSecond: withKey('needed'),
  };
  meter.addBatchObservableCallback(
    async (result) => {
      for (const reading of await readBacklogs()) {
        const attributes = { instance: reading.instance, scope: reading.scope };
        for (const [field, [key, instrument]] of Object.entries(gauges)) {
          const value = reading[field as keyof typeof gauges];
          if (value !== undefined) result.observe(instrument, inUnit(key, value), attributes);
        }
      }
    },
    Object.values(gauges).map(([, instrument]) => instrument),
  );
}

/** The instruments, once the API is loaded (null: not installed). Recordings made before wait in a queue. */
function record(recording: Recording): void {
  if (instruments) return recording(instruments);
  // Stryker disable next-line ConditionalExpression: with the API absent, a recording queued after the failed load never runs; returning only saves the memory
  if (instruments === null) return;
  queued.push(recording);
  // A variable specifier: bundlers must not try to resolve an optional peer that is not installed.
  const name = '@opentelemetry/api';
  loading ??= import(/* @vite-ignore */ name).then(
    (api: typeof import('@opentelemetry/api')) => {
      // The API's global meter is a proxy: an SDK registered later still receives these.
      const meter = api.metrics.getMeter('blackbox-capture');
      const ofKind = (kind: 'counter' | 'histogram', make: typeof counter | typeof histogram) =>
        Object.fromEntries(
          (Object.keys(METRICS) as MetricKey[])
            .filter((key) => METRICS[key].kind === kind)
            .map((key) => [key, make(meter, key)]),
        );
      instruments = {
        counters: ofKind('counter', counter) as Instruments['counters'],
        histograms: ofKind('histogram', histogram) as Instruments['histograms'],
      };
      observeGauges(meter);
      for (const waiting of queued.splice(0)) waiting(instruments);
    },
    () => {
      instruments = null;
      queued.length = 0;
    },
  );
}

/** Resolves once the recordings made so far have reached the API (tests, shutdown). */
export async function metricsFlushed(): Promise<void> {
  await loading;
}

/** Adds one to the counter `metric`: in this process (tally.ts) and through OpenTelemetry. */
function add<K extends CounterKey>(metric: K, labels: LabelsOf<K>): void {
  count(metric, labels);
  record((i) => i.counters[metric].add(1, labels));
}

/** A capture's outcome, with the engine of the browser that reported it (its User-Agent). */
export function recordOutcome(outcome: CaptureOutcome, userAgent?: string | null): void {
  const attributes = { outcome: outcome.outcome, engine: engineOf(userAgent) };
  add('outcomes', attributes);
  record((i) => i.histograms.duration.record(outcome.durationMs, { outcome: outcome.outcome }));
}

export function recordUpstream(operation: UpstreamOperation, status: number | typeof ERR_NETWORK): void {
  const result: UpstreamResult =
    status === ERR_NETWORK
      ? status
      : status < 400
        ? 'ok'
        : status === 429
          ? 'http_429'
          : status < 500
            ? 'http_4xx'
            : 'http_5xx';
  add('upstream', { operation, result });
}

export function recordRepairs(repairs: readonly BlackboxRepair[]): void {
  for (const repair of repairs) add('repairs', { repair });
}

export function recordQueue(event: QueueEvent): void {
  add('queue', { event });
}

export function recordQueueWait(ms: number): void {
  record((i) => i.histograms.queueWait.record(ms));
}

/** A decision told to onResult (by the check or by the callback handler); details without a decision type count as `other`. */
export function recordDecision(details: { decision?: { type?: string } }): void {
  const attributes = { type: decisionLabel(details.decision?.type ?? '') };
  add('decisions', attributes);
}

/** One answer of the first-party proxy: the collector's status class, or the proxy's own failure. */
export function recordProxy(result: ProxyResult): void {
  add('proxy', { result });
}

/** Reports `source` in the queue gauges, under `instanceId` (default hostname:pid), until the returned function is called. */
export function observeBacklog(source: BacklogSource, instanceId?: string): () => void {
  backlogSources.set(source, instanceId);
  // Loads the API, so that the gauges exist before the first check.
  record(() => {});
  return () => backlogSources.delete(source);
}
