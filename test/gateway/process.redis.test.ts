// `blackbox-capture serve` as a process of its own on a real redis-server (REDIS_URL) that
// goes away: GET /readyz tells it (store_unavailable, queue_unavailable) while /healthz stays
// alive (docs/gateway.md#readiness).
import { afterEach, describe, expect, it } from 'vitest';
import { gatewayEnvironment, killGatewayProcesses, startGatewayProcess, webhookReceiver } from '../support/gateway.js';
import { closeServers } from '../support/http.js';
import { useEmulators } from '../support/kit.js';
import { haveRedis, startRedisServer, type RedisServer } from '../support/redis.js';

const startEmulator = useEmulators();
const redises: RedisServer[] = [];
afterEach(async () => {
  killGatewayProcesses();
  for (const redis of redises.splice(0)) await redis.stop();
  await closeServers();
});

async function redisServer(): Promise<RedisServer> {
  const redis = await startRedisServer();
  redises.push(redis);
  return redis;
}

const readyCode = async (url: string) => ((await (await fetch(`${url}/readyz`)).json()) as { code?: string }).code;

describe.skipIf(!haveRedis)('serve on a Redis that goes away (a process)', () => {
  it('reads store_unavailable and queue_unavailable on /readyz while Redis does not answer, ready again after', async () => {
    const redis = await redisServer();
    const emulator = await startEmulator();
    const shop = await webhookReceiver();
    const gateway = await startGatewayProcess(gatewayEnvironment(emulator, shop.url, { REDIS_URL: redis.url }));
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
});
