// The backlog's figures (drain rate over the last minute, time to drain) and its warning:
// once per backlog, when the checks waiting cannot all run within the trust bound.
import { describe, expect, it } from 'vitest';
import { createBacklogWarning, createDrainMeter, DRAIN_WINDOW_MS } from '../../../src/server/queue/backlog.js';

describe('createDrainMeter', () => {
  it('measures checks finished a second over the last minute, and the time the backlog needs', () => {
    let time = 1_000_000;
    const meter = createDrainMeter(() => time, 900_000);
    expect(meter.figures(0, undefined)).toEqual({
      queued: 0,
      oldestAgeMs: 0,
      drainPerSecond: 0,
      drainSeconds: 0,
      staleLastMinute: 0,
      fleetWide: false,
      timeLeftMs: 900_000,
      acceptedPerSecond: 0,
    });
    // A backlog 100 s old: measured over the whole window.
    expect(meter.figures(10, time - 100_000).drainSeconds).toBe(Infinity);
    for (let i = 0; i < 120; i++) {
      meter.drained();
      time += 500;
    }
    const figures = meter.figures(60, time - 100_000);
    expect(figures.drainPerSecond).toBeCloseTo(2, 1);
    expect(figures.drainSeconds).toBeGreaterThan(29);
    expect(figures.drainSeconds).toBeLessThan(32);
    expect(figures.oldestAgeMs).toBe(100_000);
    expect(figures.timeLeftMs).toBe(800_000);
    // Past the bound: no time left, never a negative one.
    expect(meter.figures(1, time - 1_000_000).timeLeftMs).toBe(0);
    // A minute later with nothing drained: the rate is gone, the backlog cannot drain.
    time += DRAIN_WINDOW_MS;
    expect(meter.figures(60, time - 200_000)).toMatchObject({ drainPerSecond: 0, drainSeconds: Infinity });
  });

  it('counts the checkouts accepted a second over the last minute', () => {
    let time = 1_000_000;
    const meter = createDrainMeter(() => time, 900_000);
    for (let i = 0; i < 30; i++) meter.accepted();
    expect(meter.figures(30, time).acceptedPerSecond).toBe(0.5);
    time += DRAIN_WINDOW_MS + 1000;
    expect(meter.figures(30, time).acceptedPerSecond).toBe(0);
  });

  it('a young backlog is measured over its own life, at least a second', () => {
    let time = 5_000_000;
    const meter = createDrainMeter(() => time, 900_000);
    meter.figures(5, time);
    time += 2_000;
    meter.drained();
    meter.drained();
    expect(meter.figures(3, time - 2_000).drainPerSecond).toBe(1);
    const fresh = createDrainMeter(() => time, 900_000);
    fresh.drained();
    expect(fresh.figures(1, time).drainPerSecond).toBe(1);
    // A shared queue: what the whole fleet finished, not this instance alone.
    expect(fresh.figures(8, time, { drained: 4, stale: 3 })).toMatchObject({
      drainPerSecond: 4,
      drainSeconds: 2,
      staleLastMinute: 3,
      fleetWide: true,
    });
  });

  it('a stale drop is not drained work: a backlog that only goes stale drains at 0, its drops counted apart', () => {
    let time = 9_000_000;
    const meter = createDrainMeter(() => time, 900_000);
    meter.figures(30, time - 120_000);
    for (let i = 0; i < 20; i++) {
      meter.stale();
      time += 100;
    }
    expect(meter.figures(10, time - 120_000)).toMatchObject({
      drainPerSecond: 0,
      drainSeconds: Infinity,
      staleLastMinute: 20,
    });
    meter.drained();
    expect(meter.figures(9, time - 120_000)).toMatchObject({ drainPerSecond: 1 / 60, staleLastMinute: 20 });
    // A minute later the drops are out of the window too.
    time += DRAIN_WINDOW_MS;
    expect(meter.figures(9, time - 180_000)).toMatchObject({ drainPerSecond: 0, staleLastMinute: 0 });
  });
});

describe('createBacklogWarning', () => {
  const figures = (queued: number, drainPerSecond: number, oldestAgeMs = 0, staleLastMinute = 0) => ({
    queued,
    oldestAgeMs,
    drainPerSecond,
    drainSeconds: queued === 0 ? 0 : drainPerSecond > 0 ? queued / drainPerSecond : Infinity,
    staleLastMinute,
    fleetWide: false,
    timeLeftMs: 60_000 - oldestAgeMs,
    acceptedPerSecond: 0,
  });

  it('warns once per backlog when it cannot drain within the trust bound, again after it emptied', () => {
    const behind = createBacklogWarning(60_000);
    expect(behind(figures(50, 1))).toBe(false); // 50 s < 60 s
    expect(behind(figures(50, 1, 20_000))).toBe(true); // 50 s > 40 s left
    expect(behind(figures(500, 1))).toBe(false); // said already
    expect(behind(figures(0, 1))).toBe(false);
    expect(behind(figures(61, 1))).toBe(true);
  });

  it('says nothing before anything drained: there is no rate yet', () => {
    const behind = createBacklogWarning(60_000);
    expect(behind(figures(1000, 0))).toBe(false);
    expect(behind(figures(60, 1))).toBe(false);
  });

  it('warns when checks go stale while nothing drains: the backlog cannot drain in time', () => {
    const behind = createBacklogWarning(60_000);
    expect(behind(figures(100, 0, 70_000, 12))).toBe(true);
    expect(behind(figures(100, 0, 70_000, 12))).toBe(false);
  });
});
