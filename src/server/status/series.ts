/**
 * The status page's time series: fixed buckets, 60 of one minute and 96 of fifteen (the last
 * hour and the last day), so that its size never depends on the traffic. Each instance adds
 * what its counters gained since its last sample and writes its own gauges under its name;
 * the fleet's shared figures are written once, under `fleet`, by the reporter
 * (monitor.ts). A chart sums the writers of a bucket (docs/operating.md#metrics-and-the-status-page).
 */

export const MINUTE_MS = 60_000;
export const QUARTER_MS = 15 * MINUTE_MS;
export const MINUTE_BUCKETS = 60;
export const QUARTER_BUCKETS = 96;
/** Writers a bucket keeps at most: a fleet bigger than this loses the gauges of the extra instances, never the counts. */
export const MAX_WRITERS = 64;

/** The gauges an instance (or `fleet`) writes: the queue's readings, added up over its queues. */
export interface GaugeSample {
  queued: number;
  oldestAgeMs: number;
  /** None for a writer with no queue of its own (an instance on a shared queue: the fleet's is under `fleet`). */
  timeLeftMs?: number;
  drainPerSecond: number;
  staleLastMinute: number;
  neededPerSecond: number;
}

export interface Bucket {
  /** The bucket's start, epoch ms, a multiple of its length. */
  start: number;
  /** Counter increases in the bucket, by `metric|label=value,…`. */
  counts: Record<string, number>;
  /** Each writer's gauges: its last reading (minute buckets) or its worst (quarter buckets). */
  gauges: Record<string, GaugeSample>;
}

export interface Series {
  minutes: Bucket[];
  quarters: Bucket[];
}

export const emptySeries = (): Series => ({ minutes: [], quarters: [] });

const optional = (timeLeftMs: number | undefined) => (timeLeftMs === undefined ? {} : { timeLeftMs });

const least = (a: number | undefined, b: number | undefined) =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b);

/** The worst of two readings: most queued, oldest, least time left, most needed; the drain rate at its lowest. */
const worst = (a: GaugeSample, b: GaugeSample): GaugeSample => ({
  queued: Math.max(a.queued, b.queued),
  oldestAgeMs: Math.max(a.oldestAgeMs, b.oldestAgeMs),
  ...optional(least(a.timeLeftMs, b.timeLeftMs)),
  drainPerSecond: Math.min(a.drainPerSecond, b.drainPerSecond),
  staleLastMinute: Math.max(a.staleLastMinute, b.staleLastMinute),
  neededPerSecond: Math.max(a.neededPerSecond, b.neededPerSecond),
});

function addTo(
  buckets: Bucket[],
  lengthMs: number,
  keep: number,
  at: number,
  sample: Sample,
  merge: (old: GaugeSample, fresh: GaugeSample) => GaugeSample,
): Bucket[] {
  const start = Math.floor(at / lengthMs) * lengthMs;
  const kept = buckets.filter((bucket) => bucket.start > start - keep * lengthMs && bucket.start <= start);
  let bucket = kept.find((b) => b.start === start);
  if (!bucket) {
    bucket = { start, counts: {}, gauges: {} };
    kept.push(bucket);
  }
  for (const [key, value] of Object.entries(sample.counts)) bucket.counts[key] = (bucket.counts[key] ?? 0) + value;
  for (const [writer, gauges] of Object.entries(sample.gauges)) {
    const old = bucket.gauges[writer];
    if (old) bucket.gauges[writer] = merge(old, gauges);
    else if (Object.keys(bucket.gauges).length < MAX_WRITERS) bucket.gauges[writer] = gauges;
  }
  return kept.sort((a, b) => a.start - b.start);
}

/** What one instance adds at one sample. */
export interface Sample {
  counts: Record<string, number>;
  gauges: Record<string, GaugeSample>;
}

/** The series with `sample` added at `at`; buckets older than their window dropped. */
export function addSample(series: Series, at: number, sample: Sample): Series {
  return {
    minutes: addTo(series.minutes, MINUTE_MS, MINUTE_BUCKETS, at, sample, (_, fresh) => fresh),
    quarters: addTo(series.quarters, QUARTER_MS, QUARTER_BUCKETS, at, sample, worst),
  };
}

/** A series read from the store: anything not of its shape is a fresh start, never an error on the page. */
export function parseSeries(text: string | undefined): Series {
  if (!text) return emptySeries();
  try {
    const value = JSON.parse(text) as Partial<Series>;
    return Array.isArray(value.minutes) && Array.isArray(value.quarters)
      ? { minutes: value.minutes, quarters: value.quarters }
      : emptySeries();
  } catch {
    return emptySeries();
  }
}

/** The key a counter's increase is kept under: its metric and labels. */
export const countKey = (metric: string, labels: Readonly<Record<string, string>>): string =>
  `${metric}|${Object.entries(labels)
    .map(([name, value]) => `${name}=${value}`)
    .join(',')}`;

/** A bucket's gauges over its writers: sums, but the oldest age at its most and the time left at its least. */
export function fleetGauges(bucket: Bucket): GaugeSample | undefined {
  const writers = Object.values(bucket.gauges);
  if (writers.length === 0) return undefined;
  return writers.reduce((sum, g) => ({
    queued: sum.queued + g.queued,
    oldestAgeMs: Math.max(sum.oldestAgeMs, g.oldestAgeMs),
    ...optional(least(sum.timeLeftMs, g.timeLeftMs)),
    drainPerSecond: sum.drainPerSecond + g.drainPerSecond,
    staleLastMinute: sum.staleLastMinute + g.staleLastMinute,
    neededPerSecond: sum.neededPerSecond + g.neededPerSecond,
  }));
}
