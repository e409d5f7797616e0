// The queue's gauges as a fleet's dashboard sums them: each series names its instance and
// whether its figures are the fleet's (a shared queue, the same on every instance) or the
// instance's own (memory), so that sum() over instances is true for the one and max() for the
// other. A file of its own: the instruments are made once per process.
import os from 'node:os';
import type { DataPoint, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { createDeviceRiskHandler } from '../../src/server/index.js';
import { defaultInstanceId, observeBacklog } from '../../src/server/metrics.js';
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
      });
      expect(seen['blackbox_capture.queue.drain_rate']).toEqual({
        'shop-a fleet': 2,
        'shop-b fleet': 2,
        'shop-a instance': 0.5,
      });
      expect(seen['blackbox_capture.queue.stale']).toEqual({
        'shop-a fleet': 3,
        'shop-b fleet': 3,
        'shop-a instance': 0,
      });
      expect(seen['blackbox_capture.queue.oldest_age']!['shop-b fleet']).toBe(5000);
      // What docs/operating.md asks of a dashboard: max over instances of the fleet's, sum of the instances' own.
      const depth = seen['blackbox_capture.queue.depth']!;
      const fleet = Math.max(...Object.entries(depth).flatMap(([k, v]) => (k.endsWith(' fleet') ? [v] : [])));
      const own = Object.entries(depth).reduce((sum, [k, v]) => sum + (k.endsWith(' instance') ? v : 0), 0);
      expect(fleet + own).toBe(45);
    } finally {
      for (const stop of stops) stop();
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
