import { describe, expect, it } from 'vitest';
import {
  addSample,
  emptySeries,
  fleetGauges,
  MINUTE_BUCKETS,
  MINUTE_MS,
  parseSeries,
  QUARTER_BUCKETS,
  QUARTER_MS,
  MAX_WRITERS,
  type GaugeSample,
} from '../../../src/server/status/series.js';

const gauge = (queued: number, timeLeftMs?: number): GaugeSample => ({
  queued,
  oldestAgeMs: queued * 1000,
  ...(timeLeftMs === undefined ? {} : { timeLeftMs }),
  drainPerSecond: 1,
  staleLastMinute: 0,
  neededPerSecond: queued,
});

describe('the status series', () => {
  it('keeps 60 minute buckets and 96 quarter buckets, whatever the time it ran', () => {
    let series = emptySeries();
    for (let at = 0; at < 2 * 24 * 3_600_000; at += 5 * MINUTE_MS)
      series = addSample(series, at, { counts: { 'queue|event=stale': 1 }, gauges: {} });
    expect(series.minutes.length).toBeLessThanOrEqual(MINUTE_BUCKETS);
    expect(series.quarters).toHaveLength(QUARTER_BUCKETS);
    expect(series.quarters.every((b) => b.start % QUARTER_MS === 0)).toBe(true);
    // Three samples fell in each quarter hour.
    expect(series.quarters.at(-1)!.counts['queue|event=stale']).toBe(3);
  });

  it('adds counts from every writer and keeps each writer’s gauges apart, the fleet’s once', () => {
    let series = emptySeries();
    series = addSample(series, 1000, {
      counts: { 'queue|event=stale': 2 },
      gauges: { fleet: gauge(40, 20_000), a: gauge(0) },
    });
    series = addSample(series, 2000, { counts: { 'queue|event=stale': 1 }, gauges: { b: gauge(5, 50_000) } });
    series = addSample(series, 3000, { counts: {}, gauges: { fleet: gauge(42, 18_000) } });
    const [bucket] = series.minutes;
    expect(bucket!.counts['queue|event=stale']).toBe(3);
    // Last reading per writer in a minute bucket; sums over writers, the least time left.
    expect(fleetGauges(bucket!)).toMatchObject({ queued: 47, timeLeftMs: 18_000, oldestAgeMs: 42_000 });
    // The quarter bucket keeps each writer's worst.
    expect(fleetGauges(series.quarters[0]!)).toMatchObject({ queued: 47, timeLeftMs: 18_000 });
  });

  it('bounds the writers of a bucket', () => {
    let series = emptySeries();
    for (let i = 0; i < MAX_WRITERS + 10; i++)
      series = addSample(series, 0, { counts: {}, gauges: { [`w${i}`]: gauge(1) } });
    expect(Object.keys(series.minutes[0]!.gauges)).toHaveLength(MAX_WRITERS);
  });

  it('reads anything not a series as a fresh one', () => {
    expect(parseSeries(undefined)).toEqual(emptySeries());
    expect(parseSeries('{')).toEqual(emptySeries());
    expect(parseSeries('{"minutes":3}')).toEqual(emptySeries());
    const good = addSample(emptySeries(), 0, { counts: { x: 1 }, gauges: {} });
    expect(parseSeries(JSON.stringify(good))).toEqual(good);
  });
});
