// The backlog's figures (drain rate over the last minute, time to drain) and its warning:
// once per backlog, when the checks waiting cannot all run within the trust bound.
import { describe, expect, it } from 'vitest';
import {
  createBacklogWarning,
  createDrainMeter,
  createLateCheck,
  DRAIN_WINDOW_MS,
  type BacklogFigures,
} from '../../../src/server/queue/backlog.js';

/** A meter on a hand-moved clock that saw `queued` checks waiting at `start`, two of them finished `elapsedMs` later. */
function twoDrainedAfter(start: number, queued: number, elapsedMs: number) {
  const clock = { now: start };
  const meter = createDrainMeter(() => clock.now, 900_000);
  meter.figures(queued, clock.now);
  clock.now += elapsedMs;
  meter.drained();
  meter.drained();
  return { clock, meter };
}

describe('createDrainMeter', () => {
  it('measures checks finished a second over the last minute, and the time the backlog needs', () => {
    let time = 1_000_000;
    const meter = createDrainMeter(() => time, 900_000);
    expect(meter.figures(0, undefined)).toEqual({
      queued: 0,
      oldestAgeMs: 0,
      drainPerSecond: 0,
      drainWindowMs: 1000,
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
    const { clock, meter } = twoDrainedAfter(5_000_000, 5, 2_000);
    expect(meter.figures(3, clock.now - 2_000).drainPerSecond).toBe(1);
    const fresh = createDrainMeter(() => clock.now, 900_000);
    fresh.drained();
    expect(fresh.figures(1, clock.now).drainPerSecond).toBe(1);
    // A shared queue: what the whole fleet finished, not this instance alone.
    expect(fresh.figures(8, clock.now, { drained: 4, stale: 3 })).toMatchObject({
      drainPerSecond: 4,
      drainSeconds: 2,
      staleLastMinute: 3,
      fleetWide: true,
    });
  });

  it('a queue that has just emptied: the rate over the backlog it drained, decaying over the minute, never over one second', () => {
    const { clock, meter } = twoDrainedAfter(7_000_000, 2, 10_000);
    // Empty now: 2 checks over the backlog's 10 s, not 2 a second.
    expect(meter.figures(0, undefined)).toMatchObject({ drainPerSecond: 0.2, drainWindowMs: 10_000 });
    clock.now += 20_000;
    expect(meter.figures(0, undefined)).toMatchObject({ drainPerSecond: 2 / 30, drainWindowMs: 30_000 });
    clock.now += DRAIN_WINDOW_MS;
    expect(meter.figures(0, undefined)).toMatchObject({ drainPerSecond: 0, drainWindowMs: 1000 });
    // Idle a whole minute: the next backlog is measured over its own life again.
    meter.figures(1, clock.now);
    clock.now += 1000;
    meter.drained();
    expect(meter.figures(0, undefined).drainPerSecond).toBe(1);
    // Checks finished that this meter never saw queued (another instance's): over the whole minute.
    const other = createDrainMeter(() => clock.now, 900_000);
    expect(other.figures(0, undefined, { drained: 2, stale: 0 })).toMatchObject({
      drainPerSecond: 2 / 60,
      drainWindowMs: DRAIN_WINDOW_MS,
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
    drainWindowMs: 60_000,
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

describe('createLateCheck', () => {
  /** A late check over a trust bound of 100 s at a contracted 1 a second, its reads counted. */
  const setUp = (read: () => Partial<BacklogFigures>) => {
    let time = 1_000_000;
    let reads = 0;
    const check = createLateCheck(
      async () => {
        reads += 1;
        return { drainPerSecond: 0, drainWindowMs: 60_000, ...read() } as BacklogFigures;
      },
      () => time,
      100_000,
      1,
      (figures) => `refused at ${figures.queued}`,
    );
    return { check, later: (ms: number) => (time += ms), reads: () => reads };
  };

  it('before the queue drained enough to measure, admits at the contracted rate, less the headroom', async () => {
    // 95 s of the 100 s bound at 1 a second: 94 ahead and this one start within it; 95 ahead do not.
    let queued = 94;
    const { check, later } = setUp(() => ({ queued, drainPerSecond: 9 / 60 }));
    // Admitted, with the count the add refuses at: 95 held (the fleet's accepts since the read).
    expect(await check.late()).toEqual({ lateAt: 95 });
    queued = 95;
    later(100);
    expect((await check.late()).refused).toBe('refused at 95');
  });

  it('once measured, the lower of the drain and the contracted rate; a fast drain never raises it', async () => {
    // 10 drained in 20 s, 0.5 a second: 48 ahead and this one start after 98 s, past 95; 46 after 94 s.
    const slow = (queued: number) => setUp(() => ({ queued, drainPerSecond: 0.5, drainWindowMs: 20_000 })).check;
    expect((await slow(48).late()).refused).toBe('refused at 48');
    expect(await slow(46).late()).toEqual({ lateAt: 47 });
    // 9 drained in the minute: not yet measured, the contracted rate admits 94 ahead.
    expect((await setUp(() => ({ queued: 94, drainPerSecond: 9 / 60 })).check.late()).refused).toBeUndefined();
    // A drain measured at 5 a second still admits at 1: 95 ahead are refused.
    expect((await setUp(() => ({ queued: 95, drainPerSecond: 5 })).check.late()).refused).toBe('refused at 95');
  });

  it('counts the checkouts accepted since the last read, and reads afresh after 100 ms', async () => {
    const { check, later, reads } = setUp(() => ({ queued: 93 }));
    expect((await check.late()).refused).toBeUndefined();
    check.accepted();
    // Within 100 ms: the same read, 94 ahead now: still within; one more and it is not.
    later(99);
    expect((await check.late()).refused).toBeUndefined();
    check.accepted();
    expect((await check.late()).refused).toBe('refused at 93');
    expect(reads()).toBe(1);
    // A fresh read forgets them: the queue counts them itself now.
    later(1);
    expect((await check.late()).refused).toBeUndefined();
    expect(reads()).toBe(2);
  });

  it("a read that fails admits (the queue's own bound still holds), kept 100 ms", async () => {
    let fail = true;
    const check = createLateCheck(
      async () => {
        if (fail) throw new Error('redis away');
        return { queued: 500, drainPerSecond: 0, drainWindowMs: 1000 } as BacklogFigures;
      },
      () => 0,
      100_000,
      1,
      () => 'refused',
    );
    expect(await check.late()).toEqual({});
    fail = false;
    expect(await check.late()).toEqual({}); // the failed read is kept for 100 ms
  });
});
