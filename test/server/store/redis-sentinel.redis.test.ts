// The store and the queue through Sentinel: a master, a replica and a Sentinel (redis-server
// --sentinel), reached by ioredis clients made with `sentinels` and `name`, as docs/fleet.md
// (#sentinel) sets them up; then the master dies in the middle of the traffic and the
// Sentinel promotes the replica.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../../src/emulator/index.js';
import { DeviceRiskError } from '../../../src/server/errors.js';
import { createBullmqQueue } from '../../../src/server/queue/bullmq.js';
import { createRedisStore } from '../../../src/server/store/redis.js';
import { startRedisSentinel } from '../../support/redis-server.mjs';
import { haveRedis } from '../../support/redis.js';
import { checkoutFor, fleetHandlerOn } from '../../support/kit.js';

let sentinel: Awaited<ReturnType<typeof startRedisSentinel>> | undefined;
let emulator: Emulator | undefined;
const closers: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  if (!haveRedis) return;
  sentinel = await startRedisSentinel();
  emulator = await startEmulator({ accountRequestsPerSecond: 0 });
}, 60_000);
afterAll(async () => {
  for (const close of closers.splice(0)) await close().catch(() => {});
  await emulator?.close();
  await sentinel?.stop();
});

describe.skipIf(!haveRedis)('the store and the queue through Sentinel', () => {
  it('ready() at once on a Sentinel client; checkouts before and after the master dies: 503 meanwhile, then each accepted, checked once and told; the promoted replica holds the keys', async () => {
    const { sentinels, name } = sentinel!;
    const errors: unknown[] = [];
    const told: string[] = [];
    const storeClient = new Redis({ sentinels, name, enableOfflineQueue: false });
    const bull = new Redis({ sentinels, name, maxRetriesPerRequest: null });
    for (const client of [storeClient, bull]) client.on('error', () => {});
    closers.push(async () => {
      await handler.close();
      storeClient.disconnect();
      bull.disconnect();
    });
    const store = createRedisStore(storeClient, { prefix: 'sentinel:' });
    await store.ready();
    const queue = createBullmqQueue({ connection: bull, prefix: 'sentinel', onError: (e) => errors.push(e) });
    const handler = fleetHandlerOn(emulator!, { store, queue }, errors, told);
    const post = (key: string) => handler(checkoutFor(key));
    /**
     * As the browser package does: a 503 is tried again after its Retry-After. For up to 60 s:
     * a failover's election takes a second on a quiet machine and far longer on a busy one,
     * and what is asserted is the answer after it, not its speed.
     */
    async function checkout(key: string): Promise<number> {
      const end = Date.now() + 60_000;
      for (;;) {
        const answer = await post(key);
        if (answer.status !== 503 || Date.now() > end) return answer.status;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    const before = Array.from({ length: 5 }, (_, i) => `sentinel-before-${i}`);
    const after = Array.from({ length: 5 }, (_, i) => `sentinel-after-${i}`);
    expect(await Promise.all(before.map(checkout))).toEqual(before.map(() => 202));
    await expect.poll(() => [...told].sort(), { timeout: 20_000 }).toEqual([...before].sort());

    // The master dies: the Sentinel sees it down after a second and promotes the replica.
    // Meanwhile checkouts are answered 503 store_unavailable and tried again, as the browser does.
    await sentinel!.master.stop();
    expect(await Promise.all(after.map(checkout))).toEqual(after.map(() => 202));
    expect(await sentinel!.masterPort()).toBe(sentinel!.replica.port);
    const keys = [...before, ...after];
    await expect.poll(() => [...told].sort(), { timeout: 60_000 }).toEqual([...keys].sort());
    const made = emulator!.inspect.transactions().filter((tx) => keys.includes(tx.customerInternalReference));
    expect(made.map((tx) => tx.customerInternalReference).sort()).toEqual([...keys].sort());
    expect(made.every((tx) => tx.blackboxes.length === 1)).toBe(true);
    // Both clients are on the promoted replica now, and it holds the store's keys of both halves.
    for (const c of [storeClient, bull])
      expect(await c.info('server')).toContain(`tcp_port:${sentinel!.replica.port}\r\n`);
    const admin = new Redis(sentinel!.replica.port, '127.0.0.1');
    try {
      const stored = await admin.keys('sentinel:*');
      for (const key of keys) expect(stored.some((k) => k.includes(`:idempotency:${key}`))).toBe(true);
    } finally {
      admin.disconnect();
    }
    // What was told: the store away during the failover, nothing else (no orphan, no other code);
    // the rest are the BullMQ connection's own errors while it looked for the new master.
    const codes = errors.filter((e) => e instanceof DeviceRiskError).map((e) => (e as DeviceRiskError).code);
    expect(codes.length).toBeGreaterThan(0);
    expect(codes.filter((code) => code !== 'store_unavailable')).toEqual([]);
  }, 180_000);
});
