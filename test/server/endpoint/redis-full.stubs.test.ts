// A Redis at its maxmemory (policy noeviction) refuses writes with "OOM command not allowed
// when used memory > 'maxmemory'", as node-redis and ioredis deliver it (an Error whose message
// is the server's reply). The endpoint answers it 503 with Retry-After and a code that names the
// store (`store_full`, or `queue_full` for the queue's add), tells onError the same, never
// blames the device-risk service, and takes checkouts again once there is room (#58, item 3).
// On a real redis-server: test/server/endpoint/redis-full.redis.test.ts.
import { describe, expect, it } from 'vitest';
import { failureAnswer } from '../../../src/server/endpoint/failure-answer.js';
import { isRedisFull, type DeviceRiskError } from '../../../src/server/errors.js';
import {
  createDeviceRiskHandler,
  createMemoryQueue,
  createMemoryStore,
  type CheckQueue,
  type DeviceRiskHandlerOptions,
  type Store,
} from '../../../src/server/index.js';
import { createRedisStore } from '../../../src/server/store/redis.js';
import { givenJobs, handQueue } from '../../support/hand-queue.js';
import { orderedClient } from '../../support/stub-client.js';

const SHOP = 'https://shop.example';
const BLACKBOX = '0400' + 'nVQ+/abc'.repeat(150) + '==';
const OOM = "OOM command not allowed when used memory > 'maxmemory'.";

/** The refusal as the clients deliver it: node-redis a SimpleError, ioredis a ReplyError (a script's with its name). */
function oom(kind: 'SimpleError' | 'ReplyError' = 'ReplyError', script = false): Error {
  const error = new Error(
    script ? `${OOM} script: 5ab432e88830d573e2fa33392ffbd4ad25a9b100, on @user_script:589.` : OOM,
  );
  error.name = kind;
  return error;
}

function setUp(extra: Partial<DeviceRiskHandlerOptions>) {
  const errors: DeviceRiskError[] = [];
  const { client, calls } = orderedClient();
  const handler = createDeviceRiskHandler({
    client,
    allowedOrigins: [SHOP],
    workflowKey: 10020,
    checkoutsPerAddress: false,
    checkoutsPerCustomer: false,
    resolveCustomer: (request) => ({ customerInternalReference: request.headers.get('x-order') ?? 'order-0' }),
    onError: (error) => errors.push(error as DeviceRiskError),
    ...extra,
  });
  return { handler, errors, calls };
}

const post = (key: string, order = 'order-0') =>
  new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': key, 'x-order': order },
    body: JSON.stringify({ blackbox: BLACKBOX }),
  });

async function answerOf(response: Response) {
  const body = (await response.json()) as { error: { code: string; message: string } };
  return {
    status: response.status,
    code: body.error.code,
    retryAfter: response.headers.get('retry-after'),
    message: body.error.message,
  };
}

/** A node-redis-shaped client on a Map whose writes Redis refuses while `full` is set (reads and deletes pass, as on Redis). */
function fullableNodeRedis() {
  const values = new Map<string, string>();
  const state = { full: false };
  const client = {
    get: async (key: string) => values.get(key) ?? null,
    set: async (key: string, value: string, set: { condition?: 'NX' }) => {
      if (state.full) throw oom('SimpleError');
      if (set.condition === 'NX' && values.has(key)) return null;
      values.set(key, value);
      return 'OK';
    },
    del: async (key: string) => Number(values.delete(key)),
    eval: async (script: string, { keys: [key], arguments: args }: { keys: string[]; arguments: string[] }) => {
      if (script.includes('PTTL')) return 60_000;
      if (script.includes('INFO')) return '# Memory\r\nmaxmemory_policy:noeviction\r\n';
      if (script.includes("'DEL'")) return values.get(key!) === args[0] ? Number(values.delete(key!)) : 0;
      if (values.get(key!) !== args[0]) return 0;
      if (state.full) throw oom('SimpleError', true);
      values.set(key!, args[1]!);
      return 1;
    },
  };
  return { client, state };
}

describe('a Redis at maxmemory is named: the store or the queue, never the service', () => {
  it.each([
    ['node-redis', oom('SimpleError'), true],
    ['ioredis', oom('ReplyError'), true],
    ['a script (ioredis)', oom('ReplyError', true), true],
    ['wrapped as a cause', new Error('job failed', { cause: oom() }), true],
    [
      'another reply',
      Object.assign(new Error('READONLY You can’t write against a read only replica.'), { name: 'ReplyError' }),
      false,
    ],
    ['the words elsewhere', new Error('the job said: OOM command not allowed'), false],
    ['not an error', OOM, false],
  ])('%s: %s', (_, error, full) => {
    expect(isRedisFull(error)).toBe(full);
  });

  it('failureAnswer: a Redis refusal let through is 503 store_full with Retry-After, not 502 internal_error', async () => {
    const answer = await answerOf(failureAnswer(oom()));
    expect(answer).toEqual({ status: 503, code: 'store_full', retryAfter: '5', message: expect.any(String) });
    expect(answer.message).not.toMatch(/device-risk service/);
  });

  it("failureAnswer: the store's and the queue's codes say the store, an internal error does not blame the service", async () => {
    const { DeviceRiskError } = await import('../../../src/server/errors.js');
    const unavailable = await answerOf(failureAnswer(new DeviceRiskError('store_unavailable', 'x', { retryAfter: 1 })));
    expect(unavailable).toMatchObject({ status: 503, code: 'store_unavailable', retryAfter: '1' });
    expect(unavailable.message).toMatch(/store could not be reached/);
    const full = await answerOf(failureAnswer(new DeviceRiskError('queue_full', 'x', { status: 503, retryAfter: 5 })));
    expect(full).toMatchObject({ status: 503, code: 'queue_full', retryAfter: '5' });
    const internal = await answerOf(failureAnswer(new Error('boom')));
    expect(internal).toMatchObject({ status: 502, code: 'internal_error' });
    for (const { message } of [unavailable, full, internal]) expect(message).not.toMatch(/device-risk service/);
  });

  it("createRedisStore full: the checkout is 503 store_full with Retry-After, told as the store's; with room again it is checked", async () => {
    const redis = fullableNodeRedis();
    const store = createRedisStore(redis.client);
    const { handler, errors, calls } = setUp({ store, answer: 'checked' });
    // The store checked while there was room, then Redis fills.
    await store.ready();
    redis.state.full = true;
    const answer = await answerOf(await handler(post('key-full-0001')));
    expect(answer).toEqual({ status: 503, code: 'store_full', retryAfter: '5', message: expect.any(String) });
    expect(answer.message).not.toMatch(/device-risk service/);
    expect(errors.map((e) => [e.code, e.retryAfter])).toEqual([['store_full', 5]]);
    expect(errors[0]!.message).toMatch(/Redis is full \(maxmemory\)/);
    expect(calls).toEqual([]);
    // Room again (keys expired, maxmemory raised): the same key is checked, nothing restarted.
    redis.state.full = false;
    const checked = await handler(post('key-full-0001'));
    expect(checked.status).toBe(200);
    expect(calls).toEqual(['create order-0', 'upload wf-1', 'finalize wf-1']);
  });

  it('createRedisStore full before its start-up check: store_full, and the check runs again once there is room', async () => {
    const redis = fullableNodeRedis();
    const store = createRedisStore(redis.client);
    redis.state.full = true;
    await expect(store.get('k')).rejects.toMatchObject({
      code: 'store_full',
      retryAfter: 5,
      message: expect.stringMatching(/Redis is full \(maxmemory\): it refused a write \(SET\)/),
    });
    redis.state.full = false;
    expect(await store.get('k')).toBeUndefined();
  });

  it("a store on Redis of the shop's own that lets the refusal through: 503 store_full, told as the store's", async () => {
    const memory = createMemoryStore();
    let full = true;
    const refusing =
      <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
      (...args: A) =>
        full ? Promise.reject(oom()) : call(...args);
    const store: Store = {
      ...memory,
      set: refusing(memory.set),
      setIfAbsent: refusing(memory.setIfAbsent),
      compareAndSet: refusing(memory.compareAndSet),
    };
    const { handler, errors } = setUp({ store, answer: 'checked' });
    const answer = await answerOf(await handler(post('key-full-0002')));
    expect(answer).toMatchObject({ status: 503, code: 'store_full', retryAfter: '5' });
    expect(errors.map((e) => e.code)).toEqual(['store_full']);
    full = false;
    expect((await handler(post('key-full-0002'))).status).toBe(200);
  });

  it("the queue's add refused by its Redis at maxmemory: 503 queue_full with Retry-After, told as Redis full; then accepted and checked", async () => {
    const memory = createMemoryQueue({ concurrency: 1 });
    let full = true;
    const queue: CheckQueue = {
      ...memory,
      add: (job) => (full ? Promise.reject(oom('ReplyError', true)) : memory.add(job)),
    };
    const { handler, errors, calls } = setUp({ queue });
    try {
      const answer = await answerOf(await handler(post('key-full-0003', 'order-3')));
      expect(answer).toEqual({ status: 503, code: 'queue_full', retryAfter: '5', message: expect.any(String) });
      expect(answer.message).not.toMatch(/device-risk service/);
      expect(errors.map((e) => [e.code, e.status, e.retryAfter, e.operation])).toEqual([
        ['queue_full', 503, 5, 'queue'],
      ]);
      expect(errors[0]!.message).toMatch(/Redis is full \(maxmemory\)/);
      full = false;
      expect((await handler(post('key-full-0003', 'order-3'))).status).toBe(202);
      await expect.poll(() => calls).toEqual(['create order-3', 'upload wf-1', 'finalize wf-1']);
    } finally {
      await handler.close();
    }
  });

  it('a queued check that meets a Redis refusal let through: told as store_full, tried again after its Retry-After', async () => {
    const { queue, jobs, run } = handQueue(givenJobs);
    const { client, calls } = orderedClient();
    // As a token source on a store of the shop's own would let it through.
    let full = true;
    const createAccount = client.createAccount.bind(client);
    client.createAccount = (...args) => (full ? Promise.reject(oom()) : createAccount(...args));
    const { handler, errors } = setUp({ queue, client });
    expect((await handler(post('key-full-0005', 'order-5'))).status).toBe(202);
    expect(await run(jobs[0]!)).toEqual({ retryInMs: 5000 });
    expect(errors.map((e) => [e.code, e.retryAfter])).toEqual([['store_full', 5]]);
    full = false;
    expect(await run(jobs[0]!)).toEqual({ done: true });
    expect(calls).toEqual(['create order-5', 'upload wf-1', 'finalize wf-1']);
    await handler.close();
  });

  it("any other failure of the queue's add is the store's (store_unavailable, 503), not an internal error", async () => {
    const memory = createMemoryQueue();
    const queue: CheckQueue = { ...memory, add: () => Promise.reject(new Error('Connection is closed.')) };
    const { handler, errors } = setUp({ queue });
    try {
      const answer = await answerOf(await handler(post('key-full-0004')));
      expect(answer).toMatchObject({ status: 503, code: 'store_unavailable', retryAfter: '1' });
      expect(errors.map((e) => [e.code, e.operation])).toEqual([['store_unavailable', 'queue']]);
    } finally {
      await handler.close();
    }
  });
});
