/**
 * This process's counters, kept beside the OpenTelemetry instruments (src/server/metrics.ts
 * adds to both): what the Prometheus exposition and the status page's time series read.
 * Bounded: every label comes from a closed list of the kit's (an unknown decision type is
 * counted as `other`), so a hostile report cannot grow it.
 */
import type { METRICS, MetricKey } from './names.js';

/** Every counter of names.ts, by its kind there. */
export type CounterKey = { [K in MetricKey]: (typeof METRICS)[K]['kind'] extends 'counter' ? K : never }[MetricKey];

export interface CounterValue {
  metric: CounterKey;
  labels: Readonly<Record<string, string>>;
  value: number;
}

const counters = new Map<string, CounterValue>();

/** The labels `metric` is counted with: its row's in names.ts, every one of them. */
export type LabelsOf<K extends CounterKey> = Record<(typeof METRICS)[K]['labels'][number], string>;

/** Adds `by` to the counter `metric` with these labels. */
export function count<K extends CounterKey>(metric: K, labels: LabelsOf<K>, by = 1): void {
  const id = `${metric}\u0000${Object.entries<string>(labels)
    .map(([name, value]) => `${name}=${value}`)
    .join('\u0000')}`;
  const counter = counters.get(id);
  if (counter) counter.value += by;
  else counters.set(id, { metric, labels: { ...labels }, value: by });
}

/** Every counter now, as copies. */
export function counterValues(): CounterValue[] {
  return [...counters.values()].map((counter) => ({ ...counter }));
}
