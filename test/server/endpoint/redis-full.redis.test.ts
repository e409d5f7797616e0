// A real redis-server at its maxmemory (2 MB, policy noeviction), filled: a checkout through the
// handler is answered 503 with Retry-After and a code that names the store (`store_full` for
// createRedisStore, `queue_full` for the BullMQ queue's add), told to onError the same, never
// 502 internal_error blaming the device-risk service (#58, item 3). Once there is room again
// (maxmemory raised, or the filler deleted), the next checkout is accepted and checked, and a
// queued check caught by the full Redis drains, with nothing restarted.
import { Redis as IoRedis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeviceRiskError } from '../../../src/server/errors.js';
import { createDeviceRiskHandler, type DeviceRiskHandlerOptions } from '../../../src/server/index.js';
import { createBullmqQueue } from '../../../src/server/queue/bullmq.js';
import { createRedisStore } from '../../../src/server/store/redis.js';
import { connect, haveRedis, startRedisServer, type Client, type RedisServer } from '../../support/redis.js';
import { blackboxOf } from '../../support/kit.js';
import { orderedClient } from '../../support/stub-client.js';

const SHOP = 'https://shop.example';
const MAXMEMORY = '2mb';
const ROOMY_MAXMEMORY = '4mb';

let redis: RedisServer;
let admin: Client;
beforeAll(async () => {
  if (!haveRedis) return;
  redis = await startRedisServer({ args: ['--maxmemory', MAXMEMORY, '--maxmemory-policy', 'noeviction'] });
  admin = await connect(redis.url);
});
afterAll(async () => {
  await admin?.quit().catch(() => {});
  await redis?.stop();
});

/**
 * Fills Redis with 10 kB values until it refuses one (OOM), then holds it full: maxmemory is
 * set just under what it then holds, so that a few bytes freed by chance (a connection's
 * buffers) open no room. Answers the filler's keys.
 */
async function fill(): Promise<string[]> {
  const keys: string[] = [];
  const value = 'x'.repeat(10_000);
  for (;;) {
    const key = `filler:${keys.length}`;
    try {
      await admin.set(key, value);
    } catch (error) {
      expect((error as Error).message).toMatch(/^OOM command not allowed when used memory > 'maxmemory'/);
      break;
    }
    keys.push(key);
    if (keys.length > 2000) throw new Error(`Redis took ${keys.length} values past a maxmemory of ${MAXMEMORY}`);
  }
  const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
  await admin.configSet('maxmemory', String(used - 100_000));
  return keys;
}

/**
 * Room again, as an operator would make it: the filler deleted and maxmemory raised to twice its
 * 2 MB. Back at 2 MB there may be none: the server, the queue and their clients already held
 * about 1.9 MB before the filler (measured on redis-server 7.0), the filler took the little left,
 * and the clients' buffers grow while the worker is refused.
 */
async function room(keys: string[]) {
  await admin.configSet('maxmemory', ROOMY_MAXMEMORY);
  if (keys.length) await admin.del(keys);
}

function handlerOn(service: ReturnType<typeof orderedClient>, extra: Partial<DeviceRiskHandlerOptions>) {
  const errors: DeviceRiskError[] = [];
  const results: string[] = [];
  const handler = createDeviceRiskHandler({
    client: service.client,
    allowedOrigins: [SHOP],
    workflowKey: 10020,
    checkoutsPerAddress: false,
    checkoutsPerCustomer: false,
    resolveCustomer: (request) => ({ customerInternalReference: request.headers.get('x-order')! }),
    onError: (error) => errors.push(error as DeviceRiskError),
    onResult: (details, { customerInternalReference }) =>
      void results.push(`${customerInternalReference} ${details.workflowExecutionId}`),
    ...extra,
  });
  return { handler, errors, results };
}

const post = (key: string, order: string) =>
  new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': key, 'x-order': order },
    body: JSON.stringify({ blackbox: blackboxOf(key) }),
  });

async function answerOf(response: Response) {
  const body = (await response.json()) as { error?: { code: string; message: string } };
  return {
    status: response.status,
    code: body.error?.code,
    retryAfter: response.headers.get('retry-after'),
    message: body.error?.message,
  };
}

describe.skipIf(!haveRedis)('a Redis at maxmemory (noeviction)', () => {
  it('createRedisStore on node-redis: 503 store_full with Retry-After, told as Redis full; with room, checked', async () => {
    const client = await connect(redis.url);
    const service = orderedClient();
    const { handler, errors } = handlerOn(service, {
      store: createRedisStore(client, { prefix: 'store-full:' }),
      answer: 'checked',
    });
    let filler: string[] = [];
    try {
      filler = await fill();
      const refused = await answerOf(await handler(post('key-store-full-1', 'order-1')));
      expect(refused).toEqual({ status: 503, code: 'store_full', retryAfter: '5', message: expect.any(String) });
      expect(refused.message).not.toMatch(/device-risk service/);
      expect(errors.map((e) => e.code)).toEqual(['store_full']);
      expect(errors[0]!.message).toMatch(/Redis is full \(maxmemory\)/);
      expect(service.calls).toEqual([]);
      // Room again, nothing restarted: the browser's retry is checked.
      await room(filler);
      filler = [];
      const checked = await handler(post('key-store-full-1', 'order-1'));
      expect(checked.status).toBe(200);
      expect(service.calls).toEqual(['create order-1', 'upload wf-1', 'finalize wf-1']);
    } finally {
      await room(filler);
      await handler.close();
      await client.quit();
    }
  });

  it("the BullMQ queue's add: 503 queue_full with Retry-After; a queued check caught by it drains once there is room", async () => {
    const bull = new IoRedis(redis.url, { maxRetriesPerRequest: null });
    const storeClient = new IoRedis(redis.url, { maxRetriesPerRequest: 1 });
    const queueErrors: DeviceRiskError[] = [];
    const queue = createBullmqQueue({
      connection: bull,
      name: 'redis-full',
      concurrency: 1,
      // Long enough that a busy machine does not lapse the lock of the job that waits (a lapse
      // is told to onError too, and this test asserts every word told).
      lockDurationMs: 5000,
      stalledIntervalMs: 2500,
      onError: (error) => queueErrors.push(error as DeviceRiskError),
    });
    const service = orderedClient();
    const { handler, errors, results } = handlerOn(service, {
      store: createRedisStore(storeClient, { prefix: 'queue-full:' }),
      queue,
      idempotencyLeaseMs: 1000,
    });
    let filler: string[] = [];
    try {
      // Accepted while there is room; its check waits at the account create while Redis fills.
      const release = service.hold();
      expect((await handler(post('key-queue-full-1', 'order-1'))).status).toBe(202);
      await expect.poll(async () => (await queue.queue.getJobCounts('active')).active).toBe(1);
      filler = await fill();
      release();
      // A new checkout: its blackbox's claim (src/server/endpoint/reuse.ts), the first write
      // before the queue's add, cannot be written (the add refused alone: redis-full.stubs.test.ts).
      const refused = await answerOf(await handler(post('key-queue-full-2', 'order-2')));
      expect(refused).toEqual({ status: 503, code: 'store_full', retryAfter: '5', message: expect.any(String) });
      expect(refused.message).not.toMatch(/device-risk service/);
      expect(errors.find((e) => e.code === 'store_full')?.message).toMatch(/Redis is full \(maxmemory\)/);
      // The waiting check cannot record its progress: told as the store's, never as the service's.
      await expect.poll(() => errors.some((e) => e.code === 'store_full')).toBe(true);
      // Nor can the worker move the job on: told by the queue as Redis full, once per 10 s however often it meets it.
      await expect
        .poll(() => queueErrors.map((e) => [e.code, /Redis is full \(maxmemory\).*queue's worker/.test(e.message)]))
        .toEqual([['store_full', true]]);
      const told = [...errors, ...queueErrors].map((e) => e.code);
      expect(told).not.toContain('internal_error');
      expect(told.every((code) => ['store_full', 'orphaned_transaction'].includes(code))).toBe(true);
      expect(results).toEqual([]);
      // Room again, nothing restarted: the retry is accepted, and both checks drain.
      await room(filler);
      filler = [];
      // As the browser does: a 503 is posted again after its Retry-After. On a busy machine the
      // first post can still meet the full Redis's last word (the fleet's figures read just
      // before the room came); never anything but the full store's codes, and 202 within 20 s.
      const seen: string[] = [];
      for (const end = Date.now() + 20_000; ;) {
        const again = await answerOf(await handler(post('key-queue-full-2', 'order-2')));
        if (again.status === 202 || Date.now() > end) {
          expect(again.status, JSON.stringify(again)).toBe(202);
          break;
        }
        seen.push(`${again.status} ${again.code ?? ''}`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(seen.filter((answer) => !/^503 (store_full|queue_full)$/.test(answer))).toEqual([]);
      await expect
        .poll(() => results.map((r) => r.split(' ')[0]).sort(), { timeout: 60_000 })
        .toEqual(['order-1', 'order-2']);
      await expect.poll(async () => (await queue.counts()).queued, { timeout: 10_000 }).toBe(0);
    } finally {
      await room(filler);
      await handler.close().catch(() => {});
      bull.disconnect();
      storeClient.disconnect();
    }
  }, 180_000);
});
