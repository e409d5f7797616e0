// The OpenTelemetry SDK's in-memory side for tests: a global meter provider whose reader
// collects on demand, installed for the file that calls it and removed after it.
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { afterAll, beforeAll } from 'vitest';
import { metricsFlushed } from '../../src/server/metrics.js';

/** A metric reader that collects on demand. */
class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** Installs the test meter for this file; the returned function gives what was recorded so far. */
export function useTestMeter(): () => Promise<ResourceMetrics> {
  const reader = new TestReader();
  beforeAll(() => {
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
  });
  afterAll(() => {
    metrics.disable();
  });
  return async () => {
    await metricsFlushed();
    return ((await reader.collect()) as { resourceMetrics: ResourceMetrics }).resourceMetrics;
  };
}
