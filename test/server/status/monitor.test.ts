// The status monitor on a store shared by two monitors (a stand-in for a fleet's Redis): one
// reporter at a time, taken over when it stops; the series sums both writers' counts.
import { afterEach, describe, expect, it } from 'vitest';
import { DeviceRiskError } from '../../../src/server/errors.js';
import { observeBacklog, readBacklogs, recordQueue } from '../../../src/server/metrics.js';
import { createStatusMonitor, type StatusMonitor } from '../../../src/server/status/monitor.js';
import { createMemoryStore, type Store } from '../../../src/server/store/store.js';

/** A store that is not the memory store's own object: the monitor treats it as shared. */
const sharedStore = (): Store => ({ ...createMemoryStore() });

const monitors: StatusMonitor[] = [];
afterEach(async () => {
  for (const monitor of monitors.splice(0)) await monitor.close();
});
const monitor = (options: Parameters<typeof createStatusMonitor>[0]) => {
  const made = createStatusMonitor({ sampleIntervalMs: 60_000, onError: () => {}, ...options });
  monitors.push(made);
  return made;
};

const shared = async () => ({
  queued: 30,
  oldestAgeMs: 10_000,
  drainPerSecond: 1,
  staleLastMinute: 0,
  fleetWide: true,
  timeLeftMs: 50_000,
  acceptedPerSecond: 2,
});

describe('createStatusMonitor', () => {
  it('refuses a sample interval under a second, with a code', () => {
    expect(() => createStatusMonitor({ sampleIntervalMs: 10 })).toThrow(DeviceRiskError);
    expect(() => createStatusMonitor({ sampleIntervalMs: Number.NaN })).toThrow(/sampleIntervalMs/);
  });

  it('on a memory store it is its own reporter', async () => {
    const alone = monitor({});
    await alone.sample();
    expect(alone.reporter).toBe(true);
  });

  it('one reporter on a shared store; the other takes over when it closes', async () => {
    const store = sharedStore();
    const a = monitor({ store, instanceId: 'a' });
    await a.sample();
    const b = monitor({ store, instanceId: 'b' });
    await b.sample();
    expect([a.reporter, b.reporter]).toEqual([true, false]);
    await a.close();
    await b.sample();
    expect(b.reporter).toBe(true);
  });

  it('two samples at once take one lease, never one left renewing with no holder', async () => {
    const store = sharedStore();
    const a = monitor({ store, instanceId: 'a' });
    await Promise.all([a.sample(), a.sample(), a.sample()]);
    expect(a.reporter).toBe(true);
    await a.close();
    // With an orphan lease still renewed, b could never take it.
    const b = monitor({ store, instanceId: 'b' });
    await b.sample();
    expect(b.reporter).toBe(true);
  });

  it("writes the shared queue's gauges once, under fleet, and every instance's counts", async () => {
    const store = sharedStore();
    const stop = observeBacklog(shared, 'pod-1');
    try {
      const a = monitor({ store, instanceId: 'pod-1' });
      await a.sample();
      recordQueue('stale');
      recordQueue('stale');
      await a.sample();
      // A second process's monitor, sharing the store: its counters are this process's too here, so it adds nothing new.
      const series = await a.series();
      const [bucket] = series.minutes;
      expect(bucket!.gauges.fleet).toMatchObject({ queued: 30, timeLeftMs: 50_000, neededPerSecond: 30 / 50 });
      expect(bucket!.gauges['pod-1']).toMatchObject({ queued: 0, neededPerSecond: 2 });
      expect(bucket!.counts['queue|event=stale']).toBeGreaterThanOrEqual(2);
      expect((await readBacklogs()).some((r) => r.scope === 'fleet')).toBe(true);
    } finally {
      stop();
    }
  });

  it('tells onError when the store refuses the sample, and keeps sampling', async () => {
    const errors: unknown[] = [];
    const store = sharedStore();
    const failing: Store = { ...store, get: () => Promise.reject(new Error('store away')) };
    const watched = createStatusMonitor({ store: failing, sampleIntervalMs: 1000, onError: (e) => errors.push(e) });
    monitors.push(watched);
    await expect.poll(() => errors.length).toBeGreaterThan(0);
    expect(String(errors[0])).toContain('store away');
  });

  it('a sample the store refused loses no count: the next one adds it', async () => {
    const store = sharedStore();
    let away = false;
    const flaky: Store = { ...store, get: (key) => (away ? Promise.reject(new Error('store away')) : store.get(key)) };
    const watched = monitor({ store: flaky, instanceId: 'a' });
    await watched.sample();
    const stale = async () =>
      (await watched.series()).minutes.reduce((n, b) => n + (b.counts['queue|event=stale'] ?? 0), 0);
    const before = await stale();
    recordQueue('stale');
    away = true;
    await expect(watched.sample()).rejects.toThrow('store away');
    away = false;
    await watched.sample();
    expect(await stale()).toBe(before + 1);
  });

  it('gives up a write that keeps losing races, with a stable code', async () => {
    const store = sharedStore();
    // Another writer changes the series under every write.
    let n = 0;
    const racing: Store = {
      ...store,
      get: async () => `{"minutes":[],"quarters":[],"n":${n++}}`,
      compareAndSet: async () => false,
    };
    const lost = monitor({ store: racing });
    await expect(lost.sample()).rejects.toMatchObject({ code: 'store_unavailable' });
  });
});
