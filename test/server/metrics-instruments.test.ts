// Every counter and histogram of status/names.ts is an OpenTelemetry instrument, made from its
// row (src/server/metrics.ts): a metric added to the table needs no line of its own there. A
// file of its own: the instruments are made once per process, at the first recording.
import { metrics } from '@opentelemetry/api';
import { afterAll, expect, it } from 'vitest';
import { metricsFlushed, recordQueue } from '../../src/server/metrics.js';
import { METRICS } from '../../src/server/status/names.js';

afterAll(() => metrics.disable());

it('makes an instrument of every counter and histogram of names.ts, with its help and unit', async () => {
  const made: Array<{ kind: string; name: string; description?: string; unit?: string }> = [];
  const meter = {
    createCounter: (name: string, options: { description?: string }) => {
      made.push({ kind: 'counter', name, ...options });
      return { add() {} };
    },
    createHistogram: (name: string, options: { description?: string; unit?: string }) => {
      made.push({ kind: 'histogram', name, ...options });
      return { record() {} };
    },
    createObservableGauge: (name: string) => {
      made.push({ kind: 'gauge', name });
      return {};
    },
    addBatchObservableCallback() {},
  };
  metrics.setGlobalMeterProvider({ getMeter: () => meter } as never);
  recordQueue('accepted');
  await metricsFlushed();
  const expected = Object.values(METRICS)
    .filter((metric) => metric.kind !== 'gauge')
    .map((metric) => ({
      kind: metric.kind,
      name: metric.name,
      description: metric.help,
      ...(metric.kind === 'histogram' ? { unit: 'ms' } : {}),
    }));
  expect(made.filter((instrument) => instrument.kind !== 'gauge')).toEqual(expect.arrayContaining(expected));
  expect(made.filter((instrument) => instrument.kind !== 'gauge')).toHaveLength(expected.length);
});
