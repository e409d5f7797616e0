// The queue on BullMQ and a real redis-server, with two endpoints as two instances of a
// fleet (each its own Redis connections): any instance checks what any accepted, each key
// once, by turns across visitors; the tenant's limit pauses the fleet's workers; and a job whose
// instance died (its connections cut mid-check) is taken over by the live one.
import { Redis as IoRedis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeviceRiskTransaction } from '../../../src/server/api/device-risk-client.js';
import { DeviceRiskError } from '../../../src/server/errors.js';
import {
  createDeviceRiskHandler,
  createMemoryStore,
  type DeviceRiskClient,
  type DeviceRiskHandlerOptions,
} from '../../../src/server/index.js';
import { createBullmqQueue, jobIdOf } from '../../../src/server/queue/bullmq.js';
import { createRedisStore } from '../../../src/server/store/redis.js';
import { isMaybeHeldAnswer } from '../../../src/server/endpoint/queued.js';
import { haveRedis, startRedisServer, type RedisServer } from '../../support/redis.js';
import { blackboxOf } from '../../support/kit.js';
import { expectSignedInFirst } from '../../support/lanes.js';
import { expectFullAtLateAt } from '../../support/late-at.js';
import { expectReadingApart } from '../../support/reading.js';
import { expectArrivalOrder } from '../../support/arrival.js';
import { accountCreateLimited, plainSealing, stubTransaction } from '../../support/stub-client.js';

const SHOP = 'https://shop.example';
const BLACKBOX = '0400' + 'nVQ+/abc'.repeat(150) + '==';

let redis: RedisServer;
beforeAll(async () => {
  if (haveRedis) redis = await startRedisServer();
});
afterAll(async () => {
  await redis?.stop();
});

/** One service seen by every instance: executions numbered across the fleet, calls recorded. */
function service() {
  const calls: string[] = [];
  let n = 0;
  let limited = 0;
  const hang = new Set<string>();
  const client = (instance: string) =>
    ({
      retrievalOrigin: 'https://retrieval.example',
      clientId: 'client-1',
      accountTimeoutMs: 500,
      createAccount: async (body: { customerInternalReference: string }) => {
        if (hang.has(instance)) {
          calls.push(`hang on ${instance}`);
          return new Promise(() => {});
        }
        if (limited > 0) {
          limited--;
          calls.push(`429 ${body.customerInternalReference}`);
          throw accountCreateLimited();
        }
        calls.push(`create ${body.customerInternalReference} on ${instance}`);
        return stubTransaction(++n);
      },
      uploadBlackbox: async (tx: DeviceRiskTransaction) => void calls.push(`upload ${tx.workflowExecutionId}`),
      finalize: async () => {},
      status: async () => 'PROCESSED',
      details: async (tx: DeviceRiskTransaction) => ({ workflowExecutionId: tx.workflowExecutionId }),
      ...plainSealing,
    }) as unknown as DeviceRiskClient;
  return {
    calls,
    client,
    limit: (count: number) => void (limited = count),
    hangOn: (instance: string) => void hang.add(instance),
  };
}

/** One instance: its own connections to the one Redis, the shared queue's name and store. */
function instance(
  name: string,
  svc: ReturnType<typeof service>,
  queueName: string,
  results: string[],
  options: Partial<DeviceRiskHandlerOptions> = {},
) {
  const bull = new IoRedis(redis.url, { maxRetriesPerRequest: null });
  const storeClient = new IoRedis(redis.url, { maxRetriesPerRequest: 1 });
  const queue = createBullmqQueue({
    connection: bull,
    name: queueName,
    concurrency: 2,
    lockDurationMs: 1000,
    stalledIntervalMs: 500,
    onError: () => {},
  });
  const errors: string[] = [];
  const handler = createDeviceRiskHandler({
    client: svc.client(name),
    allowedOrigins: [SHOP],
    workflowKey: 10020,
    store: createRedisStore(storeClient, { prefix: `${queueName}:` }),
    queue,
    idempotencyLeaseMs: 1000,
    checkoutsPerAddress: false,
    checkoutsPerCustomer: false,
    resolveCustomer: (request) => ({ customerInternalReference: request.headers.get('x-order')! }),
    onError: (error) => errors.push((error as DeviceRiskError).code),
    onResult: (details, { customerInternalReference }) =>
      void results.push(`${customerInternalReference} ${details.workflowExecutionId}`),
    ...options,
  });
  return {
    handler,
    queue,
    errors,
    /** Cuts every connection of this instance, as its death would. */
    die() {
      bull.disconnect();
      storeClient.disconnect();
    },
    async close() {
      await handler.close().catch(() => {});
      bull.disconnect();
      storeClient.disconnect();
    },
  };
}

/** Two instances on one queue and one stand-in service, both telling their decisions into `results`. */
function fleetOfTwo(queueName: string, options: Partial<DeviceRiskHandlerOptions> = {}) {
  const svc = service();
  const results: string[] = [];
  const a = instance('a', svc, queueName, results, options);
  const b = instance('b', svc, queueName, results, options);
  const close = async () => {
    await a.close();
    await b.close();
  };
  return { svc, results, a, b, close };
}

const post = (key: string, order: string) =>
  new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': key, 'x-order': order },
    body: JSON.stringify({ blackbox: blackboxOf(key) }),
  });

/** A checkout of one visitor's (`visitor-1` unless named), added to a queue directly. */
const visitorJob = (key: string, visitor = 'visitor-1') => ({
  key,
  fingerprint: 'f',
  blackbox: BLACKBOX,
  customer: { customerInternalReference: `order-${key}` },
  acceptedAt: Date.now(),
  visitor,
});

/** A gate that held runs wait on (`released`) until `release` opens it. */
function gate() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  return { released, release };
}

async function until(done: () => boolean | Promise<boolean>, ms = 20_000) {
  const end = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > end) throw new Error('not within time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The answer of `request` made while Redis is frozen (paused before it, or by it), Redis resumed
 * after it whatever happens: within 5 s, as the store's limits answer, never wait.
 */
async function answeredWhileFrozen(request: () => Promise<Response>): Promise<Response> {
  const started = Date.now();
  let answer: Response;
  try {
    answer = await request();
  } finally {
    redis.resume();
  }
  expect(Date.now() - started).toBeLessThan(5000);
  return answer;
}

/** A connection of its own to the one Redis for `body`, cut after it. */
async function withConnection<T>(body: (connection: IoRedis) => Promise<T>): Promise<T> {
  const connection = new IoRedis(redis.url, { maxRetriesPerRequest: null });
  try {
    return await body(connection);
  } finally {
    connection.disconnect();
  }
}

type QueueOptions = Partial<Parameters<typeof createBullmqQueue>[0]>;

/**
 * A queue named `name` (one check at a time unless `options` say otherwise) on a connection of
 * its own, closed after `body`, `stop` (the release of a run held) first.
 */
function withQueue<T>(
  name: string,
  options: QueueOptions,
  body: (queue: ReturnType<typeof createBullmqQueue>, connection: IoRedis) => Promise<T>,
  stop?: () => void,
): Promise<T> {
  return withConnection(async (connection) => {
    const queue = createBullmqQueue({ connection, name, concurrency: 1, onError: () => {}, ...options });
    try {
      return await body(queue, connection);
    } finally {
      stop?.();
      await queue.close();
    }
  });
}

describe.skipIf(!haveRedis)('createBullmqQueue', () => {
  it('two instances: each accepts, any checks; one transaction per key, every decision told', async () => {
    const { svc, results, a, b, close } = fleetOfTwo('fleet-1');
    try {
      for (let i = 0; i < 12; i++) {
        const answer = await (i % 2 ? a : b).handler(post(`key-fleet1-${i}`, `order-${i}`));
        expect(answer.status).toBe(202);
        // A browser retry on the other instance: the same answer, 202 (or 200 once a busy
        // machine let the check finish first), and no second job (one create per key, below).
        if (i === 3)
          expect([200, 202]).toContain((await (i % 2 ? b : a).handler(post(`key-fleet1-${i}`, `order-${i}`))).status);
      }
      await until(() => results.length === 12);
      const creates = svc.calls.filter((c) => c.startsWith('create'));
      expect(creates).toHaveLength(12);
      expect(new Set(creates.map((c) => c.split(' ')[1])).size).toBe(12);
      expect(new Set(creates.map((c) => c.split(' ')[3]))).toEqual(new Set(['a', 'b']));
      await until(async () => (await a.queue.counts()).queued === 0);
      // What both instances finished, seen from either: the fleet's drain.
      expect(await a.queue.counts()).toEqual({
        queued: 0,
        oldestAcceptedAt: undefined,
        drainedLastMinute: 12,
        staleLastMinute: 0,
      });
      expect((await b.queue.counts()).drainedLastMinute).toBe(12);
      // Each decision told once: a retry's second job, if its add came as the first run ended, tells nothing.
      expect(results).toHaveLength(12);
      expect([...a.errors, ...b.errors]).toEqual([]);
    } finally {
      await close();
    }
  });

  it('Redis frozen (SIGSTOP) under the add: 503 within storeTimeoutMs, maybe held; it lands on waking, one check', async () => {
    const svc = service();
    const results: string[] = [];
    // The key's record in this process's memory: only the queue's calls meet the frozen Redis.
    const a = instance('a', svc, 'frozen-add', results, { store: createMemoryStore(), storeTimeoutMs: 300 });
    const add = a.queue.add;
    try {
      expect((await a.handler(post('key-frozen-warm', 'order-warm'))).status).toBe(202);
      await until(() => results.length === 1);
      // Frozen right as the add starts: the late check's count has been read.
      a.queue.add = (job, lateAt) => {
        redis.pause();
        return add(job, lateAt);
      };
      const answer = await answeredWhileFrozen(() => a.handler(post('key-frozen-add', 'order-frozen')));
      a.queue.add = add;
      expect([answer.status, answer.headers.get('retry-after'), isMaybeHeldAnswer(answer)]).toEqual([503, '1', true]);
      expect(a.errors).toEqual(['store_unavailable']);
      // Redis wakes and the add lands: the job is checked, its decision told once; the browser's
      // retry under the key finds it (202, or 200 once checked).
      await until(() => results.length === 2);
      expect([200, 202]).toContain((await a.handler(post('key-frozen-add', 'order-frozen'))).status);
      await until(async () => (await a.queue.counts()).queued === 0);
      expect(results.filter((line) => line.startsWith('order-frozen '))).toHaveLength(1);
      expect(svc.calls.filter((call) => call.startsWith('create order-frozen '))).toHaveLength(1);
      expect(a.errors).toEqual(['store_unavailable']);
    } finally {
      redis.resume();
      await a.close();
    }
  });

  /**
   * `a`'s BullMQ adds run, then their answer is lost (the connection cut after the script ran,
   * a resend refused): `after` runs between. Returns what puts the queue back as it was.
   */
  function answersLost(a: ReturnType<typeof instance>, after: (queue: typeof a.queue.queue) => void = () => {}) {
    const queue = a.queue.queue;
    const [add, getJob] = [queue.add.bind(queue), queue.getJob.bind(queue)];
    queue.add = (async (...args: Parameters<typeof add>) => {
      await add(...args);
      after(queue);
      throw new Error('Connection is closed.');
    }) as typeof add;
    return () => Object.assign(queue, { add, getJob });
  }

  it('an add whose answer is lost after Redis ran it: read back, held, 202; one check', async () => {
    const svc = service();
    const results: string[] = [];
    const a = instance('a', svc, 'lost-answer', results, { store: createMemoryStore() });
    const restore = answersLost(a);
    try {
      expect((await a.handler(post('key-lost', 'order-lost'))).status).toBe(202);
      await until(() => results.length === 1);
      expect(svc.calls.filter((call) => call.startsWith('create order-lost '))).toHaveLength(1);
      expect(a.errors).toEqual([]);
    } finally {
      restore();
      await a.close();
    }
  });

  it('an add whose answer is lost and whose job cannot be read back: 503 maybe held; its retry finds it, one check', async () => {
    const svc = service();
    const results: string[] = [];
    const a = instance('a', svc, 'lost-unread', results, { store: createMemoryStore() });
    const restore = answersLost(a, (queue) => {
      queue.getJob = () => Promise.reject(new Error('Connection is closed.'));
    });
    try {
      const answer = await a.handler(post('key-unread', 'order-unread'));
      restore();
      // Neither held nor refused: a door keeps the order's claim (isMaybeHeldAnswer), the browser posts again.
      expect([answer.status, answer.headers.get('retry-after'), isMaybeHeldAnswer(answer)]).toEqual([503, '1', true]);
      expect(a.errors).toEqual(['store_unavailable']);
      await until(() => results.length === 1);
      expect([200, 202]).toContain((await a.handler(post('key-unread', 'order-unread'))).status);
      expect(svc.calls.filter((call) => call.startsWith('create order-unread '))).toHaveLength(1);
    } finally {
      restore();
      await a.close();
    }
  });

  it('Redis frozen (SIGSTOP) under the count of the late check: 503 within storeTimeoutMs, nothing added', async () => {
    const svc = service();
    const results: string[] = [];
    const a = instance('a', svc, 'frozen-count', results, { store: createMemoryStore(), storeTimeoutMs: 300 });
    try {
      redis.pause();
      const answer = await answeredWhileFrozen(() => a.handler(post('key-frozen-count', 'order-count')));
      expect([answer.status, answer.headers.get('retry-after'), isMaybeHeldAnswer(answer)]).toEqual([503, '1', false]);
      expect(a.errors).toEqual(['store_unavailable']);
      expect(await a.queue.queue.getJob(await jobIdOf('key-frozen-count'))).toBeUndefined();
      // Its retry is checked, once.
      expect((await a.handler(post('key-frozen-count', 'order-count'))).status).toBe(202);
      await until(() => results.length === 1);
      expect(svc.calls.filter((call) => call.startsWith('create order-count '))).toHaveLength(1);
    } finally {
      redis.resume();
      await a.close();
    }
  });

  it("a key's job added again after its check (the retry's add in the instant after): nothing created or told twice", async () => {
    const { svc, results, a, close } = fleetOfTwo('fleet-again');
    const added: Parameters<typeof a.queue.add>[0][] = [];
    const add = a.queue.add.bind(a.queue);
    a.queue.add = (job) => {
      added.push(job);
      return add(job);
    };
    try {
      expect((await a.handler(post('key-again', 'order-again'))).status).toBe(202);
      await until(() => results.length === 1);
      await until(async () => (await a.queue.counts()).queued === 0);
      // The race, forced: the retry read the key's record as queued, and adds once the first job is gone.
      expect(await add(added[0]!)).toBe('added');
      await until(async () => (await a.queue.counts()).queued === 0);
      expect(svc.calls.filter((c) => c.startsWith('create'))).toHaveLength(1);
      expect(results).toHaveLength(1);
      expect((await a.queue.counts()).drainedLastMinute).toBe(1);
    } finally {
      await close();
    }
  });

  it('stale drops are counted apart from the drained, for the whole fleet: a backlog all stale drains at 0', async () => {
    // The queue paused while the checkouts come in, then the instances' clock a minute ahead: every job is past the bound.
    let ahead = 0;
    const { svc, a, b, close } = fleetOfTwo('fleet-stale', { maxQueuedMs: 30_000, now: () => Date.now() + ahead });
    try {
      await a.queue.queue.pause();
      for (let i = 0; i < 6; i++)
        expect((await (i % 2 ? a : b).handler(post(`key-stale-${i}`, `order-${i}`))).status).toBe(202);
      ahead = 60_000;
      await a.queue.queue.resume();
      await until(async () => (await b.queue.counts()).queued === 0);
      expect(svc.calls).toEqual([]);
      expect(await b.queue.counts()).toEqual({
        queued: 0,
        oldestAcceptedAt: undefined,
        drainedLastMinute: 0,
        staleLastMinute: 6,
      });
      expect(await b.handler.backlog()).toMatchObject({ drainPerSecond: 0, staleLastMinute: 6, fleetWide: true });
      // Each told twice, once on whichever instance gave it up: why, then as never checked (NotCheckedError).
      const told = [...a.errors, ...b.errors].filter((code) => code !== 'backlog_behind');
      expect(told.filter((code) => code === 'blackbox_stale')).toEqual(Array(6).fill('blackbox_stale'));
      expect(told.filter((code) => code === 'not_checked')).toEqual(Array(6).fill('not_checked'));
      expect(told).toHaveLength(12);
    } finally {
      await close();
    }
  });

  it("the tenant's limit pauses the workers and every checkout is still checked once", async () => {
    const svc = service();
    const results: string[] = [];
    const a = instance('a', svc, 'fleet-2', results);
    try {
      svc.limit(2);
      for (let i = 0; i < 4; i++) expect((await a.handler(post(`key-fleet2-${i}`, `order-${i}`))).status).toBe(202);
      const counts = await a.queue.counts();
      expect(counts.queued).toBeGreaterThan(0);
      await until(() => results.length === 4);
      expect(svc.calls.filter((c) => c.startsWith('429'))).toHaveLength(2);
      expect(svc.calls.filter((c) => c.startsWith('create'))).toHaveLength(4);
      expect(a.errors).toEqual(['rate_limited', 'rate_limited']);
    } finally {
      await a.close();
    }
  });

  it('an instance that dies mid-check: the live one takes the job over, and the decision is told', async () => {
    const svc = service();
    const results: string[] = [];
    const a = instance('a', svc, 'fleet-3', results);
    svc.hangOn('a');
    expect((await a.handler(post('key-fleet3-0', 'order-dead'))).status).toBe(202);
    // a has the job running (its create hangs): then it dies.
    await until(() => svc.calls.includes('hang on a'));
    expect((await a.queue.queue.getJob(await jobIdOf('key-fleet3-0')))?.processedOn).toBeTypeOf('number');
    a.die();
    const died = Date.now();
    const b = instance('b', svc, 'fleet-3', results);
    try {
      await until(() => results.length === 1);
      expect(results).toEqual(['order-dead wf-1']);
      expect(svc.calls.filter((c) => !c.startsWith('upload'))).toEqual(['hang on a', 'create order-dead on b']);
      expect(Date.now() - died).toBeLessThan(15_000);
      // The create a may have sent is reported as a possible orphan: never silent.
      expect(b.errors).toContain('orphaned_transaction');
    } finally {
      await b.close();
      // a is dead: its worker would wait for its hung check forever; its connections are cut already.
    }
  });

  it('one key, two orders added at once on two instances: one is added, the other a conflict, every time', async () => {
    // Two instances' own connections, one queue; nothing processes: what Redis holds stays.
    const connections = [0, 1].map(() => new IoRedis(redis.url, { maxRetriesPerRequest: null }));
    const [a, b] = connections.map((connection) => createBullmqQueue({ connection, name: 'race', onError: () => {} }));
    const job = (key: string, order: string, acceptedAt: number) => ({
      key,
      fingerprint: `f-${order}`,
      blackbox: BLACKBOX,
      customer: { customerInternalReference: order },
      acceptedAt,
    });
    try {
      for (let i = 0; i < 100; i++) {
        // Accepted within one millisecond on both instances (half the rounds), or whenever each is.
        const at = i % 2 ? Date.now() : undefined;
        const key = `key-race-${i}`;
        const [x, y] = await Promise.all([
          a!.add(job(key, `order-${i}-a`, at ?? Date.now())),
          b!.add(job(key, `order-${i}-b`, at ?? Date.now())),
        ]);
        expect([x, y].sort()).toEqual(['added', 'conflict']);
        // The one held is the one told "added".
        const held = await a!.queue.getJob(await jobIdOf(key));
        expect(held?.data.customer.customerInternalReference).toBe(`order-${i}-${x === 'added' ? 'a' : 'b'}`);
      }
      // The same order twice at once (a browser retry racing itself): held once, both accepted.
      for (let i = 0; i < 50; i++) {
        const at = Date.now();
        const key = `key-same-${i}`;
        const answers = await Promise.all([a!.add(job(key, 'order-same', at)), b!.add(job(key, 'order-same', at))]);
        expect(answers.sort()).toEqual(['added', 'present']);
      }
      expect(await a!.queue.count()).toBe(150);
    } finally {
      await a!.close();
      await b!.close();
      for (const connection of connections) connection.disconnect();
    }
  });

  it('one key, two orders posted at once to two instances: one 202, the other 422, and the 202 is the one checked', async () => {
    const { svc, results, a, b, close } = fleetOfTwo('fleet-race');
    try {
      const accepted: string[] = [];
      for (let i = 0; i < 100; i++) {
        const key = `key-fleet-race-${i}`;
        const answers = await Promise.all([a.handler(post(key, `order-${i}-a`)), b.handler(post(key, `order-${i}-b`))]);
        const statuses = answers.map((answer) => answer.status);
        expect([...statuses].sort()).toEqual([202, 422]);
        const refused = answers.find((answer) => answer.status === 422)!;
        expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('idempotency_key_reused');
        accepted.push(`order-${i}-${statuses[0] === 202 ? 'a' : 'b'}`);
      }
      // Every order told "accepted" is checked, and its own decision told: none is dropped silently.
      await until(() => results.length >= 100, 60_000);
      expect(results.map((r) => r.split(' ')[0]).sort()).toEqual([...accepted].sort());
      expect(svc.calls.filter((c) => c.startsWith('create'))).toHaveLength(100);
      // The same order posted twice at once (a browser retry racing itself): both accepted, checked once.
      for (let i = 0; i < 20; i++) {
        const key = `key-fleet-same-${i}`;
        const answers = await Promise.all([
          a.handler(post(key, `order-same-${i}`)),
          b.handler(post(key, `order-same-${i}`)),
        ]);
        // Each the same 202, or 200 with the decision where the check ended before the other read the key.
        for (const answer of answers)
          if (answer.status !== 200)
            expect([answer.status, await answer.json()]).toEqual([202, { accepted: true, reference: key }]);
      }
      await until(() => results.length >= 120, 60_000);
      expect(svc.calls.filter((c) => c.startsWith('create'))).toHaveLength(120);
      expect([...a.errors, ...b.errors]).toEqual([]);
    } finally {
      await close();
    }
  });

  it("fair turns: one visitor's flood waits behind every honest visitor's first checkout", async () => {
    const job = (key: string, visitor: string) => ({
      key,
      fingerprint: `f-${key}`,
      blackbox: BLACKBOX,
      customer: { customerInternalReference: key },
      acceptedAt: Date.now(),
      visitor,
    });
    const runs: string[] = [];
    await withQueue('turns', {}, async (queue, connection) => {
      // 30 from one network first, then five honest shoppers, one checkout each, then the flood's next.
      for (let i = 0; i < 30; i++) expect(await queue.add(job(`flood-${i}`, 'address 2001:db8:1::/64'))).toBe('added');
      for (let i = 0; i < 5; i++) expect(await queue.add(job(`honest-${i}`, `address 198.51.100.${i}`))).toBe('added');
      expect(await queue.add(job('flood-30', 'address 2001:db8:1::/64'))).toBe('added');
      // A retry of the same checkout takes no second turn.
      expect(await queue.add(job('honest-0', 'address 198.51.100.0'))).toBe('present');
      queue.process(async ({ key }) => {
        runs.push(key);
        return { done: true };
      });
      await expect.poll(() => runs.length, { timeout: 20_000 }).toBe(36);
      // The flood's first, then every honest shopper, then the rest of the flood in its order.
      expect(runs.slice(0, 6)).toEqual(['flood-0', 'honest-0', 'honest-1', 'honest-2', 'honest-3', 'honest-4']);
      expect(runs.slice(6)).toEqual(Array.from({ length: 30 }, (_, i) => `flood-${i + 1}`));
      // Every turn given back once its job left: the next checkout of the flood is a first turn again.
      expect(await connection.hgetall('bull:turns:bbc-turns')).toEqual({});
    });
  });

  it('signed-in checkouts run ahead of guests (a priority offset), by turns, and guests are shed first', async () => {
    let made = 0;
    await withConnection((connection) =>
      expectSignedInFirst(
        (maxQueued) =>
          createBullmqQueue({ connection, name: `lanes-${++made}`, maxQueued, concurrency: 1, onError: () => {} }),
        20_000,
      ),
    );
  });

  it("keeps one visitor's arrival order when its count fell meanwhile: a turn never goes back", async () => {
    await withConnection(async (connection) => {
      await expectArrivalOrder(
        () => createBullmqQueue({ connection, name: 'arrival', concurrency: 1, onError: () => {} }),
        20_000,
      );
      // Its jobs all ran: its turns are given back, the last one with them.
      await expect.poll(() => connection.hgetall('bull:arrival:bbc-turns'), { timeout: 5000 }).toEqual({});
    });
  });

  it("a visitor none of whose jobs waits any more starts its turns afresh, not at its burst's peak", async () => {
    const runs: string[] = [];
    const { released, release } = gate();
    await withQueue(
      'afresh',
      {},
      async (queue, connection) => {
        // A burst of 20 from one network; all but the last ran, the last runs still.
        for (let i = 1; i <= 20; i++) expect(await queue.add(visitorJob(`a${i}`, 'address a'))).toBe('added');
        queue.process(async ({ key }) => {
          runs.push(key);
          if (key === 'a20') await released;
          return { done: true };
        });
        await expect.poll(() => runs.length, { timeout: 20_000 }).toBe(20);
        for (let i = 1; i <= 5; i++) expect(await queue.add(visitorJob(`b${i}`, 'address b'))).toBe('added');
        // Its second held job: a second turn, not its 21st.
        expect(await queue.add(visitorJob('a21', 'address a'))).toBe('added');
        release();
        await expect.poll(() => runs.length, { timeout: 20_000 }).toBe(26);
        expect(runs.slice(20)).toEqual(['b1', 'b2', 'a21', 'b3', 'b4', 'b5']);
        await expect.poll(() => connection.hgetall('bull:afresh:bbc-turns'), { timeout: 5000 }).toEqual({});
      },
      release,
    );
  });

  it("a visitor's job retried waits again with its turn: a newer job of the visitor runs after it", async () => {
    const runs: string[] = [];
    const { released, release } = gate();
    await withQueue(
      'waits-again',
      {},
      async (queue) => {
        for (let i = 1; i <= 5; i++) expect(await queue.add(visitorJob(`a${i}`, 'address a'))).toBe('added');
        queue.process(async ({ key }) => {
          runs.push(key);
          if (key === 'c') await released;
          // Added while a5, retried, waits again in the queue.
          if (key === 'a6') expect(await queue.add(visitorJob('a7', 'address a'))).toBe('added');
          return key === 'a5' && runs.filter((run) => run === 'a5').length === 1 ? { retryInMs: 300 } : { done: true };
        });
        await expect.poll(() => runs, { timeout: 20_000 }).toEqual(['a1', 'a2', 'a3', 'a4', 'a5']);
        // Another visitor's job holds the one slot until a5's retry is due; a6 comes meanwhile.
        expect(await queue.add(visitorJob('c', 'address c'))).toBe('added');
        await expect.poll(() => runs.length, { timeout: 20_000 }).toBe(6);
        expect(await queue.add(visitorJob('a6', 'address a'))).toBe('added');
        await new Promise((resolve) => setTimeout(resolve, 400));
        release();
        await expect.poll(() => runs.length, { timeout: 20_000 }).toBe(9);
        // a6 (its turn no lower than a5's, added first) runs, then a5, then a7: never a7 ahead of a5.
        expect(runs.slice(6)).toEqual(['a6', 'a5', 'a7']);
      },
      release,
    );
  });

  it("counts a job whose data Redis's JSON cannot read (a lone surrogate) by when it was added, never failing", async () => {
    await withQueue('odd-data', {}, async (queue) => {
      const before = Date.now();
      const odd = { ...visitorJob('odd'), acceptedAt: 1000 };
      odd.customer = { ...odd.customer, accountId: 'acc-\ud800' } as typeof odd.customer;
      expect(await queue.add(odd)).toBe('added');
      const counts = await queue.counts();
      expect(counts.queued).toBe(1);
      expect(counts.oldestAcceptedAt).toBeGreaterThanOrEqual(before);
    });
  });

  it('leaves a job only reading its decision out of the checks waiting, on every instance', async () => {
    await withConnection((connection) =>
      expectReadingApart(
        () => createBullmqQueue({ connection, name: 'reading', concurrency: 3, onError: () => {} }),
        20_000,
      ),
    );
  });

  it('a check only reading, running or delayed: not counted, never hiding the oldest check; an id whose job is gone is dropped', async () => {
    const connection = new IoRedis(redis.url, { maxRetriesPerRequest: null });
    const probe = new IoRedis(redis.url);
    const name = 'reading-edges';
    const queue = createBullmqQueue({ connection, name, concurrency: 12, onError: () => {} });
    // The same queue, bounded at 2 checks (another instance's settings), for the adds below.
    const bounded = createBullmqQueue({ connection, name, maxQueued: 2, onError: () => {} });
    const { released, release } = gate();
    const checkJob = (key: string, acceptedAt: number) => ({ ...visitorJob(key), acceptedAt });
    try {
      // A check accepted first, on a minute's retry; ten reading jobs due before it; one reading now.
      expect(await queue.add(checkJob('x', 1000))).toBe('added');
      for (let i = 0; i < 10; i++) expect(await queue.add(checkJob(`r${i}`, 5000 + i))).toBe('added');
      expect(await queue.add(checkJob('now', 6000))).toBe('added');
      queue.process(async (run) => {
        if (run.key === 'x') return { retryInMs: 60_000 };
        if (run.key.startsWith('r')) return { retryInMs: 30_000, reading: 1 };
        // 'now' reads (running) until the end; the checks added later run until then too.
        if (run.key === 'now' && run.reading === undefined) return { retryInMs: 100, reading: 1 };
        await released;
        return { done: true };
      });
      await expect.poll(async () => (await queue.queue.getJobCounts('delayed')).delayed, { timeout: 10_000 }).toBe(11);
      await expect.poll(async () => (await queue.queue.getJobCounts('active')).active, { timeout: 10_000 }).toBe(1);
      expect(await queue.counts()).toMatchObject({ queued: 1, oldestAcceptedAt: 1000 });
      // The bound of 2 counts x only: one more check (running, or not), and it is full.
      expect(await bounded.add(checkJob('b', 7000))).toBe('added');
      expect(await bounded.add(checkJob('c', 8000))).toBe('full');
      // An id whose job is gone (an earlier version's end, which does not drop it): counted apart
      // until an instance looks again (beside its first count, then every 10 s), then dropped.
      await probe.zadd(`bull:${name}:bbc-reading`, 0, 'gone');
      expect((await queue.counts()).queued).toBe(1);
      await bounded.counts();
      await expect.poll(() => probe.zrange(`bull:${name}:bbc-reading`, 0, -1), { timeout: 5000 }).not.toContain('gone');
      expect((await queue.counts()).queued).toBe(2);
    } finally {
      release();
      await Promise.all([queue.close(), bounded.close()]);
      connection.disconnect();
      probe.disconnect();
    }
  });

  it("is full at the late check's lateAt, counting the running jobs too: what the fleet accepted since its read", async () => {
    await withConnection((connection) =>
      expectFullAtLateAt(
        () => createBullmqQueue({ connection, name: 'late-at', concurrency: 1, onError: () => {} }),
        20_000,
      ),
    );
  });

  it('a job run twice (its lock lapsed on a starved instance) is counted once and gives its turn back once', async () => {
    const name = 'stalled-twice';
    const probe = new IoRedis(redis.url);
    const connections = [0, 1].map(() => new IoRedis(redis.url, { maxRetriesPerRequest: null }));
    const errors: unknown[] = [];
    // One run at a time each: the slow instance, busy with the hanging run, cannot take the job again itself.
    const [slow, live] = connections.map((connection) =>
      createBullmqQueue({
        connection,
        name,
        concurrency: 1,
        lockDurationMs: 1000,
        stalledIntervalMs: 500,
        onError: (e) => errors.push(e),
      }),
    );
    const runs: string[] = [];
    const { released, release } = gate();
    try {
      expect(await slow!.add(visitorJob('key-twice'))).toBe('added');
      // The first run hangs, as on a starved instance, until the test lets it finish.
      slow!.process(async ({ key }) => {
        runs.push(`slow ${key}`);
        await released;
        return { done: true };
      });
      await expect.poll(() => runs, { timeout: 10_000 }).toEqual(['slow key-twice']);
      // Its lock lapses (what a starved event loop does): the live instance's stalled check takes the job again.
      await probe.del(`bull:${name}:${await jobIdOf('key-twice')}:lock`);
      live!.process(async ({ key }) => {
        runs.push(`live ${key}`);
        return key === 'key-twice' ? { done: true } : { retryInMs: 60_000 };
      });
      await expect.poll(() => runs, { timeout: 10_000 }).toContain('live key-twice');
      await expect.poll(async () => (await live!.counts()).drainedLastMinute, { timeout: 5000 }).toBe(1);
      // The same visitor's next checkout, held (delayed for a minute): one turn held.
      expect(await live!.add(visitorJob('key-held'))).toBe('added');
      await expect.poll(() => runs, { timeout: 10_000 }).toContain('live key-held');
      expect(await probe.hget(`bull:${name}:bbc-turns`, 'visitor-1')).toBe('1');
      // The first run ends after all: no second count, and the held checkout's turn stays.
      release();
      // Its end is counted (or not) before BullMQ refuses to finish a job that is gone: that refusal, told, comes after.
      await expect
        .poll(() => errors.some((error) => /moveToFinished/.test(String((error as Error).message))), { timeout: 5000 })
        .toBe(true);
      expect((await live!.counts()).drainedLastMinute).toBe(1);
      expect(await probe.hget(`bull:${name}:bbc-turns`, 'visitor-1')).toBe('1');
    } finally {
      release();
      await Promise.all([slow!.close(), live!.close()]);
      for (const connection of [...connections, probe]) connection.disconnect();
    }
  });

  it("a key's job added again as its run ended (a browser's retry) is counted once, and each add gives its turn back", async () => {
    const name = 'added-twice';
    const runs: string[] = [];
    await withQueue(name, {}, async (queue, probe) => {
      queue.process(async ({ key }) => {
        runs.push(key);
        return key === 'key-again' ? { done: true } : { retryInMs: 60_000 };
      });
      expect(await queue.add(visitorJob('key-again'))).toBe('added');
      await expect.poll(async () => (await queue.counts()).drainedLastMinute, { timeout: 5000 }).toBe(1);
      // Its job gone with its end, the key is added again: a second job, whose run finds the key checked.
      expect(await queue.add(visitorJob('key-again'))).toBe('added');
      await expect.poll(() => runs, { timeout: 5000 }).toEqual(['key-again', 'key-again']);
      // The same visitor's next checkout, held: only its turn is held, the two adds' turns given back.
      expect(await queue.add(visitorJob('key-held'))).toBe('added');
      await expect.poll(() => runs, { timeout: 5000 }).toContain('key-held');
      expect(await probe.hget(`bull:${name}:bbc-turns`, 'visitor-1')).toBe('1');
      expect((await queue.counts()).drainedLastMinute).toBe(1);
    });
  });

  it('a job given up, its telling not kept, comes back to any instance with why (givenUp), not to be checked', async () => {
    const name = 'given-up';
    const connections = [0, 1].map(() => new IoRedis(redis.url, { maxRetriesPerRequest: null }));
    const [first, second] = connections.map((connection) =>
      createBullmqQueue({ connection, name, concurrency: 1, onError: () => {} }),
    );
    const givenUp = { ending: 'failed', reason: 'request_rejected' } as const;
    const seen: Array<[string, unknown]> = [];
    try {
      expect(await first!.add(visitorJob('key-given-up'))).toBe('added');
      first!.process(async (job) => {
        seen.push(['first', job.givenUp]);
        return { retryInMs: 1000, givenUp };
      });
      await expect.poll(() => seen.length, { timeout: 10_000 }).toBeGreaterThan(0);
      // The instance that gave it up goes; the other runs it next, from what Redis holds.
      await first!.close();
      second!.process(async (job) => {
        seen.push(['second', job.givenUp]);
        return { done: true };
      });
      await expect.poll(() => seen.at(-1), { timeout: 10_000 }).toEqual(['second', givenUp]);
      // Only its first run had no givenUp (a busy machine's first instance may run it twice).
      expect(seen.slice(1).every(([, kept]) => JSON.stringify(kept) === JSON.stringify(givenUp))).toBe(true);
      expect(seen[0]).toEqual(['first', undefined]);
      await expect.poll(async () => (await second!.counts()).queued, { timeout: 5000 }).toBe(0);
    } finally {
      await Promise.all([first!.close(), second!.close()]);
      for (const connection of connections) connection.disconnect();
    }
  });

  it('a run that throws (Redis away mid-job) is told and taken again, not given up', async () => {
    const connection = new IoRedis(redis.url, { maxRetriesPerRequest: null });
    const errors: unknown[] = [];
    const queue = createBullmqQueue({ connection, name: 'throws', onError: (error) => errors.push(error) });
    const runs: string[] = [];
    try {
      const job = {
        key: 'key-throws',
        fingerprint: 'f',
        blackbox: BLACKBOX,
        customer: { customerInternalReference: 'order-throws' },
        acceptedAt: Date.now(),
      };
      expect(await queue.add(job)).toBe('added');
      queue.process(async ({ key }) => {
        runs.push(key);
        if (runs.length === 1) throw new Error('Connection is closed.');
        return { done: true };
      });
      await expect.poll(() => runs.length, { timeout: 10_000 }).toBe(2);
      await expect.poll(async () => (await queue.counts()).queued, { timeout: 5000 }).toBe(0);
      expect(errors).toEqual([expect.objectContaining({ message: 'Connection is closed.' })]);
    } finally {
      await queue.close();
      connection.disconnect();
    }
  });
});
