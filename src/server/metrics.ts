/**
 * OpenTelemetry metrics of the server kit, through `@opentelemetry/api` when the
 * application has it (an optional peer dependency): with no API installed, or no SDK
 * registered, nothing is recorded and nothing breaks. Instruments:
 * - `blackbox_capture.capture.outcomes` (counter, attribute `outcome`): how the page's captures ended;
 * - `blackbox_capture.capture.duration` (histogram, ms, attribute `outcome`): call to final value;
 * - `blackbox_capture.upstream.calls` (counter, attributes `operation`, `result`): calls to the
 *   token service and the API, `result` one of `ok`, `http_4xx`, `http_429`, `http_5xx`, `network_error`;
 * - `blackbox_capture.blackbox.repairs` (counter, attribute `repair`): damaged blackboxes repaired;
 * - `blackbox_capture.queue.checks` (counter, attribute `event`): checks `accepted`, `refused`
 *   (queue full), `checked`, `failed`, `stale` (past the trust bound), `retried`, `service_refused` (429);
 * - `blackbox_capture.queue.wait` (histogram, ms): acceptance to the start of the check;
 * - `blackbox_capture.queue.depth` and `blackbox_capture.queue.oldest_age` (ms),
 *   `blackbox_capture.queue.drain_rate` (checks tried a second, stale drops not counted) and
 *   `blackbox_capture.queue.stale` (checks dropped stale in the last minute): gauges read from
 *   each handler's queue, with the attributes `instance` (this process: the handler's
 *   `instanceId`, default hostname:pid) and `scope`: `fleet` for a shared queue's figures (the
 *   same on every instance: take `max`, never `sum`, over instances), `instance` for a queue
 *   of this process's own (memory: `sum` over instances). docs/operating.md#queue-metrics.
 */
import type { CaptureOutcome } from '../shared/types.js';
import { ERR_NETWORK } from './errors.js';

interface Instruments {
  outcomes: { add(value: number, attributes: Record<string, string>): void };
  duration: { record(value: number, attributes: Record<string, string>): void };
  upstream: { add(value: number, attributes: Record<string, string>): void };
  repairs: { add(value: number, attributes: Record<string, string>): void };
  queue: { add(value: number, attributes: Record<string, string>): void };
  queueWait: { record(value: number): void };
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
  }>;
}

/** The queues the gauges report, each with the instance it names; summed per instance and scope (a process may run several handlers). */
const backlogSources = new Map<BacklogSource, string | undefined>();

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

type Recording = (instruments: Instruments) => void;

let instruments: Instruments | null | undefined;
let loading: Promise<void> | undefined;
const queued: Recording[] = [];

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
      instruments = {
        outcomes: meter.createCounter('blackbox_capture.capture.outcomes', {
          description: 'Captures by how they ended, as the page reported them',
        }),
        duration: meter.createHistogram('blackbox_capture.capture.duration', {
          description: 'Time from the capture call to its final value or failure',
          unit: 'ms',
        }),
        upstream: meter.createCounter('blackbox_capture.upstream.calls', {
          description: 'Calls to the token service and the Device Risk API, by result',
        }),
        repairs: meter.createCounter('blackbox_capture.blackbox.repairs', {
          description: 'Damaged blackboxes repaired before the upload',
        }),
        queue: meter.createCounter('blackbox_capture.queue.checks', {
          description: 'Checks accepted, refused, finished and retried by the queue',
        }),
        queueWait: meter.createHistogram('blackbox_capture.queue.wait', {
          description: 'Time from the acceptance of a check to its start',
          unit: 'ms',
        }),
      };
      const depth = meter.createObservableGauge('blackbox_capture.queue.depth', {
        description: 'Checks accepted and not yet finished',
      });
      const oldest = meter.createObservableGauge('blackbox_capture.queue.oldest_age', {
        description: 'Age of the oldest check waiting',
        unit: 'ms',
      });
      const rate = meter.createObservableGauge('blackbox_capture.queue.drain_rate', {
        description:
          'Checks finished a second after trying (checked or failed), over the last minute; stale drops not counted',
      });
      const stale = meter.createObservableGauge('blackbox_capture.queue.stale', {
        description: 'Checks dropped unchecked past the trust bound, over the last minute',
      });
      meter.addBatchObservableCallback(
        async (result) => {
          const observed = new Map<
            string,
            { attributes: Record<string, string>; queued: number; oldestAgeMs: number; drain: number; stale: number }
          >();
          for (const [source, instanceId] of backlogSources) {
            const figures = await source().catch(() => undefined);
            if (!figures) continue;
            const attributes = {
              instance: instanceId ?? (await defaultInstanceId()),
              scope: figures.fleetWide ? 'fleet' : 'instance',
            };
            const id = `${attributes.instance}\u0000${attributes.scope}`;
            const sum = observed.get(id) ?? { attributes, queued: 0, oldestAgeMs: 0, drain: 0, stale: 0 };
            sum.queued += figures.queued;
            sum.oldestAgeMs = Math.max(sum.oldestAgeMs, figures.oldestAgeMs);
            sum.drain += figures.drainPerSecond;
            sum.stale += figures.staleLastMinute;
            observed.set(id, sum);
          }
          for (const { attributes, ...sum } of observed.values()) {
            result.observe(depth, sum.queued, attributes);
            result.observe(oldest, sum.oldestAgeMs, attributes);
            result.observe(rate, sum.drain, attributes);
            result.observe(stale, sum.stale, attributes);
          }
        },
        [depth, oldest, rate, stale],
      );
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

export function recordOutcome(outcome: CaptureOutcome): void {
  record((i) => {
    i.outcomes.add(1, { outcome: outcome.outcome });
    i.duration.record(outcome.durationMs, { outcome: outcome.outcome });
  });
}

export function recordUpstream(operation: string, status: number | typeof ERR_NETWORK): void {
  const result =
    status === ERR_NETWORK
      ? status
      : status < 400
        ? 'ok'
        : status === 429
          ? 'http_429'
          : status < 500
            ? 'http_4xx'
            : 'http_5xx';
  record((i) => i.upstream.add(1, { operation, result }));
}

export function recordRepairs(repairs: readonly string[]): void {
  record((i) => {
    for (const repair of repairs) i.repairs.add(1, { repair });
  });
}

export type QueueEvent = 'accepted' | 'refused' | 'checked' | 'failed' | 'stale' | 'retried' | 'service_refused';

export function recordQueue(event: QueueEvent): void {
  record((i) => i.queue.add(1, { event }));
}

export function recordQueueWait(ms: number): void {
  record((i) => i.queueWait.record(ms));
}

/** Reports `source` in the queue gauges, under `instanceId` (default hostname:pid), until the returned function is called. */
export function observeBacklog(source: BacklogSource, instanceId?: string): () => void {
  backlogSources.set(source, instanceId);
  // Loads the API, so that the gauges exist before the first check.
  record(() => {});
  return () => backlogSources.delete(source);
}
