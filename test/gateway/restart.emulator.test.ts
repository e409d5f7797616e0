// Decisions that waited on a receiver down for 20 s reach it within 90 s of its recovery, across
// a restart of the gateway (docs/gateway.md#the-decision-webhook): `blackbox-capture serve` as a
// process, stopped with SIGTERM while the shop's receiver is down and started again on the same
// DATA_DIR; the receiver a local server verifying each delivery with the standardwebhooks
// package. At the gateway's own retry settings (not configurable: 1 s doubled up to 10 minutes,
// with jitter, never longer than the decision has waited), at full scale.
import { describe, expect, it } from 'vitest';
import { postCheckout, startGatewayProcess, useGateway } from '../support/gateway.js';

const { environment } = useGateway();

/** How long the shop's receiver is down, and the most its decisions may take once it is back. */
const DOWN_MS = 20_000;
const AFTER_RECOVERY_MS = 90_000;

describe('decisions across a receiver outage and a gateway restart (serve as a process)', () => {
  it('reach the receiver once each, within 90 s of its recovery after 20 s down', async () => {
    let down = true;
    const { shop, env } = await environment({ TRUSTED_FRONTS: '127.0.0.1' }, { shopStatus: () => (down ? 503 : 204) });
    const first = await startGatewayProcess(env);
    const orders = ['order-restart-1', 'order-restart-2', 'order-restart-3'];
    for (const [i, order] of orders.entries())
      expect((await postCheckout(first.url, { order, from: `203.0.113.${i + 1}` })).status).toBe(202);
    // Each decision made and refused by the receiver at least once: the outage starts now.
    await expect.poll(shop.attempts, { timeout: 30_000 }).toBeGreaterThanOrEqual(orders.length);
    const downSince = Date.now();
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const second = await startGatewayProcess(env);
    // The restarted gateway tries them too, and the receiver still refuses.
    const beforeRestart = shop.attempts();
    await expect.poll(shop.attempts, { timeout: DOWN_MS }).toBeGreaterThan(beforeRestart);
    // The rest of the outage, held: the receiver is down for DOWN_MS in all.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, downSince + DOWN_MS - Date.now())));
    expect(shop.received).toEqual([]);
    down = false;
    await expect.poll(shop.orders, { timeout: AFTER_RECOVERY_MS, interval: 500 }).toEqual(orders);
    // Once each, and no copy after: the outbox looks every second, so two seconds more would show one.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(shop.orders()).toEqual(orders);
    expect(new Set(shop.received.map((r) => r.id)).size).toBe(orders.length);
    expect(second.output()).toMatch(/not delivered to/);
  }, 180_000);
});
