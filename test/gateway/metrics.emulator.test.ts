// The gateway's own metrics on its admin listener, with `blackbox-capture serve` as a process
// of its own (docs/gateway.md#metrics): webhook attempts by result, the outbox's depth and
// oldest undelivered age while the shop's receiver is down, refusals by code, requests by
// route and status; the status page's row of decisions not delivered.
import { describe, expect, it } from 'vitest';
import { postCheckout, useGateway } from '../support/gateway.js';

const { served } = useGateway();

/** The value of the series `series` (name and labels as written) in a scrape, or undefined. */
const sample = (text: string, series: string) => {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe('the gateway metrics (serve as a process)', () => {
  it('show the webhooks failing and the outbox growing while the shop is down, then draining', async () => {
    let down = true;
    const { shop, gateway } = await served({ ADMIN_PORT: '0' }, { shopStatus: () => (down ? 503 : 204) });
    const scrape = async () => (await fetch(`${gateway.adminUrl}/metrics`)).text();
    expect((await postCheckout(gateway.url, { order: 'order-metrics' })).status).toBe(202);
    await expect
      .poll(async () => sample(await scrape(), 'blackbox_capture_gateway_webhook_attempts_total{result="http_5xx"}'), {
        timeout: 15_000,
      })
      .toBeGreaterThanOrEqual(1);
    const text = await scrape();
    expect(sample(text, 'blackbox_capture_gateway_outbox_depth')).toBe(1);
    expect(sample(text, 'blackbox_capture_gateway_outbox_oldest_undelivered_seconds')).toBeGreaterThanOrEqual(0);
    expect(text).toContain('# TYPE blackbox_capture_gateway_outbox_oldest_undelivered_seconds gauge');
    expect(sample(text, 'blackbox_capture_gateway_requests_total{route="/device-risk",status="202"}')).toBe(1);
    // The status page's row beside the alert: one decision waits, with its age.
    const statusRow = async () =>
      /<th>Decisions not delivered \(the outbox\)<\/th><td>([^<]*)<\/td>/.exec(
        await (await fetch(`${gateway.adminUrl}/status`)).text(),
      )?.[1];
    expect(await statusRow()).toMatch(/^1, the oldest \d+ s old$/);

    // Refusals, by code: a missing Order-Token (401), another origin (403).
    expect((await postCheckout(gateway.url, {})).status).toBe(401);
    const foreign = await fetch(`${gateway.url}/device-risk`, {
      method: 'POST',
      headers: { origin: 'https://elsewhere.example', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(foreign.status).toBe(403);
    const refused = await scrape();
    expect(sample(refused, 'blackbox_capture_gateway_refusals_total{code="order_token_missing"}')).toBe(1);
    expect(sample(refused, 'blackbox_capture_gateway_refusals_total{code="origin_not_allowed"}')).toBe(1);
    expect(sample(refused, 'blackbox_capture_gateway_requests_total{route="/device-risk",status="401"}')).toBe(1);

    down = false;
    await expect.poll(shop.orders, { timeout: 30_000 }).toEqual(['order-metrics']);
    await expect.poll(async () => sample(await scrape(), 'blackbox_capture_gateway_outbox_depth')).toBe(0);
    const drained = await scrape();
    expect(sample(drained, 'blackbox_capture_gateway_webhook_attempts_total{result="delivered"}')).toBe(1);
    expect(sample(drained, 'blackbox_capture_gateway_outbox_oldest_undelivered_seconds')).toBe(0);
    expect(await statusRow()).toBe('0');
  }, 60_000);
});
