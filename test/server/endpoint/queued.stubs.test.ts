// The endpoint's default answer: 202 with a reference as soon as the queue holds the
// checkout, then the check in arrival order as the tenant's limit allows, on a stub client.
// Nothing accepted is lost, no key gets two transactions, and what waits too long is told.
import { describe, expect, it, vi } from 'vitest';
import {
  createDeviceRiskClient,
  DEFAULT_LIMITS,
  DeviceRiskTransaction,
} from '../../../src/server/api/device-risk-client.js';
import type { TokenSource } from '../../../src/server/api/token-source.js';
import { defaultMaxQueued } from '../../../src/server/endpoint/settings.js';
import { DeviceRiskError, type DeviceRiskErrorCode } from '../../../src/server/errors.js';
import {
  createDeviceRiskHandler,
  createMemoryQueue,
  createMemoryStore,
  type CheckJob,
  type DeviceRiskClient,
  type DeviceRiskHandler,
  type DeviceRiskHandlerOptions,
  NotCheckedError,
  type Store,
} from '../../../src/server/index.js';
import type { AddResult, JobRun, QueueCounts } from '../../../src/server/queue/queue.js';
import { recordKeyOf } from '../../../src/server/endpoint/idempotency.js';
import { isHeldAnswer, isMaybeHeldAnswer } from '../../../src/server/endpoint/queued.js';
import type { CaptureOutcome } from '../../../src/shared/types.js';
import { useTestMeter } from '../../support/otel.js';
import { blackboxOf } from '../../support/kit.js';
import { givenJobs, handQueue } from '../../support/hand-queue.js';
import { storeAwayAtRead } from '../../support/store-faults.js';
import { accountCreateLimited, plainSealing, stubTransaction } from '../../support/stub-client.js';

const SHOP = 'https://shop.example';
const BLACKBOX = '0400' + 'nVQ+/abc'.repeat(150) + '==';
const collect = useTestMeter();

/**
 * A client whose calls are recorded; `limited` account creates answer 429 first. Creates wait
 * for `gate`; `waiting` counts those that have come to it.
 */
function stubClient(
  options: {
    limited?: number;
    failCreates?: DeviceRiskError[];
    failStatus?: DeviceRiskError[];
    gate?: Promise<void>;
  } = {},
) {
  const calls: string[] = [];
  const gate = { waiting: 0 };
  let n = 0;
  let limited = options.limited ?? 0;
  const failures = [...(options.failCreates ?? [])];
  const statusFailures = [...(options.failStatus ?? [])];
  const transaction = () => stubTransaction(++n);
  const client = {
    retrievalOrigin: 'https://retrieval.example',
    clientId: 'client-1',
    accountTimeoutMs: 1000,
    createAccount: async (body: { customerInternalReference: string }) => {
      gate.waiting++;
      await options.gate;
      if (limited > 0) {
        limited--;
        calls.push(`429 ${body.customerInternalReference}`);
        throw accountCreateLimited();
      }
      const failure = failures.shift();
      if (failure) throw failure;
      calls.push(`create ${body.customerInternalReference}`);
      return transaction();
    },
    uploadBlackbox: async (tx: DeviceRiskTransaction) => void calls.push(`upload ${tx.workflowExecutionId}`),
    finalize: async (tx: DeviceRiskTransaction) => void calls.push(`finalize ${tx.workflowExecutionId}`),
    status: async () => {
      const failure = statusFailures.shift();
      if (failure) throw failure;
      return 'PROCESSED';
    },
    details: async (tx: DeviceRiskTransaction) => ({ workflowExecutionId: tx.workflowExecutionId }),
    ...plainSealing,
  } as unknown as DeviceRiskClient;
  return { client, calls, gate };
}

function setUp(client: DeviceRiskClient, extra: Partial<DeviceRiskHandlerOptions> = {}) {
  const errors: DeviceRiskError[] = [];
  const results: unknown[] = [];
  const queue = createMemoryQueue({ concurrency: 1 });
  const handler = createDeviceRiskHandler({
    client,
    allowedOrigins: [SHOP],
    workflowKey: 10020,
    queue,
    checkoutsPerAddress: false,
    checkoutsPerCustomer: false,
    resolveCustomer: (request) => ({ customerInternalReference: request.headers.get('x-order') ?? 'order-0' }),
    onError: (error) => errors.push(error as DeviceRiskError),
    onResult: (details, { reference, customerInternalReference }) =>
      void results.push({ id: details.workflowExecutionId, reference, customerInternalReference }),
    ...extra,
  });
  return { handler, queue, errors, results };
}

const post = (key: string, order = 'order-0', blackbox = blackboxOf(key), outcome?: CaptureOutcome) =>
  new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': key, 'x-order': order },
    body: JSON.stringify({ blackbox, outcome }),
  });
/** How a capture went, as the browser package posts it beside its blackbox. */
const OUTCOME: CaptureOutcome = { outcome: 'complete', scripts: [], durationMs: 812 };

/** A client whose finalize the service refuses (503) until `finalizeTakes()`: the blackbox uploaded, not yet finalized. */
function finalizeRefusedAtFirst() {
  let refused = true;
  const { client, calls } = stubClient();
  const finalize = client.finalize;
  client.finalize = async (tx) => {
    if (refused) throw new DeviceRiskError('upstream_error', 'finalize answered 503', { status: 503, retryAfter: 1 });
    return finalize(tx);
  };
  return { client, calls, finalizeTakes: () => void (refused = false) };
}

/**
 * The first post under key-0000000001 (order-a): counted accepted, answered 503 store_unavailable
 * with `retryAfter`, and held all the same (a door in front, the gateway's, keeps its order).
 */
async function expectHeld503(handler: DeviceRiskHandler, retryAfter: string): Promise<void> {
  let first!: Response;
  expect(await figuresOf(async () => (first = await handler(post('key-0000000001', 'order-a'))))).toEqual({
    events: { accepted: 1 },
    waits: 0,
  });
  expect([first.status, first.headers.get('retry-after')]).toEqual([503, retryAfter]);
  expect(isHeldAnswer(first)).toBe(true);
  expect(((await first.json()) as { error: { code: string } }).error.code).toBe('store_unavailable');
}

/**
 * The browser posts again under the key: the queue holds its job already and says so (202, not
 * counted again); the job runs, its decision told once, one transaction. Closes the handler.
 */
async function expectRetriedOnce(
  handler: DeviceRiskHandler,
  hand: ReturnType<typeof handQueue>,
  results: unknown[],
  calls: string[],
): Promise<void> {
  hand.state.answer = 'present';
  let retry!: Response;
  expect(await figuresOf(async () => (retry = await handler(post('key-0000000001', 'order-a'))))).toEqual({
    events: {},
    waits: 0,
  });
  expect([retry.status, await retry.json()]).toEqual([202, { accepted: true, reference: 'key-0000000001' }]);
  expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true });
  expect(results).toMatchObject([{ customerInternalReference: 'order-a', reference: 'key-0000000001' }]);
  expect(calls.filter((call) => call.startsWith('create'))).toHaveLength(1);
  await handler.close();
}

/** A gate that held work waits on (`released`) until `release` opens it. */
function gate() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  return { released, release };
}

/** A stub client whose executions stay ACQUIRED for good, with its status reads counted (`reads()`). */
function neverDecided() {
  const { client } = stubClient();
  let reads = 0;
  client.status = async () => {
    reads++;
    return 'ACQUIRED';
  };
  return { client, reads: () => reads };
}

/** A handler whose jobs run by hand, on a hand-moved clock, trusting a blackbox for a minute (maxQueuedMs). */
function trustingAMinute(client: DeviceRiskClient, store: Store = createMemoryStore()) {
  const clock = { now: 1_000_000 };
  const hand = handQueue();
  return { clock, hand, ...setUp(client, { queue: hand.queue, store, now: () => clock.now, maxQueuedMs: 60_000 }) };
}

describe('the endpoint answers at once and checks when the quota allows (the default)', () => {
  it('202 with the reference before any call to the service; then the checks, in arrival order', async () => {
    let open!: () => void;
    const { client, calls } = stubClient({ gate: new Promise<void>((resolve) => (open = resolve)) });
    const { handler, queue, results } = setUp(client);
    const answers = [];
    for (let i = 1; i <= 3; i++) answers.push(await handler(post(`key-000000000${i}`, `order-${i}`)));
    expect(answers.map((a) => a.status)).toEqual([202, 202, 202]);
    expect(await answers[0]!.json()).toEqual({ accepted: true, reference: 'key-0000000001' });
    expect(calls).toEqual([]);
    open();
    await queue.idle();
    expect(calls.filter((c) => c.startsWith('create'))).toEqual(['create order-1', 'create order-2', 'create order-3']);
    expect(results).toEqual([
      { id: 'wf-1', reference: 'key-0000000001', customerInternalReference: 'order-1' },
      { id: 'wf-2', reference: 'key-0000000002', customerInternalReference: 'order-2' },
      { id: 'wf-3', reference: 'key-0000000003', customerInternalReference: 'order-3' },
    ]);
    // A retry after the check: the transaction's reference, no second transaction.
    const again = await handler(post('key-0000000002', 'order-2'));
    expect([again.status, await again.json()]).toEqual([
      200,
      { accountId: 'acc-2', workflowExecutionId: 'wf-2', status: 'PROCESSED' },
    ]);
    await handler.close();
  });

  it("the tenant's limit (429): the queue waits its Retry-After and checks every one, once, in order", async () => {
    const { client, calls } = stubClient({ limited: 2 });
    const { handler, queue, errors } = setUp(client);
    for (let i = 1; i <= 3; i++) expect((await handler(post(`key-000000000${i}`, `order-${i}`))).status).toBe(202);
    await queue.idle();
    expect(calls.filter((c) => !c.startsWith('upload') && !c.startsWith('finalize'))).toEqual([
      '429 order-1',
      '429 order-1',
      'create order-1',
      'create order-2',
      'create order-3',
    ]);
    expect(calls.filter((c) => c.startsWith('upload'))).toEqual(['upload wf-1', 'upload wf-2', 'upload wf-3']);
    expect(errors.map((e) => e.code)).toEqual(['rate_limited', 'rate_limited']);
    const metrics = JSON.stringify(await collect());
    expect(metrics).toContain('blackbox_capture.queue.checks');
    expect(metrics).toContain('service_refused');
    await handler.close();
  });

  it('a retry of a request still waiting is the same 202; another request under its key is 422', async () => {
    const { client, calls } = stubClient();
    const queue = createMemoryQueue();
    const { handler } = setUp(client, { queue });
    // Not processed: the queue is the handler's, but closing the queue stops it before the first run.
    await queue.close();
    expect((await handler(post('key-0000000001'))).status).toBe(202);
    const retry = await handler(post('key-0000000001'));
    expect([retry.status, await retry.json()]).toEqual([202, { accepted: true, reference: 'key-0000000001' }]);
    const other = await handler(post('key-0000000001', 'order-0', BLACKBOX.replace('abc', 'abd')));
    expect([other.status, ((await other.json()) as { error: { code: string } }).error.code]).toEqual([
      422,
      'idempotency_key_reused',
    ]);
    expect((await queue.counts()).queued).toBe(1);
    expect(calls).toEqual([]);
  });

  it('a full queue: 503 queue_full with Retry-After, told to onError; nothing is dropped silently', async () => {
    const { client } = stubClient();
    const queue = createMemoryQueue({ maxQueued: 2 });
    const { handler, errors } = setUp(client, { queue });
    await queue.close();
    expect((await handler(post('key-0000000001'))).status).toBe(202);
    expect((await handler(post('key-0000000002'))).status).toBe(202);
    const refused = await handler(post('key-0000000003'));
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(isHeldAnswer(refused)).toBe(false);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('queue_full');
    expect(errors.map((e) => [e.code, e.retryAfter])).toEqual([['queue_full', 5]]);
  });

  it('the default queue holds what drains within the trust bound (limit × maxQueuedMs), then 503 queue_full at once', async () => {
    let open!: () => void;
    const { client } = stubClient({ gate: new Promise<void>((resolve) => (open = resolve)) });
    // 2 account requests a second for 5 s: a bound of 10 checkouts, however many the shop's address
    // sends; the accept refuses from the 10th, which would start after 95 % of the 5 s (the headroom).
    const limited = { ...client, limits: { ...DEFAULT_LIMITS, accountRequestsPerSecond: 2 } } as DeviceRiskClient;
    expect(defaultMaxQueued({ client: limited, maxQueuedMs: 5_000 })).toBe(10);
    const { handler, errors } = setUp(limited, { queue: undefined, maxQueuedMs: 5_000 });
    const statuses = [];
    for (let i = 1; i <= 11; i++) statuses.push((await handler(post(`key-bound-${i}`, `order-${i}`))).status);
    expect(statuses).toEqual([...Array<number>(9).fill(202), 503, 503]);
    expect(errors.map((e) => e.code)).toEqual(['queue_full', 'queue_full']);
    open();
    await handler.close();
  });

  it("a job carries its visitor: the caller's network (an IPv6 /64), or its customer when no address is known", async () => {
    const { client } = stubClient();
    const { queue: recording, jobs } = handQueue(givenJobs);
    const { handler } = setUp(client, { queue: recording });
    await handler(post('key-visitor-1', 'order-1'), { clientAddress: '2001:db8:66:1:aaaa::5' });
    await handler(post('key-visitor-2', 'order-2'), { clientAddress: '::ffff:198.51.100.7' });
    await handler(post('key-visitor-3', 'order-3'));
    expect(jobs.map((j) => j.visitor)).toEqual([
      'address 2001:db8:66:1::/64',
      'address 198.51.100.7',
      'customer order-3',
    ]);
  });

  it('signed-in shoppers first: a lane and an account for turns, guests shed first at the bound, told', async () => {
    const { client } = stubClient();
    const { queue: recording, jobs } = handQueue(givenJobs);
    // The request says who is signed in (as the gateway's order token does): x-account, or x-guest.
    const { handler, errors } = setUp(client, {
      queue: recording,
      // 10 a second for 1 s: a guest is late from the 9th held (95 % × 90 %), a signed-in shopper from the 10th.
      client: { ...client, limits: { ...DEFAULT_LIMITS, accountRequestsPerSecond: 10 } } as DeviceRiskClient,
      maxQueuedMs: 1000,
      checkoutsPerAddress: { burst: 2, perMinute: 1 },
      resolveCustomer: (request) => {
        const account = request.headers.get('x-account');
        return {
          customerInternalReference: request.headers.get('x-order')!,
          ...(account === null ? { signedIn: request.headers.get('x-guest') === null ? undefined : false } : {}),
          ...(account ? { userReference: account, signedIn: true } : {}),
          ...(account === '' ? { signedIn: true } : {}),
        };
      },
    });
    const as = (key: string, headers: Record<string, string>, from: string) => {
      const request = post(key, `order-${key}`);
      for (const [name, value] of Object.entries(headers)) request.headers.set(name, value);
      return handler(request, { clientAddress: from });
    };
    expect((await as('key-signed-1', { 'x-account': 'customer-42' }, '198.51.100.1')).status).toBe(202);
    expect((await as('key-guest-01', { 'x-guest': '1' }, '198.51.100.2')).status).toBe(202);
    expect((await as('key-plain-01', {}, '198.51.100.3')).status).toBe(202);
    expect(jobs.map((j) => [j.lane, j.visitor])).toEqual([
      ['signed-in', expect.stringMatching(/^account [0-9a-f]{32}$/)],
      ['guest', 'address 198.51.100.2'],
      [undefined, 'address 198.51.100.3'],
    ]);
    // The account is a visitor of its own for admission: from a new address, its 3rd is 429.
    expect((await as('key-signed-2', { 'x-account': 'customer-42' }, '198.51.100.4')).status).toBe(202);
    expect(jobs.at(-1)!.visitor).toBe(jobs[0]!.visitor);
    const third = await as('key-signed-3', { 'x-account': 'customer-42' }, '198.51.100.5');
    expect([third.status, (await third.json()).error.code]).toEqual([429, 'too_many_checkouts']);
    // Signed in without an account: the shop's mistake, told, 500.
    const unnamed = await as('key-signed-x', { 'x-account': '' }, '198.51.100.6');
    expect(unnamed.status).toBe(500);
    expect(errors.at(-1)!.code).toBe('invalid_configuration');
    // Filled to 8 held: a guest is refused queue_full, told; a signed-in shopper still held, up to 9.
    for (let i = jobs.length; i < 8; i++) await as(`key-fill-0${i}`, {}, `198.51.100.1${i}`);
    expect(jobs).toHaveLength(8);
    const guest = await as('key-guest-02', { 'x-guest': '1' }, '198.51.100.30');
    expect([guest.status, (await guest.json()).error.code]).toEqual([503, 'queue_full']);
    expect(errors.at(-1)!.code).toBe('queue_full');
    expect((await as('key-signed-4', { 'x-account': 'customer-7' }, '198.51.100.31')).status).toBe(202);
    const late = await as('key-signed-5', { 'x-account': 'customer-8' }, '198.51.100.32');
    expect(late.status).toBe(503);
  });

  it("the derived bound: 900 at the documented limit and trust bound, the client's limits, or maxQueuedChecks", () => {
    const { client } = stubClient();
    expect(defaultMaxQueued({ client })).toBe(900);
    expect(defaultMaxQueued({ client, maxQueuedMs: 60_000 })).toBe(60);
    const real = createDeviceRiskClient({
      tokenSource: { clientId: 'c' } as unknown as TokenSource,
      baseUrl: 'https://account.example',
      userAgent: 'shop/1',
      limits: { accountRequestsPerSecond: 3 },
    });
    expect(defaultMaxQueued({ client: real })).toBe(2700);
    expect(defaultMaxQueued({ client: real, maxQueuedChecks: 50_000 })).toBe(50_000);
    for (const maxQueuedChecks of [0, -1, 2.5, Infinity])
      expect(() => setUp(client, { queue: undefined, maxQueuedChecks })).toThrow(
        expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining('maxQueuedChecks') }),
      );
  });

  it('a blackbox that waited past maxQueuedMs is not uploaded: blackbox_stale, told for each', async () => {
    let time = 1_000_000;
    let open!: () => void;
    const { client, calls } = stubClient({ gate: new Promise<void>((resolve) => (open = resolve)) });
    const queue = createMemoryQueue({ concurrency: 1 });
    // A lease that outlives the jump of the clock: the first check is not interrupted.
    const { handler, errors } = setUp(client, {
      queue,
      now: () => time,
      maxQueuedMs: 60_000,
      idempotencyLeaseMs: 120_000,
    });
    for (let i = 1; i <= 3; i++) await handler(post(`key-000000000${i}`, `order-${i}`));
    // The first started in time and is checked; the two behind it are past the bound when their turn comes.
    time += 60_001;
    open();
    await queue.idle();
    expect(calls).toEqual(['create order-1', 'upload wf-1', 'finalize wf-1']);
    // Each told twice: why (blackbox_stale), then as never checked, with its order (NotCheckedError).
    expect(errors.map((e) => e.code).filter((code) => code !== 'backlog_behind')).toEqual([
      'blackbox_stale',
      'not_checked',
      'blackbox_stale',
      'not_checked',
    ]);
    expect(errors.filter((e) => e.code === 'not_checked')).toMatchObject([
      { reason: 'blackbox_stale', customerInternalReference: 'order-2' },
      { reason: 'blackbox_stale', customerInternalReference: 'order-3' },
    ]);
    expect(errors[0]!.message).not.toContain('key-0000000002');
    await handler.close();
  });

  it('in a backlog that cannot drain within the trust bound, onError hears backlog_behind once', async () => {
    let time = 1_000_000;
    let open!: () => void;
    const { client } = stubClient({ gate: new Promise<void>((resolve) => (open = resolve)) });
    const errors: DeviceRiskError[] = [];
    const queue = createMemoryQueue({ concurrency: 1 });
    const handler = createDeviceRiskHandler({
      client: {
        ...client,
        // Each create takes 5 s of the handler's clock: 0.2 a second against 40 waiting.
        createAccount: async (body) => {
          time += 5_000;
          return client.createAccount(body);
        },
      } as DeviceRiskClient,
      allowedOrigins: [SHOP],
      workflowKey: 10020,
      queue,
      checkoutsPerAddress: false,
      checkoutsPerCustomer: false,
      now: () => time,
      maxQueuedMs: 120_000,
      resolveCustomer: () => ({ customerInternalReference: 'order' }),
      onError: (error) => errors.push(error as DeviceRiskError),
    });
    for (let i = 10; i < 50; i++) await handler(post(`key-00000000${i}`));
    open();
    await new Promise((r) => setTimeout(r, 50));
    await handler.close();
    const behind = errors.filter((e) => e.code === 'backlog_behind');
    expect(behind).toHaveLength(1);
    expect(behind[0]!.message).toMatch(/higher contracted limit/);
    // The figures in seconds: a backlog past the 120 s bound is said to wait more than 120 s.
    const waits = /the newest would wait (\d+) s, past the trust bound of 120 s\./.exec(behind[0]!.message)?.[1];
    expect(Number(waits)).toBeGreaterThan(120);
    expect(await handler.backlog()).toMatchObject({ queued: 0, oldestAgeMs: 0 });
  });

  it('a permanent refusal is told and leaves the queue; trouble that passes is tried again until checked', async () => {
    const { client, calls } = stubClient({
      failCreates: [
        new DeviceRiskError('request_rejected', 'account create answered 400', {
          status: 400,
          operation: 'account create',
        }),
        new DeviceRiskError('upstream_error', 'account create answered 502', {
          status: 502,
          retryAfter: 0,
          operation: 'account create',
        }),
      ],
    });
    const { handler, queue, errors } = setUp(client);
    await handler(post('key-0000000001', 'order-1'));
    await handler(post('key-0000000002', 'order-2'));
    await queue.idle();
    expect(errors.map((e) => e.code)).toEqual(['request_rejected', 'not_checked', 'upstream_error']);
    // The refused checkout is told as never checked, with its order and why: the gateway's device_risk.failed.
    expect(errors[1]).toBeInstanceOf(NotCheckedError);
    expect(errors[1]).toMatchObject({ reason: 'request_rejected', customerInternalReference: 'order-1' });
    expect(JSON.parse(JSON.stringify(errors[1]))).toMatchObject({ reason: 'request_rejected' });
    expect(calls.filter((c) => c.startsWith('create'))).toEqual(['create order-2']);
    await handler.close();
  });

  it('a checkout given up leaves the queue once its telling is kept: one that onError could not keep stays, told again and not checked again', async () => {
    // One create refused: a second would be made, and the checkout checked after all.
    const { client, calls } = stubClient({ failCreates: [failing('request_rejected', { status: 400 })] });
    const hand = handQueue();
    const told: string[] = [];
    let keep: { resolve: () => void; reject: (error: Error) => void } | undefined;
    const { handler } = setUp(client, {
      queue: hand.queue,
      // As the gateway's: the promise of the shop's failure webhook kept in its outbox.
      onError: (error) => {
        told.push((error as DeviceRiskError).code ?? (error as Error).message);
        if (error instanceof NotCheckedError)
          return new Promise<void>((resolve, reject) => (keep = { resolve, reject }));
      },
    });
    expect((await handler(post('key-0000000001', 'order-1'))).status).toBe(202);
    const job = hand.jobs[0]!;
    // The job does not end before the telling is kept. waitFor looks again from a timer, so
    // an end that did not wait for the telling (microtasks only) has come by then.
    let ended = false;
    const first = hand.run(job).finally(() => (ended = true));
    await vi.waitFor(() => expect(keep).toBeDefined(), { timeout: 10_000 });
    expect(ended).toBe(false);
    keep!.reject(new Error('outbox store away'));
    // Not kept: the job stays, with why it was given up, to be told again.
    const givenUp = { ending: 'failed', reason: 'request_rejected' };
    expect(await first).toEqual({ retryInMs: 1000 });
    expect(hand.jobs[0]).toMatchObject({ givenUp });
    expect(told).toEqual(['request_rejected', 'not_checked', 'outbox store away']);
    keep = undefined;
    // Its next run (as the queue keeps it) tells it again, and checks nothing: no second create.
    // Not kept again: the job already carries why, so nothing more is asked of the queue.
    const again = hand.run({ ...job, givenUp } as CheckJob);
    await vi.waitFor(() => expect(keep).toBeDefined(), { timeout: 10_000 });
    keep!.reject(new Error('outbox store away'));
    expect(await again).toEqual({ retryInMs: 2000 });
    keep = undefined;
    const second = hand.run({ ...job, givenUp } as CheckJob);
    await vi.waitFor(() => expect(keep).toBeDefined(), { timeout: 10_000 });
    keep!.resolve();
    expect(await second).toEqual({ done: true });
    expect(told).toEqual([
      'request_rejected',
      'not_checked',
      'outbox store away',
      'not_checked',
      'outbox store away',
      'not_checked',
    ]);
    expect(calls).toEqual([]);
    await handler.close();
  });

  it('a checkout given up is kept with its job before it is told: a process gone after telling leaves a job that tells again, never checks', async () => {
    // One create refused for good; a second would be made, and the order checked after its failure was told.
    const { client, calls } = stubClient({ failCreates: [failing('request_rejected', { status: 400 })] });
    const hand = handQueue();
    const told: string[] = [];
    const { handler } = setUp(client, {
      queue: hand.queue,
      onError: (error) => void told.push((error as DeviceRiskError).code),
    });
    expect((await handler(post('key-0000000001', 'order-1'))).status).toBe(202);
    const job = hand.jobs[0]!;
    // First the queue keeps why (its next run comes at once); nothing is told for the shop yet.
    const givenUp = { ending: 'failed', reason: 'request_rejected' };
    expect(await hand.runOnce(job)).toEqual({ retryInMs: 0, givenUp });
    expect(told).toEqual(['request_rejected']);
    // Told, and the process dies before the queue hears `done`: the job runs again, as kept.
    expect(await hand.runOnce({ ...job, givenUp } as CheckJob)).toEqual({ done: true });
    expect(await hand.runOnce({ ...job, givenUp } as CheckJob)).toEqual({ done: true });
    expect(told).toEqual(['request_rejected', 'not_checked', 'not_checked']);
    // No create after the refused one: the order is never checked after its failure was told.
    expect(calls.filter((call) => call.startsWith('create'))).toHaveLength(0);
    await handler.close();
  });

  it('a checkout given up stale whose telling was not kept: told again with its last failure, neither checked nor given up again', async () => {
    const hand = handQueue();
    const codes: string[] = [];
    const told: NotCheckedError[] = [];
    const { client, calls } = stubClient({ failCreates: [failing('upstream_error', { status: 502 })] });
    const { handler } = setUp(client, {
      queue: hand.queue,
      onError: (error) => {
        codes.push((error as DeviceRiskError).code);
        if (!(error instanceof NotCheckedError)) return;
        told.push(error);
        if (told.length === 1) return Promise.reject(new DeviceRiskError('store_unavailable', 'outbox away'));
      },
    });
    expect((await handler(post('key-0000000002', 'order-2'))).status).toBe(202);
    const job = hand.jobs[0]!;
    expect(await hand.run(job)).toMatchObject({ retryInMs: 1000 });
    // Then held past the trust bound (the handler's default, 15 minutes), by its acceptance time.
    const old = { ...job, acceptedAt: job.acceptedAt - 16 * 60_000 };
    const givenUp = { ending: 'stale', reason: 'blackbox_stale', lastError: 'upstream_error' };
    expect(await hand.run(old)).toEqual({ retryInMs: 2000 });
    expect(await hand.run({ ...old, givenUp } as CheckJob)).toEqual({ done: true, stale: true });
    expect(told.map((e) => [e.reason, e.lastError])).toEqual([
      ['blackbox_stale', 'upstream_error'],
      ['blackbox_stale', 'upstream_error'],
    ]);
    // One warning that it was given up, one telling refused, one kept; no create after the first.
    expect(codes).toEqual(['upstream_error', 'blackbox_stale', 'not_checked', 'store_unavailable', 'not_checked']);
    expect(calls).toEqual([]);
    await handler.close();
  });

  it("a job past the trust bound whose key's record cannot be read: told, and tried again, not given up or checked", async () => {
    const hand = handQueue();
    const memory = createMemoryStore();
    const store = { ...memory, get: memory.get.bind(memory) };
    const codes: string[] = [];
    const { client, calls } = stubClient();
    const { handler } = setUp(client, {
      queue: hand.queue,
      store,
      onError: (error) => void codes.push((error as DeviceRiskError).code ?? (error as Error).message),
    });
    expect((await handler(post('key-0000000003', 'order-3'))).status).toBe(202);
    const old = { ...hand.jobs[0]!, acceptedAt: hand.jobs[0]!.acceptedAt - 16 * 60_000 };
    // The store away for the job's first read: whether its blackbox was uploaded cannot be known.
    let away = 1;
    store.get = async (key) => {
      if (away-- > 0) throw new DeviceRiskError('store_unavailable', 'store away for the test');
      return memory.get(key);
    };
    expect(await hand.run(old)).toEqual({ retryInMs: 1000 });
    expect(codes).toEqual(['store_unavailable']);
    expect(calls).toEqual([]);
    await handler.close();
  });

  it('a status read that fails after finalize: the check comes back, finalizes again, and tells the decision once', async () => {
    const away = new DeviceRiskError('upstream_error', 'status answered 503', {
      status: 503,
      retryAfter: 0,
      operation: 'status',
    });
    const { client, calls } = stubClient({ failStatus: [away] });
    const { handler, queue, errors, results } = setUp(client);
    expect((await handler(post('key-0000000001', 'order-1'))).status).toBe(202);
    await queue.idle();
    expect(results).toEqual([{ id: 'wf-1', reference: 'key-0000000001', customerInternalReference: 'order-1' }]);
    // One transaction, one upload; the second finalize is the one a real service answers 409 (finalize.ts).
    expect(calls).toEqual(['create order-1', 'upload wf-1', 'finalize wf-1', 'finalize wf-1']);
    expect(errors).toEqual([away]);
    await handler.close();
  });

  it("a status read that fails until the transaction's token lapsed: no second execution, the first's decision told once", async () => {
    const away = new DeviceRiskError('upstream_error', 'status answered 503', { status: 503, operation: 'status' });
    const { client, calls } = stubClient({ failStatus: [away] });
    const clock = { now: Date.now() };
    const hand = handQueue();
    const { handler, results } = setUp(client, { queue: hand.queue, now: () => clock.now });
    expect((await handler(post('key-0000000001', 'order-1'))).status).toBe(202);
    expect(await hand.run(hand.jobs[0]!)).toMatchObject({ retryInMs: expect.any(Number) });
    expect(calls).toEqual(['create order-1', 'upload wf-1', 'finalize wf-1']);
    // The token (10 minutes) lapses before the next try: finalize cannot be sent again, so the
    // status says what became of the execution. Not yet final: the job comes back, nothing told.
    clock.now += 600_000;
    const status = client.status;
    client.status = async () => 'ACQUIRED';
    expect(await hand.run(hand.jobs[0]!)).toMatchObject({ retryInMs: expect.any(Number) });
    expect(results).toEqual([]);
    // PROCESSED: its decision, told once.
    client.status = status;
    expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true });
    expect(calls).toEqual(['create order-1', 'upload wf-1', 'finalize wf-1']);
    expect(results).toEqual([{ id: 'wf-1', reference: 'key-0000000001', customerInternalReference: 'order-1' }]);
    await handler.close();
  });

  it("the customer's own transaction: held sealed in the job, opened for the check, no account create", async () => {
    const { client, calls } = stubClient();
    const own = new DeviceRiskTransaction({
      accountId: 'acc-own',
      workflowExecutionId: 'wf-own',
      credentialId: 'cred',
      uploadUrl: 'https://api.example/upload',
      finalizeUrl: 'https://api.example/finalize',
      tokenExpiresAt: Date.now() + 600_000,
      token: 'tx-token-own',
    });
    const held: string[] = [];
    const queue = createMemoryQueue();
    const { handler, results } = setUp(client, {
      queue: {
        ...queue,
        add: (job) => {
          held.push(JSON.stringify(job));
          return queue.add(job);
        },
      },
      resolveCustomer: () => ({ customerInternalReference: 'order-own', transaction: own }),
    });
    expect((await handler(post('key-0000000001'))).status).toBe(202);
    await queue.idle();
    expect(calls).toEqual(['upload wf-own', 'finalize wf-own']);
    expect(results).toEqual([{ id: 'wf-own', reference: 'key-0000000001', customerInternalReference: 'order-own' }]);
    // The job is plain JSON: the transaction in it is the sealed string, not the object.
    expect(typeof (JSON.parse(held[0]!) as { customer: { transaction: unknown } }).customer.transaction).toBe('string');
    await handler.close();
  });

  it("a store of its own without a queue is refused at start: accepted checkouts would die with the instance's memory", () => {
    const { client } = stubClient();
    // A store the kit did not make in this process's memory (a shared Redis, the shop's own): no default queue.
    const shared = { ...createMemoryStore() };
    const make = (extra: Partial<DeviceRiskHandlerOptions>) => () => setUp(client, { queue: undefined, ...extra });
    let refused: unknown;
    try {
      make({ store: shared })();
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(DeviceRiskError);
    expect((refused as DeviceRiskError).code).toBe('invalid_configuration');
    expect((refused as DeviceRiskError).message).toMatch(/createBullmqQueue.*answer: 'checked'.*createMemoryQueue/);
    expect(make({ store: shared, answer: 'accepted' })).toThrow(/no queue/);
    // The fixes it names, and a memory store (one instance's anyway), are taken.
    expect(make({ store: shared, queue: createMemoryQueue() })).not.toThrow();
    expect(make({ store: shared, answer: 'checked' })).not.toThrow();
    expect(make({ store: createMemoryStore() })).not.toThrow();
    expect(make({})).not.toThrow();
  });

  it('close(): new checkouts 503 shutting_down; the running check finishes; each one held is told not_checked with its order', async () => {
    let open!: () => void;
    const { client, calls, gate } = stubClient({ gate: new Promise<void>((resolve) => (open = resolve)) });
    const { handler, queue, errors, results } = setUp(client);
    for (let i = 1; i <= 3; i++) expect((await handler(post(`key-000000000${i}`, `order-${i}`))).status).toBe(202);
    // The first check has started (the queue runs one at a time).
    await vi.waitFor(() => expect(gate.waiting).toBe(1), { timeout: 10_000 });
    const closed = handler.close();
    const refused = await handler(post('key-0000000004', 'order-4'));
    expect([refused.status, refused.headers.get('retry-after')]).toEqual([503, '1']);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('shutting_down');
    // The two held count as failed; the one that ran, as checked.
    const counted = await figuresOf(async () => {
      open();
      await closed;
    });
    expect(counted.events).toEqual({ checked: 1, failed: 2 });
    // The check that had started ran to its decision; the two never started are told, one error each.
    expect(calls.filter((c) => c.startsWith('create'))).toEqual(['create order-1']);
    expect(results).toEqual([{ id: 'wf-1', reference: 'key-0000000001', customerInternalReference: 'order-1' }]);
    const notChecked = errors.filter((e) => e.code === 'not_checked');
    expect(notChecked.every((e) => e instanceof NotCheckedError)).toBe(true);
    expect(
      (notChecked as NotCheckedError[]).map((e) => [e.reference, e.customerInternalReference, e.operation]),
    ).toEqual([
      ['key-0000000002', 'order-2', 'queue'],
      ['key-0000000003', 'order-3', 'queue'],
    ]);
    expect(notChecked[0]!.message).toContain('key-0000\u2026');
    expect(JSON.parse(JSON.stringify(notChecked[0]))).toMatchObject({
      code: 'not_checked',
      customerInternalReference: 'order-2',
    });
    expect(errors.length).toBe(2);
    expect((await queue.counts()).queued).toBe(0);
  });

  it('close(): a telling of a checkout held that onError could not keep is told to onError, never unhandled', async () => {
    let open!: () => void;
    const { client, gate } = stubClient({ gate: new Promise<void>((resolve) => (open = resolve)) });
    const told: string[] = [];
    const { handler } = setUp(client, {
      onError: (error) => {
        told.push((error as Error).message.slice(0, 20));
        if (error instanceof NotCheckedError) return Promise.reject(new Error('outbox store away'));
      },
    });
    for (let i = 1; i <= 2; i++) expect((await handler(post(`key-000000000${i}`, `order-${i}`))).status).toBe(202);
    await vi.waitFor(() => expect(gate.waiting).toBe(1), { timeout: 10_000 });
    const closed = handler.close();
    open();
    await closed;
    await vi.waitFor(() => expect(told.filter((message) => message === 'outbox store away')).toHaveLength(1));
  });

  it('close(): a checkout given up whose telling was not kept is told why it was given up, not shutting_down', async () => {
    const { client } = stubClient({ failCreates: [failing('request_rejected', { status: 400 })] });
    const told: NotCheckedError[] = [];
    const { handler } = setUp(client, {
      onError: (error) => {
        if (!(error instanceof NotCheckedError)) return;
        told.push(error);
        if (told.length === 1) return Promise.reject(new Error('outbox store away'));
      },
    });
    expect((await handler(post('key-0000000001', 'order-1'))).status).toBe(202);
    // Its telling refused, the job waits a second in the queue to tell it again; the handler closes meanwhile.
    await vi.waitFor(() => expect(told).toHaveLength(1), { timeout: 10_000 });
    const counted = await figuresOf(() => handler.close());
    expect(told.map((error) => error.reason)).toEqual(['request_rejected', 'request_rejected']);
    expect(counted.events.failed).toBe(1);
  });

  it('close() with the check within the request: new checkouts 503 shutting_down too', async () => {
    const { client, calls } = stubClient();
    const { handler } = setUp(client, { queue: undefined, answer: 'checked' });
    await handler.close();
    const refused = await handler(post('key-0000000001'));
    expect([refused.status, refused.headers.get('retry-after')]).toEqual([503, '1']);
    expect(calls).toEqual([]);
  });

  it('in Cloudflare Workers the default is the check within the request: its isolates keep no work', async () => {
    const { client } = stubClient();
    const agent = Object.getOwnPropertyDescriptor(globalThis, 'navigator');
    Object.defineProperty(globalThis, 'navigator', { value: { userAgent: 'Cloudflare-Workers' }, configurable: true });
    try {
      const { handler } = setUp(client, { queue: undefined });
      const answer = await handler(post('key-0000000001'));
      expect([answer.status, await answer.json()]).toEqual([
        200,
        { accountId: 'acc-1', workflowExecutionId: 'wf-1', status: 'PROCESSED' },
      ]);
    } finally {
      if (agent) Object.defineProperty(globalThis, 'navigator', agent);
    }
  });
});

const failing = (code: DeviceRiskErrorCode, details: { status?: number; retryAfter?: number }) =>
  new DeviceRiskError(code, `account create failed (${code})`, { ...details, operation: 'account create' });

describe('each try of a queued check: when it comes back, and what a full queue answers', () => {
  it('trouble that passes: 1 s doubling to 30 s per key, or the Retry-After asked (at most 30 s)', async () => {
    const failures = [
      ...Array.from({ length: 7 }, () => failing('upstream_error', { status: 502 })),
      failing('upstream_error', { status: 503, retryAfter: 3 }),
      failing('upstream_error', { status: 503, retryAfter: 100 }),
      failing('network_error', {}),
    ];
    const { client } = stubClient({ failCreates: failures });
    const hand = handQueue();
    const { handler, errors } = setUp(client, { queue: hand.queue });
    expect((await handler(post('key-0000000001', 'order-1'))).status).toBe(202);
    expect((await handler(post('key-0000000002', 'order-2'))).status).toBe(202);
    const [first, second] = hand.jobs as [CheckJob, CheckJob];
    const delays = [];
    for (let i = 0; i < 7; i++) delays.push(await hand.run(first));
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000].map((retryInMs) => ({ retryInMs })));
    // Another key keeps its own count; a Retry-After asked is kept, up to 30 s.
    expect(await hand.run(second)).toEqual({ retryInMs: 3000 });
    expect(await hand.run(second)).toEqual({ retryInMs: 30_000 });
    // A network failure asks no time: the key's own backoff (its third try).
    expect(await hand.run(second)).toEqual({ retryInMs: 4000 });
    expect(await hand.run(first)).toEqual({ done: true });
    // Each failed try told to onError (the create with no answer also as a possible orphan).
    expect(errors.map((e) => e.code).slice(-3)).toEqual(['upstream_error', 'orphaned_transaction', 'network_error']);
    expect(errors.filter((e) => e.code === 'upstream_error')).toHaveLength(9);
    await handler.close();
  });

  it('a 429 on a status read is the retrieval quota: this job waits its Retry-After, the queue goes on', async () => {
    const refused = new DeviceRiskError('rate_limited', 'status answered 429', {
      status: 429,
      retryAfter: 3,
      operation: 'status',
    });
    const { client, calls } = stubClient({ failStatus: [refused] });
    const hand = handQueue();
    const { handler, results, errors } = setUp(client, { queue: hand.queue });
    await handler(post('key-0000000001', 'order-1'));
    let run!: JobRun;
    expect(await figuresOf(async () => (run = await hand.run(hand.jobs[0]!)))).toEqual({
      events: { service_refused: 1, retried: 1 },
      waits: 1,
    });
    // No pauseQueue: the account requests of the other jobs are not held up by it.
    expect(run).toEqual({ retryInMs: 3000 });
    expect(errors).toEqual([refused]);
    expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true });
    expect(calls.filter((call) => call.startsWith('create'))).toHaveLength(1);
    expect(results).toHaveLength(1);
    await handler.close();
  });

  it("the tenant's limit: a 429 (by code or by status) pauses the queue for its Retry-After, at least 1 s", async () => {
    const { client } = stubClient({
      failCreates: [
        failing('rate_limited', { status: 429, retryAfter: 4 }),
        failing('rate_limited', { retryAfter: 0 }),
        failing('upstream_error', { status: 429 }),
        failing('upstream_error', { status: 500, retryAfter: 2 }),
      ],
    });
    const hand = handQueue();
    const { handler } = setUp(client, { queue: hand.queue });
    await handler(post('key-0000000001'));
    const job = hand.jobs[0]!;
    expect(await hand.run(job)).toEqual({ retryInMs: 4000, pauseQueue: true });
    expect(await hand.run(job)).toEqual({ retryInMs: 1000, pauseQueue: true });
    expect(await hand.run(job)).toEqual({ retryInMs: 1000, pauseQueue: true });
    // A 500 is not the limit, and a Retry-After from a 500 is not a time asked: the job's own backoff.
    expect(await hand.run(job)).toEqual({ retryInMs: 1000 });
    expect(await hand.run(job)).toEqual({ done: true });
    await handler.close();
  });

  it("a key another attempt holds: the try comes back after that attempt's Retry-After", async () => {
    let open!: () => void;
    const { client } = stubClient({ gate: new Promise<void>((resolve) => (open = resolve)) });
    const hand = handQueue();
    const { handler } = setUp(client, { queue: hand.queue, idempotencyWaitMs: 20 });
    await handler(post('key-0000000001'));
    const job = hand.jobs[0]!;
    const holder = hand.run(job);
    await new Promise((r) => setTimeout(r, 10));
    // The holder's lease stands: after the wait (idempotencyWaitMs), 409 with Retry-After 1.
    expect(await hand.run(job)).toEqual({ retryInMs: 1000 });
    open();
    expect(await holder).toEqual({ done: true });
    await handler.close();
  });

  it('a blackbox is trusted for maxQueuedMs exactly: one ms past it, the job ends, told, nothing uploaded', async () => {
    const { client, calls } = stubClient();
    const store = createMemoryStore();
    const { clock, hand, handler, errors } = trustingAMinute(client, store);
    await handler(post('key-0000000001', 'order-1'));
    await handler(post('key-0000000002', 'order-2'));
    clock.now += 60_000;
    expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true });
    expect(calls).toEqual(['create order-1', 'upload wf-1', 'finalize wf-1']);
    clock.now += 1;
    expect(await hand.run(hand.jobs[1]!)).toEqual({ done: true, stale: true });
    expect(calls).toHaveLength(3);
    expect(errors.map((e) => [e.code, e.message])).toEqual([
      [
        'blackbox_stale',
        expect.stringMatching(/accepted 60 s ago .* trust bound of 60 s and was not uploaded \(key key-0000\u2026\)$/),
      ],
      ['not_checked', expect.stringMatching(/\(key key-0000\u2026\) will never be checked \(blackbox_stale\)/)],
    ]);
    // Its key has a final record: a re-post is refused for good (410), never queued or checked again,
    const again = await handler(post('key-0000000002', 'order-2'));
    expect([again.status, ((await again.json()) as { error: { code: string } }).error.code]).toEqual([
      410,
      'blackbox_stale',
    ]);
    expect(hand.jobs).toHaveLength(2);
    // also by a check within the request on the same store, and the job run again leaves it so.
    expect(await hand.run(hand.jobs[1]!)).toEqual({ done: true, stale: true });
    const inRequest = setUp(client, { answer: 'checked', store, now: () => clock.now });
    expect((await inRequest.handler(post('key-0000000002', 'order-2'))).status).toBe(410);
    // The first key's job run again past the bound (a stalled BullMQ job, a finish that did not
    // land): its key was checked, so it is answered from its record, never told stale beside its
    // decision, and its record (its result) stays.
    const told = errors.length;
    expect(await figuresOf(() => hand.run(hand.jobs[0]!))).toEqual({ events: { replayed: 1 }, waits: 1 });
    expect(errors).toHaveLength(told);
    expect((await handler(post('key-0000000001', 'order-1'))).status).toBe(200);
    expect(calls).toHaveLength(3);
    await handler.close();
  });

  it('past the trust bound, a blackbox already uploaded is finalized and its decision told, not given up', async () => {
    const { client, calls, finalizeTakes } = finalizeRefusedAtFirst();
    const { clock, hand, handler, errors, results } = trustingAMinute(client);
    await handler(post('key-0000000001', 'order-1'));
    expect(await hand.run(hand.jobs[0]!)).toMatchObject({ retryInMs: 1000 });
    expect(calls).toEqual(['create order-1', 'upload wf-1']);
    clock.now += 60_001;
    finalizeTakes();
    expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true });
    expect(calls).toEqual(['create order-1', 'upload wf-1', 'finalize wf-1']);
    expect(results).toEqual([{ id: 'wf-1', reference: 'key-0000000001', customerInternalReference: 'order-1' }]);
    expect(errors.map((e) => e.code)).toEqual(['upstream_error']);
    await handler.close();
  });

  it('past the trust bound, a blackbox uploaded by a run elsewhere between the read and the stale mark: checked, never told stale', async () => {
    const { client, calls, finalizeTakes } = finalizeRefusedAtFirst();
    const memory = createMemoryStore();
    let racing = false;
    const store = {
      ...memory,
      // The trust bound's read comes before the other run's upload landed: it sees none.
      get: async (key: string) => {
        const text = await memory.get(key);
        if (!racing || text === undefined) return text;
        racing = false;
        const { uploaded: _uploaded, ...before } = JSON.parse(text) as Record<string, unknown>;
        return JSON.stringify(before);
      },
    };
    const { clock, hand, handler, errors, results } = trustingAMinute(client, store);
    await handler(post('key-0000000001', 'order-1'));
    expect(await hand.run(hand.jobs[0]!)).toMatchObject({ retryInMs: 1000 });
    expect(calls).toEqual(['create order-1', 'upload wf-1']);
    clock.now += 60_001;
    finalizeTakes();
    racing = true;
    expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true });
    expect(calls).toEqual(['create order-1', 'upload wf-1', 'finalize wf-1']);
    expect(results).toEqual([{ id: 'wf-1', reference: 'key-0000000001', customerInternalReference: 'order-1' }]);
    expect(errors.map((e) => e.code)).toEqual(['upstream_error']);
    await handler.close();
  });

  it('past the trust bound, a store that does not answer: the job comes back, nothing is given up', async () => {
    const { client, calls } = stubClient();
    const memory = createMemoryStore();
    let away = false;
    const store = {
      ...memory,
      get: async (key: string) => {
        if (away) throw new DeviceRiskError('store_unavailable', 'store away', { retryAfter: 1 });
        return memory.get(key);
      },
    };
    const { clock, hand, handler, errors } = trustingAMinute(client, store);
    await handler(post('key-0000000001', 'order-1'));
    clock.now += 60_001;
    away = true;
    expect(await hand.run(hand.jobs[0]!)).toMatchObject({ retryInMs: 1000 });
    expect(errors.map((e) => e.code)).toEqual(['store_unavailable']);
    away = false;
    expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true, stale: true });
    expect(errors.map((e) => e.code)).toEqual(['store_unavailable', 'blackbox_stale', 'not_checked']);
    // Given up with the last try's failure named: what kept it from being checked in clock.now.
    expect(errors[2]).toMatchObject({ reason: 'blackbox_stale', lastError: 'store_unavailable' });
    expect(calls).toEqual([]);
    await handler.close();
  });

  it('a full queue: Retry-After is the time one check takes at the drain rate, 1 to 60 s', async () => {
    let time = 1_000_000;
    let figures: QueueCounts = { queued: 7, oldestAcceptedAt: time - 10_000, drainedLastMinute: 5 };
    const hand = handQueue(async () => figures);
    hand.state.answer = 'full';
    const { client } = stubClient();
    const { handler, errors } = setUp(client, { queue: hand.queue, now: () => time });
    const retryAfter = async (key: string) => {
      const answer = await handler(post(key));
      expect(answer.status).toBe(503);
      return answer.headers.get('retry-after');
    };
    // 5 checks in the 10 s the backlog is old: 0.5 a second, one in 2 s.
    expect(await retryAfter('key-0000000001')).toBe('2');
    // 3 in 10 s: one in 3.33 s, rounded up.
    figures = { ...figures, drainedLastMinute: 3 };
    expect(await retryAfter('key-0000000002')).toBe('4');
    // 600 a minute: one in 0.1 s, never less than 1 s.
    time += 60_000;
    figures = { queued: 7, oldestAcceptedAt: time - 60_000, drainedLastMinute: 600 };
    expect(await retryAfter('key-0000000003')).toBe('1');
    // Half a check a minute: one in 120 s, never more than 60 s.
    figures = { ...figures, drainedLastMinute: 0.5 };
    expect(await retryAfter('key-0000000004')).toBe('60');
    expect(errors.map((e) => [e.code, e.status, e.retryAfter, e.operation])).toEqual([
      ['queue_full', 503, 2, 'queue'],
      ['queue_full', 503, 4, 'queue'],
      ['queue_full', 503, 1, 'queue'],
      ['queue_full', 503, 60, 'queue'],
    ]);
    expect(errors[0]!.message).toMatch(/a checkout was refused: the queue holds 7 checks$/);
    // The counts unreadable: 5 s, and the refusal still told.
    figures = undefined as unknown as QueueCounts;
    hand.queue.counts = async () => Promise.reject(new Error('redis away'));
    expect(await retryAfter('key-0000000005')).toBe('5');
    expect(errors[4]!.message).toMatch(/a checkout was refused: the queue holds its most checks$/);
    await handler.close();
  });

  it('a checkout that could not start within the trust bound at the drain rate measured: 503 queue_full at once, never accepted to go stale', async () => {
    let time = 1_000_000;
    // A backlog a minute old that drained 30 checks in it: 0.5 a second, 2 s a check.
    let figures: QueueCounts = { queued: 28, oldestAcceptedAt: time - 60_000, drainedLastMinute: 30 };
    const hand = handQueue(async () => figures);
    const { client } = stubClient();
    // The shop's bound far above what drains (a many-address flood fills it): the rate decides.
    const { handler, errors } = setUp(client, {
      queue: hand.queue,
      now: () => time,
      maxQueuedMs: 60_000,
      maxQueuedChecks: 10_000,
    });
    // 27 ahead and this one: 56 s at 2 s a check, within 95 % of the minute (57 s).
    figures = { ...figures, queued: 27 };
    expect((await handler(post('key-late-0001'))).status).toBe(202);
    // 28 ahead: the 29th would start 58 s after its acceptance, past it: refused now.
    time += 1000;
    figures = { ...figures, queued: 28, oldestAcceptedAt: time - 60_000 };
    const refused = await handler(post('key-late-0002'));
    expect([refused.status, refused.headers.get('retry-after')]).toEqual([503, '2']);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('queue_full');
    expect(errors.map((e) => e.code)).toEqual(['queue_full']);
    expect(hand.jobs.map((job) => job.key)).toEqual(['key-late-0001']);
    // Nothing drained yet (no rate measured): the contracted 1 a second decides, 56 ahead start
    // within 57 s, 57 do not; the queue's own bound (10,000) is far away.
    time += 1000;
    figures = { queued: 56, oldestAcceptedAt: time - 500, drainedLastMinute: 0 };
    expect((await handler(post('key-late-0003'))).status).toBe(202);
    time += 1000;
    figures = { queued: 57, oldestAcceptedAt: time - 500, drainedLastMinute: 0 };
    expect((await handler(post('key-late-0004'))).status).toBe(503);
    // Each accepted one asked the add to count again (the fleet's accepts since the read): full
    // at 28 held at 0.5 a second (28.5 start within 57 s), at 57 at the contracted 1 a second.
    expect(hand.lateAts).toEqual([28, 57]);
    await handler.close();
  });

  it("the shop's visitor: its id hashed into the job and the admission; none given is one visitor; a bad one 500, told", async () => {
    const hand = handQueue();
    const { client } = stubClient();
    const { handler, errors } = setUp(client, {
      queue: hand.queue,
      checkoutsPerAddress: { burst: 2, perMinute: 1 },
      visitor: (request) => {
        const session = /session=([^;]+)/.exec(request.headers.get('cookie') ?? '')?.[1];
        return session === 'number' ? (42 as unknown as string) : session;
      },
    });
    const withCookie = (key: string, cookie?: string) => {
      const request = post(key);
      if (cookie) request.headers.set('cookie', cookie);
      return handler(request, { clientAddress: `198.51.100.${key.length}` });
    };
    expect((await withCookie('key-visitor-a1', 'session=s3cr3t-session-a')).status).toBe(202);
    expect((await withCookie('key-visitor-b01', 'session=s3cr3t-session-b')).status).toBe(202);
    // Without a session, from other addresses each: one visitor together, 2 at once, then 429.
    expect((await withCookie('key-visitor-n1')).status).toBe(202);
    expect((await withCookie('key-visitor-n02')).status).toBe(202);
    const third = await withCookie('key-visitor-n003');
    expect([third.status, ((await third.json()) as { error: { code: string } }).error.code]).toEqual([
      429,
      'too_many_checkouts',
    ]);
    const visitors = hand.jobs.map((job) => job.visitor!);
    expect(visitors[0]).toMatch(/^visitor [0-9a-f]{32}$/);
    expect(visitors[1]).toMatch(/^visitor [0-9a-f]{32}$/);
    expect(visitors[0]).not.toBe(visitors[1]);
    expect(visitors.slice(2)).toEqual(['visitor none', 'visitor none']);
    // The session id itself is in no job.
    expect(JSON.stringify(hand.jobs)).not.toContain('s3cr3t');
    // A function that returns something else: 500, told as invalid_configuration.
    const bad = await withCookie('key-visitor-x1', 'session=number');
    expect([bad.status, ((await bad.json()) as { error: { code: string } }).error.code]).toEqual([
      500,
      'customer_lookup_failed',
    ]);
    expect(errors.map((e) => e.code)).toEqual(['rate_limited', 'invalid_configuration']);
    expect(errors[1]!.message).toMatch(/visitor returned number/);
    // Anything but a function is refused when the handler is made.
    expect(() => setUp(client, { visitor: 'session' as never })).toThrow(
      expect.objectContaining({ code: 'invalid_configuration' }),
    );
    await handler.close();
  });

  it('a key checked already answers its result without a job; a key reused with another request is 422, never queued', async () => {
    const { client } = stubClient();
    const hand = handQueue();
    const { handler } = setUp(client, { queue: hand.queue });
    await handler(post('key-0000000001'));
    expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true });
    const again = await handler(post('key-0000000001'));
    expect(again.status).toBe(200);
    const other = await handler(post('key-0000000001', 'order-0', BLACKBOX.replace('abc', 'abd')));
    expect(other.status).toBe(422);
    hand.state.answer = 'conflict';
    const conflict = await handler(post('key-0000000002'));
    expect(conflict.status).toBe(422);
    expect(hand.jobs).toHaveLength(2);
    await handler.close();
  });

  it('one key, two orders posted at once: one 202, the other 422; the same order twice: both 202, checked once', async () => {
    const { client, calls } = stubClient();
    const { handler, results } = setUp(client);
    const accepted: string[] = [];
    for (let i = 0; i < 20; i++) {
      const key = `key-race-000${i}`;
      const answers = await Promise.all([handler(post(key, `order-${i}-a`)), handler(post(key, `order-${i}-b`))]);
      expect(answers.map((answer) => answer.status).sort()).toEqual([202, 422]);
      accepted.push(`order-${i}-${answers[0]!.status === 202 ? 'a' : 'b'}`);
      const same = await Promise.all([handler(post(`key-same-000${i}`)), handler(post(`key-same-000${i}`))]);
      // Each 202, or 200 with the decision where the check had ended before the second read the key.
      for (const answer of same) expect([200, 202]).toContain(answer.status);
    }
    await expect.poll(() => results.length).toBe(40);
    const orders = (results as Array<{ customerInternalReference: string }>).map((r) => r.customerInternalReference);
    expect(orders.filter((order) => order !== 'order-0').sort()).toEqual(accepted.sort());
    expect(calls.filter((call) => call.startsWith('create'))).toHaveLength(40);
    await handler.close();
  });

  it("a key whose job ran and left the queue between the record's read and the add: another order is 422, the same 200 with its result", async () => {
    const { client } = stubClient();
    const hand = handQueue();
    const memory = createMemoryStore();
    const { handler, errors } = setUp(client, { queue: hand.queue, store: memory });
    expect((await handler(post('key-0000000001', 'order-a'))).status).toBe(202);
    // The next add finds the queue empty: the first job ran to its end in the meantime (on another instance).
    const add = hand.queue.add;
    hand.queue.add = async (job) => {
      if (hand.jobs.length === 1) expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true });
      return add(job);
    };
    const other = await handler(post('key-0000000001', 'order-b'));
    expect([other.status, ((await other.json()) as { error: { code: string } }).error.code]).toEqual([
      422,
      'idempotency_key_reused',
    ]);
    // Its job, if held, runs to nothing and is no check: the record's fingerprint is another's.
    expect(await figuresOf(() => hand.run(hand.jobs[1]!))).toEqual({ events: { replayed: 1 }, waits: 1 });
    const same = await handler(post('key-0000000002', 'order-c'));
    expect(same.status).toBe(202);
    hand.queue.add = async (job) => {
      if (hand.jobs.length === 3) expect(await hand.run(hand.jobs[2]!)).toEqual({ done: true });
      return add(job);
    };
    // The same order's retry: the answer its check gave (the first job's, run within the add),
    // as a retry after it gets; not accepted a second time.
    let retry!: Response;
    expect(await figuresOf(async () => (retry = await handler(post('key-0000000002', 'order-c'))))).toEqual({
      events: { checked: 1 },
      waits: 1,
    });
    expect(retry.status).toBe(200);
    expect(await retry.json()).toMatchObject({ workflowExecutionId: 'wf-2' });
    // The job the retry added finds the key checked: counted as replayed, not as a second check,
    // and not in the drain rate (the two checks that ran, no more).
    expect(hand.jobs).toHaveLength(4);
    expect(await figuresOf(() => hand.run(hand.jobs[3]!))).toEqual({ events: { replayed: 1 }, waits: 1 });
    const { drainPerSecond, drainWindowMs } = await handler.backlog();
    expect(Math.round((drainPerSecond * drainWindowMs) / 1000)).toBe(2);
    expect(errors).toEqual([]);
    await handler.close();
  });

  it('the record read after the add fails (the store away): told, held, and 503, never a 202 the record cannot back; the retry is 202, one check', async () => {
    const { client, calls } = stubClient();
    const hand = handQueue();
    // The second read is the key's record after the add.
    const store = storeAwayAtRead(2, 3);
    const { handler, errors, results } = setUp(client, { queue: hand.queue, store });
    // Held, and counted as such (it is checked), though the answer is the store's.
    await expectHeld503(handler, '3');
    expect(hand.jobs).toHaveLength(1);
    expect(errors.map((e) => e.code)).toEqual(['store_unavailable']);
    await expectRetriedOnce(handler, hand, results, calls);
  });

  it('a decision not there after finalize: read again on the documented schedule, quietly, and told once it is', async () => {
    const { client, calls } = stubClient();
    const statuses = ['ACQUIRED', 'ACQUIRED'];
    client.status = async () => statuses.shift() ?? 'PROCESSED';
    const hand = handQueue();
    const { handler, errors, results } = setUp(client, { queue: hand.queue });
    expect((await handler(post('key-0000000001', 'order-a'))).status).toBe(202);
    // No callback need come: the job comes back 40 s after the upload, then 20 s later (60 s).
    expect(
      await figuresOf(async () => expect(await hand.run(hand.jobs[0]!)).toEqual({ retryInMs: 40_000, reading: 1 })),
    ).toEqual({
      events: {},
      waits: 1,
    });
    expect(await hand.run(hand.jobs[0]!)).toEqual({ retryInMs: 20_000, reading: 2 });
    expect(results).toEqual([]);
    expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true });
    expect(results).toMatchObject([{ customerInternalReference: 'order-a', reference: 'key-0000000001' }]);
    // Quiet: nothing went wrong. One transaction, one upload; finalize asked again on each read.
    expect(errors).toEqual([]);
    expect(calls.filter((call) => !call.startsWith('finalize'))).toEqual(['create order-a', 'upload wf-1']);
    await handler.close();
  });

  it('finalize judged not yet checked (409 while ACQUIRED): read again on the schedule, quietly; other failures are told', async () => {
    const { client, calls } = stubClient();
    const acquired = new DeviceRiskError('result_not_ready', 'finalize answered 409, ACQUIRED', {
      operation: 'finalize',
    });
    const away = new DeviceRiskError('upstream_error', 'finalize answered 503', { status: 503, operation: 'finalize' });
    const failures = [acquired, away];
    client.finalize = async (tx) => {
      const failure = failures.shift();
      if (failure) throw failure;
      calls.push(`finalize ${tx.workflowExecutionId}`);
    };
    const hand = handQueue();
    const { handler, errors, results } = setUp(client, { queue: hand.queue });
    expect((await handler(post('key-0000000001', 'order-a'))).status).toBe(202);
    expect(await hand.run(hand.jobs[0]!)).toEqual({ retryInMs: 40_000, reading: 1 });
    expect(errors).toEqual([]);
    expect(await hand.run(hand.jobs[0]!)).toMatchObject({ retryInMs: expect.any(Number) });
    expect(errors).toEqual([away]);
    expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true });
    expect(results).toHaveLength(1);
    await handler.close();
  });

  it('failed tries before a pending decision never shorten its schedule: its first wait is 40 s', async () => {
    const { client } = stubClient();
    const away = new DeviceRiskError('upstream_error', 'upload answered 503', { status: 503, operation: 'upload' });
    const failures = [away];
    const upload = client.uploadBlackbox;
    client.uploadBlackbox = async (tx, blackbox) => {
      const failure = failures.shift();
      if (failure) throw failure;
      return upload(tx, blackbox);
    };
    client.status = async () => 'ACQUIRED';
    const hand = handQueue();
    const { handler } = setUp(client, { queue: hand.queue });
    expect((await handler(post('key-0000000001', 'order-a'))).status).toBe(202);
    expect(await hand.run(hand.jobs[0]!)).toEqual({ retryInMs: 1000 });
    // A schedule shared with the failed tries would wait 20 s here.
    expect(await hand.run(hand.jobs[0]!)).toEqual({ retryInMs: 40_000, reading: 1 });
    expect(await hand.run(hand.jobs[0]!)).toEqual({ retryInMs: 20_000, reading: 2 });
    await handler.close();
  });

  it('a decision never there: ten reads in all (to 760 s), then the order is told result_not_ready', async () => {
    const { client, reads } = neverDecided();
    const hand = handQueue();
    const { handler, errors, results } = setUp(client, { queue: hand.queue });
    expect((await handler(post('key-0000000001', 'order-a'))).status).toBe(202);
    const waits: unknown[] = [];
    for (let i = 0; i < 9; i++) waits.push(await hand.run(hand.jobs[0]!));
    expect(waits).toEqual(
      [40, 20, 40, 60, 80, 100, 120, 140, 160].map((s, i) => ({ retryInMs: s * 1000, reading: i + 1 })),
    );
    expect(errors).toEqual([]);
    expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true });
    expect(reads()).toBe(10);
    expect(results).toEqual([]);
    expect(errors.map((e) => [e.code, (e as unknown as NotCheckedError).reason])).toEqual([
      ['result_not_ready', undefined],
      ['not_checked', 'result_not_ready'],
    ]);
    expect(errors[0]!.message).toMatch(/wf-1 was not there after 10 reads \(the last 760 s after the upload\)/);
    expect(errors[0]!.operation).toBe('result');
    await handler.close();
  });

  it('the schedule is kept with the job: a process that takes it over (a restart, another instance) goes on with it', async () => {
    const { client, reads } = neverDecided();
    const hand = handQueue();
    const { handler, errors, results } = setUp(client, { queue: hand.queue });
    expect((await handler(post('key-0000000001', 'order-a'))).status).toBe(202);
    expect(await hand.run(hand.jobs[0]!)).toEqual({ retryInMs: 40_000, reading: 1 });
    await handler.close();
    // The next process, on the job as the queue kept it: the third read comes 40 s after the second (100 s).
    const next = setUp(client, { queue: hand.queue });
    expect(await hand.run(hand.jobs[0]!)).toEqual({ retryInMs: 20_000, reading: 2 });
    expect(await hand.run(hand.jobs[0]!)).toEqual({ retryInMs: 40_000, reading: 3 });
    // Its last read scheduled: the one after it tells the order, as in one process.
    hand.jobs[0] = { ...hand.jobs[0]!, reading: 9 };
    expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true });
    expect(reads()).toBe(4);
    expect(results).toEqual([]);
    expect(next.errors.map((e) => e.code)).toEqual(['result_not_ready', 'not_checked']);
    expect(errors).toEqual([]);
    await next.handler.close();
  });

  it('an execution expired after finalize: the order is told workflow_expired, once, nothing read again', async () => {
    const { client } = stubClient();
    client.status = async () => 'SESSION_EXPIRED';
    const hand = handQueue();
    const { handler, errors } = setUp(client, { queue: hand.queue });
    expect((await handler(post('key-0000000001', 'order-a'))).status).toBe(202);
    expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true });
    expect(errors.map((e) => [e.code, (e as unknown as NotCheckedError).reason])).toEqual([
      ['workflow_expired', undefined],
      ['not_checked', 'workflow_expired'],
    ]);
    expect(errors[0]).toMatchObject({
      operation: 'result',
      message: expect.stringContaining('wf-1 ended SESSION_EXPIRED'),
    });
    await handler.close();
  });

  it("onResult fails (the shop's store full): the job comes back and tells the decision then, once, on one transaction", async () => {
    const { client, calls } = stubClient();
    const hand = handQueue();
    const told: unknown[] = [];
    let refuse = true;
    const { handler, errors } = setUp(client, {
      queue: hand.queue,
      onResult: (details, { reference }) => {
        if (refuse) {
          refuse = false;
          throw new DeviceRiskError('store_full', 'the outbox has no room', { operation: 'outbox' });
        }
        told.push({ id: details.workflowExecutionId, reference });
      },
    });
    expect((await handler(post('key-0000000001', 'order-a'))).status).toBe(202);
    // Not done: the decision was not told, so the job comes back, only to tell it (no check
    // waiting: CheckJob.reading); its cause is told once.
    expect(await hand.run(hand.jobs[0]!)).toMatchObject({ retryInMs: expect.any(Number), reading: 0 });
    expect(told).toEqual([]);
    expect(errors.map((e) => e.code)).toEqual(['store_full']);
    // It resumes from its record (uploaded, finalized): the decision is told, nothing made twice.
    expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true });
    expect(told).toEqual([{ id: 'wf-1', reference: 'key-0000000001' }]);
    expect(calls.filter((call) => call.startsWith('create'))).toHaveLength(1);
    expect(calls.filter((call) => call.startsWith('upload'))).toHaveLength(1);
    expect(errors).toHaveLength(1);
    await handler.close();
  });

  it('onResult failing for half of idempotencyTtlMs since it first failed: the order is told result_undelivered once, its decision not read again', async () => {
    const { client } = stubClient();
    let reads = 0;
    const details = client.details;
    client.details = async (tx) => {
      reads++;
      return { ...(await details(tx)), status: 'PROCESSED' };
    };
    const hand = handQueue();
    const { handler, errors, results } = setUp(client, {
      queue: hand.queue,
      idempotencyTtlMs: 4 * 3_600_000,
      onResult: () => {
        throw new DeviceRiskError('store_full', 'the outbox has no room', { operation: 'outbox' });
      },
    });
    expect((await handler(post('key-0000000001', 'order-a'))).status).toBe(202);
    const before = Date.now();
    expect(await hand.run(hand.jobs[0]!)).toMatchObject({ retryInMs: expect.any(Number), reading: 0 });
    // The first failure is kept with the job, for whichever process runs it next.
    const since = hand.jobs[0]!.untoldSince!;
    expect(since).toBeGreaterThanOrEqual(before);
    // Accepted long ago (it waited in the queue): the time counts from the first failure, not from then.
    hand.jobs[0] = { ...hand.jobs[0]!, acceptedAt: Date.now() - 3 * 3_600_000 };
    expect(await hand.run(hand.jobs[0]!)).toMatchObject({ retryInMs: expect.any(Number), untoldSince: since });
    // Just within two hours (half the key's record life) of the first failure: tried again, as before.
    const failedAgo = (ms: number) => (hand.jobs[0] = { ...hand.jobs[0]!, untoldSince: Date.now() - ms });
    failedAgo(2 * 3_600_000 - 60_000);
    expect(await hand.run(hand.jobs[0]!)).toMatchObject({ retryInMs: expect.any(Number), reading: 0 });
    expect(errors.map((e) => e.code)).toEqual(['store_full', 'store_full', 'store_full']);
    // Past them: the try that fails again ends the job, and the order is told why.
    failedAgo(2 * 3_600_000);
    expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true });
    expect(errors.map((e) => [e.code, (e as unknown as NotCheckedError).reason])).toEqual([
      ['store_full', undefined],
      ['store_full', undefined],
      ['store_full', undefined],
      ['store_full', undefined],
      ['result_undelivered', undefined],
      ['not_checked', 'result_undelivered'],
    ]);
    expect(errors[4]!.message).toMatch(/wf-1 \(PROCESSED\) was not told: onResult kept failing for 120 min/);
    expect((errors[5] as unknown as NotCheckedError).customerInternalReference).toBe('order-a');
    expect([reads, results]).toEqual([4, []]);
    await handler.close();
  });

  it('an add held without the confirmation asked for: told, held, and 503; the retry under the key is 202, one check', async () => {
    const { client, calls } = stubClient();
    const hand = handQueue();
    hand.state.answer = 'unconfirmed';
    const { handler, errors, results } = setUp(client, { queue: hand.queue });
    // Held, and counted as such (it may run), though the answer sends the browser back.
    await expectHeld503(handler, '1');
    expect(errors.map((e) => [e.code, e.operation, e.message])).toEqual([
      ['store_unavailable', 'queue', expect.stringMatching(/not confirmed/)],
    ]);
    // A retry while the replicas still do not confirm it: 503 again, told, held, not counted again.
    hand.state.answer = 'present-unconfirmed';
    let again!: Response;
    expect(await figuresOf(async () => (again = await handler(post('key-0000000001', 'order-a'))))).toEqual({
      events: {},
      waits: 0,
    });
    expect([again.status, again.headers.get('retry-after'), isHeldAnswer(again)]).toEqual([503, '1', true]);
    expect(errors.map((e) => e.code)).toEqual(['store_unavailable', 'store_unavailable']);
    expect(hand.jobs).toHaveLength(2);
    await expectRetriedOnce(handler, hand, results, calls);
  });

  it('an add the queue does not answer in time: 503 within storeTimeoutMs, maybe held, told; counted once it lands, one check', async () => {
    const { client, calls } = stubClient();
    const hand = handQueue();
    const add = hand.queue.add;
    let hung: Promise<AddResult> | undefined;
    // The queue's Redis frozen after it took the add: it answers only once the test lets it.
    const wake = gate();
    hand.queue.add = (job, lateAt) => (hung = wake.released.then(() => add(job, lateAt)));
    const outcomes: unknown[] = [];
    const { handler, errors, results } = setUp(client, {
      queue: hand.queue,
      storeTimeoutMs: 100,
      onOutcome: (outcome) => void outcomes.push(outcome),
    });
    let first!: Response;
    expect(
      await figuresOf(async () => (first = await handler(post('key-0000000001', 'order-a', undefined, OUTCOME)))),
    ).toEqual({ events: {}, waits: 0 });
    expect([first.status, first.headers.get('retry-after')]).toEqual([503, '1']);
    // Neither held nor refused: it may still land.
    expect([isMaybeHeldAnswer(first), isHeldAnswer(first)]).toEqual([true, false]);
    expect(((await first.json()) as { error: { code: string } }).error.code).toBe('store_unavailable');
    expect(errors.map((e) => [e.code, e.operation, e.message])).toEqual([
      ['store_unavailable', 'queue', expect.stringMatching(/did not answer an add within 100 ms/)],
    ]);
    expect(outcomes).toEqual([]);
    // The queue wakes and holds it by that add: counted then, its capture outcome told, once.
    expect(
      await figuresOf(async () => {
        wake.release();
        await hung;
        await new Promise((resolve) => setTimeout(resolve, 0));
      }),
    ).toEqual({ events: { accepted: 1 }, waits: 0 });
    expect(outcomes).toHaveLength(1);
    hand.queue.add = add;
    // The browser's retry under the key finds it: 202, nothing counted again, one check.
    await expectRetriedOnce(handler, hand, results, calls);
    expect(outcomes).toHaveLength(1);
  });

  it.each([
    ['comes back full', async () => 'full' as const, /came back "full": the checkout is not held by it/],
    ["comes back another order's (conflict)", async () => 'conflict' as const, /came back "conflict"/],
    ['fails', () => Promise.reject(new Error('connection reset')), /could not take it/],
  ])('an add that did not answer in time and then %s: told, nothing counted', async (_, late, told) => {
    const { client } = stubClient();
    const hand = handQueue();
    const wake = gate();
    let hung: Promise<unknown> | undefined;
    hand.queue.add = () => (hung = wake.released.then(late)) as Promise<AddResult>;
    const { handler, errors } = setUp(client, { queue: hand.queue, storeTimeoutMs: 100 });
    expect(
      await figuresOf(async () => {
        expect((await handler(post('key-0000000001', 'order-a'))).status).toBe(503);
        wake.release();
        await hung?.catch(() => {});
        await new Promise((resolve) => setTimeout(resolve, 0));
      }),
    ).toEqual({ events: {}, waits: 0 });
    expect(errors.map((e) => [e.code, e.operation])).toEqual([
      ['store_unavailable', 'queue'],
      ['store_unavailable', 'queue'],
    ]);
    expect(errors[1]!.message).toMatch(told);
    await handler.close();
  });

  it.each([
    ['held by it, unconfirmed by the replicas: counted then', 'unconfirmed' as const, { accepted: 1 }, 1],
    ["held by another add (the retry's): nothing counted or told again", 'present' as const, {}, 0],
  ])('an add that did not answer in time and then comes back %s', async (_, late, events, outcomes) => {
    const { client } = stubClient();
    const hand = handQueue();
    const wake = gate();
    let hung: Promise<AddResult> | undefined;
    hand.queue.add = () => (hung = wake.released.then(() => late));
    const told: unknown[] = [];
    const { handler, errors } = setUp(client, {
      queue: hand.queue,
      storeTimeoutMs: 100,
      onOutcome: (outcome) => void told.push(outcome),
    });
    expect((await handler(post('key-0000000001', 'order-a', undefined, OUTCOME))).status).toBe(503);
    expect(
      await figuresOf(async () => {
        wake.release();
        await hung;
        await new Promise((resolve) => setTimeout(resolve, 0));
      }),
    ).toEqual({ events, waits: 0 });
    expect(told).toHaveLength(outcomes);
    expect(errors.map((e) => e.code)).toEqual(['store_unavailable']);
    await handler.close();
  });

  it('an add the queue refuses at once: 503 store_unavailable, not held, and nothing counted', async () => {
    const { client } = stubClient();
    const hand = handQueue();
    hand.queue.add = () => Promise.reject(new Error('connection reset'));
    const { handler, errors } = setUp(client, { queue: hand.queue, storeTimeoutMs: 100 });
    let answer!: Response;
    expect(await figuresOf(async () => (answer = await handler(post('key-0000000001', 'order-a'))))).toEqual({
      events: {},
      waits: 0,
    });
    expect([answer.status, answer.headers.get('retry-after'), isHeldAnswer(answer), isMaybeHeldAnswer(answer)]).toEqual(
      [503, '1', false, false],
    );
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('store_unavailable');
    expect(errors.map((e) => [e.code, e.operation])).toEqual([['store_unavailable', 'queue']]);
    await handler.close();
  });

  it('a count the queue does not answer in time: 503 store_unavailable, nothing added, told (the trust bound is unknown)', async () => {
    const { client } = stubClient();
    // A count slower than the limit, over a backlog far past the trust bound.
    const hand = handQueue(
      () =>
        new Promise((resolve) => setTimeout(() => resolve({ queued: 1_000_000, oldestAcceptedAt: undefined }), 300)),
    );
    const { handler, errors } = setUp(client, { queue: hand.queue, storeTimeoutMs: 100 });
    const answer = await handler(post('key-0000000001', 'order-a'));
    expect([answer.status, answer.headers.get('retry-after'), hand.jobs.length]).toEqual([503, '1', 0]);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('store_unavailable');
    expect(errors.map((e) => [e.code, e.operation, e.message])).toEqual([
      ['store_unavailable', 'queue', expect.stringMatching(/did not answer a count within 100 ms/)],
    ]);
    await handler.close();
  });

  it("the read after the add fails and the key is another order's, whose job just ran: 503, the retry 422, the job held no check", async () => {
    const { client, calls } = stubClient();
    const hand = handQueue();
    const memory = createMemoryStore();
    let failRead = false;
    const store = {
      ...memory,
      get: async (key: string) => {
        if (failRead) {
          failRead = false;
          throw new DeviceRiskError('store_unavailable', 'store away', { retryAfter: 1 });
        }
        return memory.get(key);
      },
    };
    const { handler, errors, results } = setUp(client, { queue: hand.queue, store });
    expect((await handler(post('key-0000000001', 'order-a'))).status).toBe(202);
    // The first job runs to its end between the second request's record read and its add; the
    // read after the add then fails.
    const add = hand.queue.add;
    hand.queue.add = async (job) => {
      expect(await hand.run(hand.jobs[0]!)).toEqual({ done: true });
      failRead = true;
      return add(job);
    };
    const other = await handler(post('key-0000000001', 'order-b'));
    expect(other.status).toBe(503);
    expect(errors.map((e) => e.code)).toEqual(['store_unavailable']);
    hand.queue.add = add;
    const retry = await handler(post('key-0000000001', 'order-b'));
    expect(((await retry.json()) as { error: { code: string } }).error.code).toBe('idempotency_key_reused');
    expect(hand.jobs).toHaveLength(2);
    expect(await figuresOf(() => hand.run(hand.jobs[1]!))).toEqual({ events: { replayed: 1 }, waits: 1 });
    expect(results).toMatchObject([{ customerInternalReference: 'order-a' }]);
    expect(calls.filter((call) => call.startsWith('create'))).toHaveLength(1);
    await handler.close();
  });

  it('a request without a key: a key of its own that nothing else knows, so no record is read (202 with the store away)', async () => {
    const { client } = stubClient();
    const hand = handQueue();
    const store = {
      ...createMemoryStore(),
      get: async () => {
        throw new DeviceRiskError('store_unavailable', 'store away', { retryAfter: 1 });
      },
    };
    const { handler, errors } = setUp(client, { queue: hand.queue, store });
    const keyless = (blackbox: string) =>
      handler(
        new Request(`${SHOP}/device-risk`, {
          method: 'POST',
          headers: { origin: SHOP, 'content-type': 'application/json', 'x-order': 'order-a' },
          body: JSON.stringify({ blackbox }),
        }),
      );
    const answers = [await keyless(blackboxOf('keyless-a')), await keyless(blackboxOf('keyless-b'))];
    expect(answers.map((answer) => answer.status)).toEqual([202, 202]);
    const [a, b] = (await Promise.all(answers.map((answer) => answer.json()))) as Array<{ reference: string }>;
    expect(a!.reference).not.toBe(b!.reference);
    expect(hand.jobs.map((job) => job.key)).toEqual([a!.reference, b!.reference]);
    expect(errors).toEqual([]);
    await handler.close();
  });
});

/** The queue's counter by event, and the wait histogram's count, as recorded so far in this file. */
async function queueFigures() {
  // The meter records once its API has loaded: a turn of the event loop.
  await new Promise((resolve) => setTimeout(resolve, 5));
  const metrics = (await collect()).scopeMetrics.flatMap((s) => s.metrics);
  const find = (name: string) => metrics.find((m) => m.descriptor.name === name)?.dataPoints ?? [];
  const events: Record<string, number> = {};
  for (const p of find('blackbox_capture.queue.checks')) events[String(p.attributes.event)] = p.value as number;
  const waits = find('blackbox_capture.queue.wait').reduce((n, p) => n + (p.value as { count: number }).count, 0);
  return { events, waits };
}

/** What changed in the figures while `act` ran. */
async function figuresOf(act: () => Promise<unknown>) {
  const before = await queueFigures();
  await act();
  const after = await queueFigures();
  const events: Record<string, number> = {};
  for (const [event, n] of Object.entries(after.events))
    if (n !== (before.events[event] ?? 0)) events[event] = n - (before.events[event] ?? 0);
  return { events, waits: after.waits - before.waits };
}

describe('what the queued checks count, and the stale record on any store', () => {
  it('each event counted once under its name; the wait measured at the first try only', async () => {
    const { client } = stubClient({
      failCreates: [failing('upstream_error', { status: 502 }), failing('request_rejected', { status: 400 })],
    });
    let time = 1_000_000;
    const hand = handQueue();
    const { handler } = setUp(client, { queue: hand.queue, now: () => time, maxQueuedMs: 60_000 });
    expect(await figuresOf(() => handler(post('key-0000000001', 'order-1')))).toEqual({
      events: { accepted: 1 },
      waits: 0,
    });
    // A retry of a held key: the same 202, not counted again.
    hand.state.answer = 'present';
    expect(await figuresOf(() => handler(post('key-0000000001', 'order-1')))).toEqual({ events: {}, waits: 0 });
    hand.state.answer = 'added';
    await handler(post('key-0000000002', 'order-2'));
    await handler(post('key-0000000003', 'order-3'));
    // The jobs offered: the first key's twice (added, then present), the second's, the third's.
    const [first, , second, third] = hand.jobs as [CheckJob, CheckJob, CheckJob, CheckJob];
    expect(await figuresOf(() => hand.run(first))).toEqual({ events: { retried: 1 }, waits: 1 });
    expect(await figuresOf(() => hand.run(second))).toEqual({ events: { failed: 1 }, waits: 1 });
    expect(await figuresOf(() => hand.run(first))).toEqual({ events: { checked: 1 }, waits: 0 });
    time += 60_001;
    expect(await figuresOf(() => hand.run(third))).toEqual({ events: { stale: 1 }, waits: 0 });
    hand.state.answer = 'full';
    expect(await figuresOf(() => handler(post('key-0000000004')))).toEqual({ events: { refused: 1 }, waits: 0 });
    await handler.close();
  });

  it('a backlog whose checks all go stale drains at 0: its stale drops are counted apart, and said in backlog_behind', async () => {
    let time = 1_000_000;
    let held = 3;
    const hand = handQueue(async () => ({ queued: held, oldestAcceptedAt: held > 0 ? 1_000_000 : undefined }));
    const { client, calls } = stubClient();
    const { handler, errors } = setUp(client, { queue: hand.queue, now: () => time, maxQueuedMs: 60_000 });
    for (let i = 1; i <= 3; i++) await handler(post(`key-000000000${i}`, `order-${i}`));
    time += 60_001;
    for (const job of hand.jobs) {
      expect(await hand.run(job)).toEqual({ done: true, stale: true });
      held--;
    }
    held = 1;
    expect(calls).toEqual([]);
    expect(await handler.backlog()).toMatchObject({
      queued: 1,
      drainPerSecond: 0,
      drainSeconds: Infinity,
      staleLastMinute: 3,
      fleetWide: false,
    });
    await new Promise((resolve) => setTimeout(resolve, 0));
    const behind = errors.filter((e) => e.code === 'backlog_behind');
    expect(behind).toHaveLength(1);
    expect(behind[0]!.message).toContain('dropped stale in the last minute');
    await handler.close();
  });

  it('what is told about the queue names its operation', async () => {
    let time = 1_000_000;
    const hand = handQueue();
    const { client } = stubClient();
    const { handler, errors } = setUp(client, { queue: hand.queue, now: () => time, maxQueuedMs: 2000 });
    await handler(post('key-0000000001'));
    time += 2001;
    await hand.run(hand.jobs[0]!);
    expect(errors.map((e) => [e.code, e.operation])).toEqual([
      ['blackbox_stale', 'queue'],
      ['not_checked', 'queue'],
    ]);
    await handler.close();
  });

  it("a key whose record holds another attempt's create on the wire: the try comes back when that create's time is up", async () => {
    const time = 1_000_000;
    const store = createMemoryStore();
    const hand = handQueue();
    const { client } = stubClient();
    const { handler } = setUp(client, { queue: hand.queue, store, now: () => time });
    await handler(post('key-0000000001'));
    const job = hand.jobs[0]!;
    const creating = { fingerprint: job.fingerprint, creating: { owner: 'elsewhere', until: time + 4500 } };
    await store.set(recordKeyOf('client-1:idempotency', job.key), JSON.stringify(creating), 60_000);
    expect(await hand.run(job)).toEqual({ retryInMs: 5000 });
    await handler.close();
  });

  it('the stale record is written on a store like Redis (no compare-and-set on a missing key), over progress, through a lost race; three lost leave it to the next run', async () => {
    let time = 1_000_000;
    const memory = createMemoryStore();
    let refuse = 0;
    let writes = 0;
    // Redis's compare-and-set finds nothing to compare with a missing key; `refuse` writes lose a race.
    const store = {
      ...memory,
      setIfAbsent: async (key: string, value: string, ttlMs: number) => {
        if (value.includes('"stale"') && (writes++, refuse-- > 0)) return false;
        return memory.setIfAbsent(key, value, ttlMs);
      },
      compareAndSet: async (key: string, expected: string, value: string, ttlMs: number) => {
        if (value.includes('"stale"') && (writes++, refuse-- > 0)) return false;
        if ((await memory.get(key)) === undefined) return false;
        return memory.compareAndSet(key, expected, value, ttlMs);
      },
    };
    const { client } = stubClient({ failCreates: [failing('upstream_error', { status: 502 })] });
    const hand = handQueue();
    const { handler } = setUp(client, { queue: hand.queue, store, now: () => time, maxQueuedMs: 60_000 });
    const status = async (key: string) => (await handler(post(key))).status;
    for (const key of ['key-0000000001', 'key-0000000002', 'key-0000000003']) await handler(post(key));
    const [fresh, raced, lost] = hand.jobs as [CheckJob, CheckJob, CheckJob];
    // One try of the first leaves a record without a result (the create failed: removed; so a 2nd record by hand).
    const recordKey = recordKeyOf('client-1:idempotency', raced.key);
    await memory.set(recordKey, JSON.stringify({ fingerprint: raced.fingerprint }), 60_000);
    time += 60_001;
    expect(await hand.run(fresh)).toEqual({ done: true, stale: true });
    expect(await status(fresh.key)).toBe(410);
    refuse = 1;
    expect(await hand.run(raced)).toEqual({ done: true, stale: true });
    expect(await status(raced.key)).toBe(410);
    // Three writes lost (another run writes on): nothing given up beside it; the job comes back, and then ends.
    refuse = 100;
    writes = 0;
    expect(await hand.run(lost)).toMatchObject({ retryInMs: expect.any(Number) });
    expect(writes).toBe(3);
    refuse = 0;
    expect(await hand.run(lost)).toEqual({ done: true, stale: true });
    await handler.close();
  });
});
