/**
 * The Prometheus text exposition (format 0.0.4) of the kit's counters and queue gauges, under
 * the names status/names.ts gives both exporters. Counters are this process's own work: a
 * `sum()` over the fleet's targets is the fleet's. Gauges carry `instance` and `scope`; a
 * shared queue's (`scope="fleet"`) are written by the reporter only (monitor.ts), so that
 * `sum()` over the fleet is true for them too (docs/operating.md#metrics-and-the-status-page).
 */
import type { BacklogReading } from '../metrics.js';
import { inUnit, METRICS, prometheusName, type MetricKey } from './names.js';
import type { CounterValue } from './tally.js';

/** A label value as the format escapes it: backslash, double quote and line feed. */
const escapeLabel = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

const labelText = (labels: Readonly<Record<string, string>>) => {
  const pairs = Object.entries(labels).map(([name, value]) => `${name}="${escapeLabel(value)}"`);
  return pairs.length ? `{${pairs.join(',')}}` : '';
};

const number = (value: number) =>
  Number.isNaN(value) ? 'NaN' : value === Infinity ? '+Inf' : value === -Infinity ? '-Inf' : String(value);

function family(key: MetricKey, lines: string[]): string[] {
  const metric = METRICS[key];
  const name = prometheusName(metric);
  return [
    `# HELP ${name} ${metric.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`,
    `# TYPE ${name} ${metric.kind}`,
    ...lines,
  ];
}

/** The gauges a reading gives, by metric, from its fields. */
const GAUGE_FIELDS = {
  depth: 'queued',
  oldest: 'oldestAgeMs',
  drain: 'drainPerSecond',
  stale: 'staleLastMinute',
  timeLeft: 'timeLeftMs',
  needed: 'neededPerSecond',
} as const satisfies Partial<Record<MetricKey, keyof BacklogReading>>;

/** The family of a gauge outside the queue's (the gateway's outbox), one line per labelled value. */
export function gaugeFamily(
  key: MetricKey,
  values: ReadonlyArray<{ labels: Readonly<Record<string, string>>; value: number }>,
): string {
  const name = prometheusName(METRICS[key]);
  return (
    family(
      key,
      values.map(({ labels, value }) => `${name}${labelText(labels)} ${number(value)}`),
    ).join('\n') + '\n'
  );
}

export function exposition(counters: readonly CounterValue[], readings: readonly BacklogReading[]): string {
  const out: string[] = [];
  const byMetric = new Map<MetricKey, CounterValue[]>();
  for (const counter of counters) byMetric.set(counter.metric, [...(byMetric.get(counter.metric) ?? []), counter]);
  for (const [key, values] of byMetric) {
    const name = prometheusName(METRICS[key]);
    out.push(
      ...family(
        key,
        values.map(({ labels, value }) => `${name}${labelText(labels)} ${number(value)}`),
      ),
    );
  }
  for (const [key, field] of Object.entries(GAUGE_FIELDS) as [
    MetricKey,
    (typeof GAUGE_FIELDS)[keyof typeof GAUGE_FIELDS],
  ][]) {
    const name = prometheusName(METRICS[key]);
    const lines = readings
      .filter((reading) => reading[field] !== undefined)
      .map(
        (reading) =>
          `${name}${labelText({ instance: reading.instance, scope: reading.scope })} ${number(inUnit(key, reading[field]!))}`,
      );
    if (lines.length) out.push(...family(key, lines));
  }
  return out.join('\n') + '\n';
}
