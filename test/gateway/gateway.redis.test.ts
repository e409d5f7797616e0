// Two gateways on one Redis (REDIS_URL): the fleet's store, BullMQ queue and outbox. Checkouts
// posted to either are checked by either, and each decision reaches the shop once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { DECISIONS_TOKEN, drained, ORDER_SECRET, postCheckout, useGateway } from '../support/gateway.js';
import { mintOrderToken } from '../../src/gateway/order-token.js';
import { haveRedis, startRedisServer, type RedisServer } from '../support/redis.js';

let redis: RedisServer | undefined;
beforeAll(async () => {
  if (haveRedis) redis = await startRedisServer();
});
afterAll(async () => {
  await redis?.stop();
});
const { environment, inProcess } = useGateway();
/**
 * Two gateways on one environment: one Redis. The second has the admin listener, whose /metrics
 * says what the fleet has left to send (`drained`): the fleet's queue figure is written by the
 * status monitor holding the reporter lease, and in one process the flag that says so is the
 * last monitor's; the only monitor, it takes the lease.
 */
const twoOn = async (env: Record<string, string>): Promise<Gateway[]> => [
  await inProcess(env),
  await inProcess({ ...env, ADMIN_PORT: '0' }),
];
/** Resolves once the fleet of `twoOn` has nothing left to send: its shared queue, then its shared outbox, empty. */
const fleetDrained = (gateways: Gateway[]) => drained(gateways[1]!.adminUrl!, { fleet: true });

describe.skipIf(!haveRedis)('a fleet of gateways on one Redis', () => {
  it('checks what either accepted, and tells each decision once', async () => {
    const { shop, env } = await environment(
      { REDIS_URL: redis!.url, TRUSTED_FRONTS: '127.0.0.1' },
      { emulator: { accountRequestsPerSecond: 2 } },
    );
    const gateways = await twoOn(env);
    const orders = Array.from({ length: 6 }, (_, i) => `fleet-order-${i}`);
    for (const [i, order] of orders.entries()) {
      const answer = await postCheckout(gateways[i % 2]!.url, { order, from: `203.0.113.${i + 1}` });
      expect(answer.status).toBe(202);
    }
    await expect.poll(shop.orders, { timeout: 30_000 }).toEqual(orders);
    // Final once neither instance can send more: a retried delivery waits in the outbox.
    await fleetDrained(gateways);
    expect(shop.received).toHaveLength(orders.length);
    // Either instance answers the poll of any order.
    const polled = await fetch(`${gateways[1]!.url}/decisions/fleet-order-0`, {
      headers: { authorization: `Bearer ${DECISIONS_TOKEN}` },
    });
    expect(await polled.json()).toMatchObject({
      delivered: true,
      data: { customerInternalReference: 'fleet-order-0' },
    });
  }, 60_000);

  it('checks an order once across the fleet: of checkouts posted at once to either, one is accepted, the rest 409', async () => {
    const { emulator, shop, env } = await environment({ REDIS_URL: redis!.url, TRUSTED_FRONTS: '127.0.0.1' });
    const gateways = await twoOn(env);
    const token = await mintOrderToken(ORDER_SECRET, { customerInternalReference: 'fleet-order-once' });
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        postCheckout(gateways[i % 2]!.url, { token, from: `203.0.113.${i + 1}` }).then((answer) => answer.status),
      ),
    );
    expect(answers.sort()).toEqual([202, 409, 409, 409, 409, 409]);
    await expect.poll(shop.orders, { timeout: 30_000 }).toEqual(['fleet-order-once']);
    await fleetDrained(gateways);
    expect(shop.received).toHaveLength(1);
    expect(emulator.inspect.transactions()).toHaveLength(1);
  }, 60_000);
});
