// `blackbox-capture serve` as a process of its own on a real redis-server (REDIS_URL) that
// goes away: GET /readyz tells it (store_unavailable, queue_unavailable) while /healthz stays
// alive (docs/gateway.md#readiness); SIGTERM ends it within SHUTDOWN_TIMEOUT_MS whatever Redis
// does, a second signal at once, and what it accepted stays queued for the next start
// (docs/gateway.md#shutting-down-and-restarts).
import { afterEach, describe, expect, it } from 'vitest';
import { drained, postCheckout, startGatewayProcess, useGateway } from '../support/gateway.js';
import { connect, haveRedis, startRedisServer, type RedisServer } from '../support/redis.js';

const redises: RedisServer[] = [];
afterEach(async () => {
  for (const redis of redises.splice(0)) await redis.stop();
});
const { environment, served } = useGateway();

async function redisServer(): Promise<RedisServer> {
  const redis = await startRedisServer();
  redises.push(redis);
  return redis;
}

const readyCode = async (url: string) => ((await (await fetch(`${url}/readyz`)).json()) as { code?: string }).code;

describe.skipIf(!haveRedis)('serve on a Redis that goes away (a process)', () => {
  it('reads store_unavailable and queue_unavailable on /readyz while Redis does not answer, ready again after', async () => {
    const redis = await redisServer();
    const { gateway } = await served({ REDIS_URL: redis.url });
    await expect.poll(async () => (await fetch(`${gateway.url}/readyz`)).status, { timeout: 10_000 }).toBe(200);
    redis.pause();
    await expect.poll(() => readyCode(gateway.url), { timeout: 15_000 }).toBe('store_unavailable');
    const answer = await fetch(`${gateway.url}/readyz`);
    expect(answer.status).toBe(503);
    expect(((await answer.json()) as { checks: object }).checks).toMatchObject({
      store: 'store_unavailable',
      queue: 'queue_unavailable',
    });
    // Alive all the same: a liveness probe must not restart it for its Redis.
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    redis.resume();
    await expect.poll(async () => (await fetch(`${gateway.url}/readyz`)).status, { timeout: 15_000 }).toBe(200);
  }, 60_000);

  it('reads store_full on /readyz while Redis answers reads but refuses writes (maxmemory), ready again after', async () => {
    const redis = await redisServer();
    const { gateway } = await served({ REDIS_URL: redis.url });
    await expect.poll(async () => (await fetch(`${gateway.url}/readyz`)).status, { timeout: 10_000 }).toBe(200);
    const admin = await connect(redis.url);
    try {
      // Past maxmemory with noeviction: every write is refused, every read still answered.
      await admin.configSet('maxmemory', '1');
      await expect.poll(() => readyCode(gateway.url), { timeout: 15_000 }).toBe('store_full');
      expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
      await admin.configSet('maxmemory', '0');
      await expect.poll(async () => (await fetch(`${gateway.url}/readyz`)).status, { timeout: 15_000 }).toBe(200);
    } finally {
      await admin.configSet('maxmemory', '0').catch(() => {});
      await admin.quit();
    }
  }, 60_000);

  it('ends on SIGTERM within SHUTDOWN_TIMEOUT_MS while Redis does not answer; what it accepted is checked after', async () => {
    const redis = await redisServer();
    // One account create a second, no burst: most of the checkouts below still wait in the queue.
    const { shop, env } = await environment(
      { REDIS_URL: redis.url, TRUSTED_FRONTS: '127.0.0.1', SHUTDOWN_TIMEOUT_MS: '2000' },
      { emulator: { accountRequestsPerSecond: 1, accountBurst: 1 } },
    );
    const first = await startGatewayProcess(env);
    const orders = Array.from({ length: 5 }, (_, i) => `stopping-order-${i}`);
    for (const [i, order] of orders.entries())
      expect((await postCheckout(first.url, { order, from: `203.0.113.${i + 1}` })).status).toBe(202);
    redis.pause();
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(1);
    expect(first.output()).toContain(
      'SIGTERM: taking no new checkout, finishing the checks under way (at most 2000 ms)',
    );
    expect(first.output()).toContain('not stopped within 2000 ms (SHUTDOWN_TIMEOUT_MS): exiting');
    redis.resume();
    // Nothing it accepted is lost: the next start checks each (BullMQ hands over the ones it held), told once.
    // Its admin listener's /metrics says what is left to send: the only status monitor on this
    // Redis, it holds the reporter lease and writes the queue's figure (`drained`).
    const second = await startGatewayProcess({ ...env, ADMIN_PORT: '0' });
    // The first's creates cut off on the wire are waited for a create's window (the account
    // timeout, 60 s, and a lease) before the keys are taken over: 70 s, then the checks at 1 a second.
    await expect.poll(shop.orders, { timeout: 120_000 }).toEqual(orders);
    // Final once nothing is left to send: the queue (a job the first held comes back), then the outbox.
    await drained(second.adminUrl!, { fleet: true });
    expect(shop.orders()).toEqual(orders);
  }, 200_000);

  it('exits at once on a second SIGTERM or SIGINT while the first waits for Redis', async () => {
    const redis = await redisServer();
    const { env } = await environment({ REDIS_URL: redis.url, SHUTDOWN_TIMEOUT_MS: '600000' });
    for (const second of ['SIGINT', 'SIGTERM'] as const) {
      const gateway = await startGatewayProcess(env);
      redis.pause();
      gateway.child.kill('SIGTERM');
      await expect.poll(gateway.output).toContain('SIGTERM: taking no new checkout');
      gateway.child.kill(second);
      expect(await gateway.exited).toBe(1);
      expect(gateway.output()).toContain(`${second} again: exiting now; what is queued and undelivered is kept`);
      redis.resume();
    }
  }, 60_000);
});
