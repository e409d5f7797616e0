// The queue's gauges as a fleet's dashboard sums them: each series names its instance and
// whether its figures are the fleet's (a shared queue, the same on every instance) or the
// instance's own (memory), so that sum() over instances is true for the one and max() for the
// other. A file of its own: the instruments are made once per process.
import os from 'node:os';
import type { DataPoint, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { createDeviceRiskHandler } from '../../src/server/index.js';
import { defaultInstanceId, observeBacklog, readBacklogs, reportFleetFiguresWhen } from '../../src/server/metrics.js';
import { createMemoryQueue } from '../../src/server/queue/queue.js';
import { useTestMeter } from '../support/otel.js';
import { stubClient } from '../support/stub-client.js';

const collect = useTestMeter();

/** Each gauge's points as `instance scope` → value. */
function gauges(metrics: ResourceMetrics): Record<string, Record<string, number>> {
  const byName: Record<string, Record<string, number>> = {};
  for (const metric of metrics.scopeMetrics.flatMap((s) => s.metrics)) {
    if (!metric.descriptor.name.startsWith('blackbox_capture.queue.') || metric.descriptor.name.endsWith('.checks'))
      continue;
    const points: Record<string, number> = {};
    for (const point of metric.dataPoints as DataPoint<number>[])
      points[`${String(point.attributes.instance)} ${String(point.attributes.scope)}`] = point.value;
    byName[metric.descriptor.name] = points;
  }
  return byName;
}

const figures = (queued: number, drainPerSecond: number, staleLastMinute: number, fleetWide: boolean) => async () => ({
  queued,
  oldestAgeMs: 5000,
  drainPerSecond,
  staleLastMinute,
  fleetWide,
  timeLeftMs: 60_000,
  acceptedPerSecond: 0,
});

describe('queue gauges on a fleet', () => {
  it('each series carries its instance and its scope: fleet figures once per instance, never summed into one', async () => {
    // Two instances of one fleet reading the same shared queue, as two processes would export them.
    const stops = [
      observeBacklog(figures(40, 2, 3, true), 'shop-a'),
      observeBacklog(figures(40, 2, 3, true), 'shop-b'),
      observeBacklog(figures(5, 0.5, 0, false), 'shop-a'),
    ];
    try {
      const seen = gauges(await collect());
      expect(seen['blackbox_capture.queue.depth']).toEqual({
        'shop-a fleet': 40,
        'shop-b fleet': 40,
        'shop-a instance': 5,
        // shop-b has no queue of its own: its series carries its acceptance rate (needed_rate), and zeros.
        'shop-b instance': 0,
      });
      expect(seen['blackbox_capture.queue.drain_rate']).toEqual({
        'shop-a fleet': 2,
        'shop-b fleet': 2,
        'shop-a instance': 0.5,
        'shop-b instance': 0,
      });
      expect(seen['blackbox_capture.queue.stale']).toEqual({
        'shop-a fleet': 3,
        'shop-b fleet': 3,
        'shop-a instance': 0,
        'shop-b instance': 0,
      });
      // Observed in seconds, the gauge's unit.
      expect(seen['blackbox_capture.queue.oldest_age']!['shop-b fleet']).toBe(5);
      // What docs/operating.md asks of a dashboard: max over instances of the fleet's, sum of the instances' own.
      const depth = seen['blackbox_capture.queue.depth']!;
      const fleet = Math.max(...Object.entries(depth).flatMap(([k, v]) => (k.endsWith(' fleet') ? [v] : [])));
      const own = Object.entries(depth).reduce((sum, [k, v]) => sum + (k.endsWith(' instance') ? v : 0), 0);
      expect(fleet + own).toBe(45);
    } finally {
      for (const stop of stops) stop();
    }
  });

  it("with a reporter, a shared queue's figures are read on one instance only, so that sum() is true", async () => {
    const shared = async () => ({ ...(await figures(40, 2, 3, true)()), timeLeftMs: 20_000, acceptedPerSecond: 1.5 });
    const stop = observeBacklog(shared, 'shop-b');
    try {
      reportFleetFiguresWhen(() => false);
      const apart = await readBacklogs();
      expect(apart.filter((r) => r.scope === 'fleet')).toEqual([]);
      // Its own acceptance stays: the capacity the fleet needs is the sum of every instance's.
      expect(apart).toContainEqual({
        instance: 'shop-b',
        scope: 'instance',
        queued: 0,
        oldestAgeMs: 0,
        drainPerSecond: 0,
        staleLastMinute: 0,
        neededPerSecond: 1.5,
      });
      reportFleetFiguresWhen(() => true);
      const reporter = (await readBacklogs()).find((r) => r.instance === 'shop-b' && r.scope === 'fleet');
      // 40 checks with 20 s left: 2 a second.
      expect(reporter).toMatchObject({ queued: 40, timeLeftMs: 20_000, neededPerSecond: 2 });
    } finally {
      stop();
      reportFleetFiguresWhen(() => true);
    }
  });

  it("a handler's gauges name it by its instanceId, or by hostname:pid", async () => {
    expect(await defaultInstanceId()).toBe(`${os.hostname()}:${process.pid}`);
    const { client } = stubClient();
    const options = {
      client,
      allowedOrigins: ['https://shop.example'],
      workflowKey: 10020,
      resolveCustomer: () => ({ customerInternalReference: 'order-1' }),
      onError: () => {},
    };
    const named = createDeviceRiskHandler({ ...options, queue: createMemoryQueue(), instanceId: 'pod-7' });
    const unnamed = createDeviceRiskHandler({ ...options, queue: createMemoryQueue() });
    try {
      const seen = gauges(await collect());
      // (A cumulative reader keeps the series the first test saw, too.)
      expect(seen['blackbox_capture.queue.depth']).toMatchObject({
        'pod-7 instance': 0,
        [`${os.hostname()}:${process.pid} instance`]: 0,
      });
    } finally {
      await named.close();
      await unnamed.close();
    }
  });
});
