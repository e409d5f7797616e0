// A live /metrics, as a running gateway's admin listener answers it after some work (a
// checkout decided, a refusal, a decision waiting on a receiver that refuses it), held to
// Debian's `promtool check metrics`: Prometheus's own lint of names, units, help and types.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../src/gateway/gateway.js';
import { parseSettings } from '../../src/gateway/settings.js';
import { gatewayEnvironment, postCheckout, webhookReceiver } from '../support/gateway.js';
import { closeServers } from '../support/http.js';
import { useEmulators } from '../support/kit.js';
import { prometheusAvailable, promtool } from '../support/prometheus.mjs';

const startEmulator = useEmulators();
let gateway: Gateway | undefined;
afterAll(async () => {
  await gateway?.close();
  await closeServers();
});

describe.skipIf(!prometheusAvailable())('the metrics a running gateway exposes (promtool check metrics)', () => {
  let metrics = '';
  beforeAll(async () => {
    const emulator = await startEmulator();
    // The shop refuses every delivery: the outbox's gauges have something to say.
    const shop = await webhookReceiver(() => 503);
    gateway = await startGateway(parseSettings(gatewayEnvironment(emulator, shop.url, { ADMIN_PORT: '0' })), {
      log: () => {},
    });
    expect((await postCheckout(gateway.url, { order: 'order-metrics' })).status).toBe(202);
    expect((await postCheckout(gateway.url)).status).toBe(401);
    // A delivery refused, as the metrics count it (a wait for an event, bounded).
    const refused = /blackbox_capture_gateway_webhook_attempts_total\{result="http_5xx"\} [1-9]/;
    for (const end = Date.now() + 30_000; !refused.test(metrics) && Date.now() < end;)
      metrics = await new Promise<string>((resolve) => setTimeout(resolve, 200)).then(async () =>
        (await fetch(`${gateway!.adminUrl}/metrics`)).text(),
      );
    expect(metrics).toMatch(refused);
  }, 60_000);

  it('has the queue, outbox and refusal series, in base units', () => {
    for (const series of [
      'blackbox_capture_queue_depth',
      'blackbox_capture_queue_oldest_age_seconds',
      'blackbox_capture_queue_time_left_seconds',
      'blackbox_capture_gateway_outbox_oldest_undelivered_seconds',
      'blackbox_capture_gateway_refusals_total',
    ])
      expect(metrics).toContain(`# TYPE ${series} `);
    expect(metrics).not.toContain('_milliseconds');
  });

  it('passes promtool check metrics with nothing to say', async () => {
    const { code, output } = await promtool(['check', 'metrics'], undefined, metrics);
    expect(output).toBe('');
    expect(code).toBe(0);
  });

  it('a series in milliseconds fails it: the check is not vacuous', async () => {
    const broken = `${metrics}# HELP a_wait_milliseconds A wait.\n# TYPE a_wait_milliseconds gauge\na_wait_milliseconds 5\n`;
    const { code, output } = await promtool(['check', 'metrics'], undefined, broken);
    expect(output).toMatch(/a_wait_milliseconds.*base unit/);
    expect(code).not.toBe(0);
  });
});
