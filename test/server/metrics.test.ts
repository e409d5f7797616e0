// The OpenTelemetry instruments as a dashboard finds them: names, descriptions, unit and
// scope. A file of its own, so that its first recording is the one that creates the
// instruments (they are made once per process).
import { describe, expect, it } from 'vitest';
import { recordOutcome, recordRepairs, recordUpstream } from '../../src/server/metrics.js';
import { useTestMeter } from '../support/otel.js';

const collect = useTestMeter();

describe('metrics', () => {
  it('instruments carry their descriptions, and the duration its unit', async () => {
    recordOutcome({ outcome: 'aborted', scripts: [], durationMs: 1 });
    recordRepairs(['quotes']);
    recordUpstream('status', 200);
    const resourceMetrics = await collect();
    const descriptors = Object.fromEntries(
      resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).map((m) => [m.descriptor.name, m.descriptor]),
    );
    for (const name of [
      'blackbox_capture.capture.outcomes',
      'blackbox_capture.capture.duration',
      'blackbox_capture.upstream.calls',
      'blackbox_capture.blackbox.repairs',
    ]) {
      expect(descriptors[name]?.description, name).toMatch(/\w{4,}/);
    }
    expect(descriptors['blackbox_capture.capture.duration']!.unit).toBe('ms');
    expect(resourceMetrics.scopeMetrics.map((s) => s.scope.name)).toContain('blackbox-capture');
  });
});
