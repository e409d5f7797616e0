import { describe, expect, it } from 'vitest';
import { exposition, gaugeFamily } from '../../../src/server/status/exposition.js';
import { METRICS, prometheusName } from '../../../src/server/status/names.js';

describe('exposition', () => {
  it('writes each family once with HELP and TYPE, counters and gauges under the shared names', () => {
    const text = exposition(
      [
        { metric: 'queue', labels: { event: 'stale' }, value: 3 },
        { metric: 'queue', labels: { event: 'checked' }, value: 40 },
        { metric: 'outcomes', labels: { outcome: 'degraded-first-party', engine: 'firefox' }, value: 2 },
      ],
      [
        {
          instance: 'pod-1',
          scope: 'fleet',
          queued: 12,
          oldestAgeMs: 5000,
          drainPerSecond: 1,
          staleLastMinute: 0,
          timeLeftMs: 55_000,
          neededPerSecond: 0.25,
        },
        // An instance on a shared queue: only its acceptance rate, no time left of its own.
        {
          instance: 'pod-1',
          scope: 'instance',
          queued: 0,
          oldestAgeMs: 0,
          drainPerSecond: 0,
          staleLastMinute: 0,
          neededPerSecond: 2,
        },
      ],
    );
    expect(text).toContain('# TYPE blackbox_capture_queue_checks_total counter\n');
    expect(text.match(/# TYPE blackbox_capture_queue_checks_total/g)).toHaveLength(1);
    expect(text).toContain('blackbox_capture_queue_checks_total{event="stale"} 3\n');
    expect(text).toContain(
      'blackbox_capture_capture_outcomes_total{outcome="degraded-first-party",engine="firefox"} 2\n',
    );
    // Kept in milliseconds, written in seconds: Prometheus's base unit.
    expect(text).toContain('# TYPE blackbox_capture_queue_time_left_seconds gauge\n');
    expect(text).toContain('blackbox_capture_queue_time_left_seconds{instance="pod-1",scope="fleet"} 55\n');
    expect(text).not.toContain('blackbox_capture_queue_time_left_seconds{instance="pod-1",scope="instance"}');
    expect(text).not.toContain('_milliseconds');
    expect(text).toContain('blackbox_capture_queue_needed_rate{instance="pod-1",scope="instance"} 2\n');
    expect(text.endsWith('\n')).toBe(true);
  });

  it('escapes label values and leaves out families with nothing to say', () => {
    const text = exposition([{ metric: 'upstream', labels: { operation: 'a"b\\c\nd', result: 'ok' }, value: 1 }], []);
    expect(text).toContain('{operation="a\\"b\\\\c\\nd",result="ok"} 1\n');
    expect(text).not.toContain('queue_depth');
  });

  it("writes a gauge outside the queue's (the outbox's) one line per value, with or without labels", () => {
    const name = prometheusName(METRICS.outboxOldest);
    expect(gaugeFamily('outboxOldest', [{ labels: {}, value: 12.5 }])).toBe(
      `# HELP ${name} ${METRICS.outboxOldest.help}\n# TYPE ${name} gauge\n${name} 12.5\n`,
    );
    const depth = prometheusName(METRICS.outboxDepth);
    expect(
      gaugeFamily('outboxDepth', [
        { labels: { instance: 'a' }, value: 1 },
        { labels: { instance: 'b' }, value: 2 },
      ]).split('\n'),
    ).toEqual([
      `# HELP ${depth} ${METRICS.outboxDepth.help}`,
      `# TYPE ${depth} gauge`,
      `${depth}{instance="a"} 1`,
      `${depth}{instance="b"} 2`,
      '',
    ]);
  });

  it('writes the values the format names: NaN, +Inf and -Inf', () => {
    const name = prometheusName(METRICS.outboxOldest);
    const lines = (value: number) => gaugeFamily('outboxOldest', [{ labels: {}, value }]).split('\n')[2];
    expect([lines(NaN), lines(Infinity), lines(-Infinity), lines(-0.5)]).toEqual([
      `${name} NaN`,
      `${name} +Inf`,
      `${name} -Inf`,
      `${name} -0.5`,
    ]);
  });

  it('names as the OpenTelemetry Prometheus exporter does', () => {
    expect(prometheusName(METRICS.oldest)).toBe('blackbox_capture_queue_oldest_age_seconds');
    expect(prometheusName(METRICS.duration)).toBe('blackbox_capture_capture_duration_milliseconds');
    expect(prometheusName(METRICS.queue)).toBe('blackbox_capture_queue_checks_total');
    expect(prometheusName(METRICS.depth)).toBe('blackbox_capture_queue_depth');
    expect(prometheusName(METRICS.outboxOldest)).toBe('blackbox_capture_gateway_outbox_oldest_undelivered_seconds');
    expect(prometheusName(METRICS.webhooks)).toBe('blackbox_capture_gateway_webhook_attempts_total');
  });
});
