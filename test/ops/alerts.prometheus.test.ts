// The shipped alert rules (ops/prometheus/alerts.yml) checked and unit-tested by Debian's
// promtool on the series of alerts.test.yml; and the same tests run against a copy whose
// backlog alert never fires, which must fail: the series do exercise the rule.
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { prometheusAvailable, promtool } from '../support/prometheus.mjs';

const OPS = fileURLToPath(new URL('../../ops/prometheus/', import.meta.url));

describe.skipIf(!prometheusAvailable())('the alert rules (promtool)', () => {
  it('pass promtool check rules', async () => {
    const { code, output } = await promtool(['check', 'rules', 'alerts.yml'], OPS);
    expect(output).toContain('SUCCESS: 9 rules found');
    expect(code).toBe(0);
  });

  it('fire on the test series as alerts.test.yml expects', async () => {
    const { code, output } = await promtool(['test', 'rules', 'alerts.test.yml'], OPS);
    expect(output).toContain('SUCCESS');
    expect(code).toBe(0);
  });

  it.each([
    [
      'a backlog rule',
      /sum\(blackbox_capture_queue_depth\)\n\s+> min\(blackbox_capture_queue_time_left_seconds\) \* sum\(blackbox_capture_queue_drain_rate\)/,
      'BlackboxCaptureBacklogBehind',
    ],
    [
      'an undelivered-decisions rule',
      'max(blackbox_capture_gateway_outbox_oldest_undelivered_seconds) > 900',
      'BlackboxCaptureDecisionsUndelivered',
    ],
    [
      'a given-up decisions rule',
      'sum(increase(blackbox_capture_gateway_webhooks_given_up_total[1h])) > 0',
      'BlackboxCaptureDecisionsGivenUp',
    ],
  ])('%s that never fires fails those tests', async (_rule, condition, alert) => {
    const copy = mkdtempSync(join(tmpdir(), 'bbc-rules-'));
    copyFileSync(join(OPS, 'alerts.test.yml'), join(copy, 'alerts.test.yml'));
    const rules = readFileSync(join(OPS, 'alerts.yml'), 'utf8');
    const broken = rules.replace(condition, 'vector(0) > 1');
    expect(broken).not.toBe(rules);
    writeFileSync(join(copy, 'alerts.yml'), broken);
    const { code, output } = await promtool(['test', 'rules', 'alerts.test.yml'], copy);
    expect(output).toContain(`alertname: ${alert}`);
    expect(code).not.toBe(0);
  });
});
