// Races between a job's run and another run of the same job (a stalled BullMQ job taken again
// elsewhere, or a stale mark left by an instance that died): one order, exactly one outcome
// (src/server/endpoint/key-record.ts markStale, queued.ts run). Found by review (probe19).
import { expect, it } from 'vitest';
import { DeviceRiskTransaction } from '../../../src/server/api/device-risk-client.js';
import {
  createDeviceRiskHandler,
  createMemoryStore,
  NotCheckedError,
  type DeviceRiskClient,
  type Store,
} from '../../../src/server/index.js';
import { recordKeyOf } from '../../../src/server/endpoint/idempotency.js';
import { handQueue } from '../../support/hand-queue.js';
import { blackboxOf } from '../../support/kit.js';
import { plainSealing, stubTransaction } from '../../support/stub-client.js';

const SHOP = 'https://shop.example';
const post = (key: string) =>
  new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': key, 'x-order': 'order-1' },
    body: JSON.stringify({ blackbox: blackboxOf(key) }),
  });

function client(calls: string[], uploadGate?: () => Promise<void>) {
  return {
    retrievalOrigin: 'https://retrieval.example',
    clientId: 'client-1',
    accountTimeoutMs: 1000,
    createAccount: async () => {
      calls.push('create');
      return stubTransaction(1);
    },
    uploadBlackbox: async (tx: DeviceRiskTransaction) => {
      calls.push(`upload sent ${tx.workflowExecutionId}`);
      await uploadGate?.();
      calls.push(`upload landed ${tx.workflowExecutionId}`);
    },
    finalize: async (tx: DeviceRiskTransaction) => void calls.push(`finalize ${tx.workflowExecutionId}`),
    status: async () => 'PROCESSED',
    details: async (tx: DeviceRiskTransaction) => ({ workflowExecutionId: tx.workflowExecutionId }),
    ...plainSealing,
  } as unknown as DeviceRiskClient;
}

function setUp(store: Store, c: DeviceRiskClient, now: () => number) {
  const outcomes: string[] = [];
  const errors: string[] = [];
  const hand = handQueue();
  const handler = createDeviceRiskHandler({
    client: c,
    allowedOrigins: [SHOP],
    workflowKey: 10020,
    queue: hand.queue,
    store,
    now,
    maxQueuedMs: 60_000,
    checkoutsPerAddress: false,
    checkoutsPerCustomer: false,
    resolveCustomer: () => ({ customerInternalReference: 'order-1' }),
    onError: (error) => {
      errors.push((error as { code?: string }).code ?? String(error));
      if (error instanceof NotCheckedError) outcomes.push(`onError NotChecked(${error.reason})`);
    },
    onResult: (details) => void outcomes.push(`onResult ${details.workflowExecutionId}`),
  });
  return { handler, hand, outcomes, errors };
}

it('three stale writes lost to a duplicate run that writes on: nothing given up beside it, its decision the one outcome', async () => {
  let time = 1_000_000;
  const memory = createMemoryStore();
  let recordKey = '';
  let interleave = false;
  // The duplicate run's record writes wait here while markStale runs; each stale write lets one land first.
  const held: (() => void)[] = [];
  let landed: (() => void) | undefined;
  const waitHeld = async () => {
    while (held.length === 0) await new Promise((r) => setTimeout(r, 1));
  };
  const hold = async <T>(write: () => Promise<T>): Promise<T> => {
    if (!interleave) return write();
    await new Promise<void>((r) => held.push(r));
    const done = await write();
    landed?.();
    return done;
  };
  let staleWrites = 0;
  const staleWrite = async <T>(write: () => Promise<T>): Promise<T> => {
    staleWrites++;
    await waitHeld();
    const landing = new Promise<void>((r) => (landed = r));
    held.shift()!();
    await landing;
    if (staleWrites === 3) interleave = false;
    return write();
  };
  const store: Store = {
    ...memory,
    setIfAbsent: (k, v, t) =>
      k !== recordKey
        ? memory.setIfAbsent(k, v, t)
        : v.includes('"stale"')
          ? staleWrite(() => memory.setIfAbsent(k, v, t))
          : hold(() => memory.setIfAbsent(k, v, t)),
    compareAndSet: (k, e, v, t) =>
      k !== recordKey
        ? memory.compareAndSet(k, e, v, t)
        : v.includes('"stale"')
          ? staleWrite(() => memory.compareAndSet(k, e, v, t))
          : hold(() => memory.compareAndSet(k, e, v, t)),
  };
  const calls: string[] = [];
  const { handler, hand, outcomes, errors } = setUp(store, client(calls), () => time);
  expect((await handler(post('key-0000000001'))).status).toBe(202);
  const job = hand.jobs[0]!;
  recordKey = recordKeyOf('client-1:idempotency', job.key);
  interleave = true;
  // Run 1 (instance A) starts inside the trust bound and blocks at its first record write.
  time += 59_000;
  const runA = hand.run(job);
  await waitHeld();
  // The same job, taken again elsewhere (stalled), now past the bound: markStale.
  time += 2_000;
  const runB = hand.run({ ...job });
  // B does not give the key up beside A's writes: it comes back later (409, told), A checks it.
  expect(await runB).toMatchObject({ retryInMs: 1000 });
  expect(errors).toEqual(['idempotency_key_in_use']);
  interleave = false;
  for (const release of held.splice(0)) release();
  expect(await runA).toEqual({ done: true });
  expect(calls).toEqual(['create', 'upload sent wf-1', 'upload landed wf-1', 'finalize wf-1']);
  expect(outcomes).toEqual(['onResult wf-1']);
  await handler.close();
});

it('an upload on the wire past the bound: waited for, never given up under it; its decision the one outcome', async () => {
  let time = 1_000_000;
  const memory = createMemoryStore();
  let releaseUpload!: () => void;
  const uploadOnWire = new Promise<void>((r) => (releaseUpload = r));
  let uploadSent = false;
  const calls: string[] = [];
  const c = client(calls, async () => {
    uploadSent = true;
    await uploadOnWire;
  });
  const { handler, hand, outcomes, errors } = setUp(memory, c, () => time);
  await handler(post('key-0000000002'));
  const job = hand.jobs[0]!;
  time += 59_000;
  const runA = hand.runOnce(job);
  while (!uploadSent) await new Promise((r) => setTimeout(r, 1));
  time += 2_000;
  // Its upload's intent not up: the key is not given up, the job comes back when it is.
  expect(await hand.runOnce({ ...job })).toMatchObject({ retryInMs: expect.any(Number) });
  expect(errors).toEqual(['idempotency_key_in_use']);
  releaseUpload();
  expect(await runA).toEqual({ done: true });
  expect(outcomes).toEqual(['onResult wf-1']);
  await handler.close();
});

it('a stale mark whose telling was lost, found by a run whose clock is inside the bound: told, not left silent', async () => {
  let time = 1_000_000;
  const store = createMemoryStore();
  const outcomes: string[] = [];
  const hand = handQueue();
  const client = {
    retrievalOrigin: 'https://retrieval.example',
    clientId: 'client-1',
    accountTimeoutMs: 1000,
    createAccount: async () => stubTransaction(1),
    uploadBlackbox: async () => {},
    finalize: async () => {},
    status: async () => 'PROCESSED',
    details: async () => ({ workflowExecutionId: 'wf-1' }),
    ...plainSealing,
  } as unknown as DeviceRiskClient;
  const handler = createDeviceRiskHandler({
    client,
    allowedOrigins: [SHOP],
    workflowKey: 1,
    queue: hand.queue,
    store,
    now: () => time,
    maxQueuedMs: 60_000,
    checkoutsPerAddress: false,
    checkoutsPerCustomer: false,
    resolveCustomer: () => ({ customerInternalReference: 'order-1' }),
    onError: (e) => {
      if (e instanceof NotCheckedError) outcomes.push(`NotChecked(${e.reason})`);
    },
    onResult: () => void outcomes.push('onResult'),
  });
  const r = await handler(
    new Request(`${SHOP}/device-risk`, {
      method: 'POST',
      headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': 'key-0000000003' },
      body: JSON.stringify({ blackbox: blackboxOf('k3') }),
    }),
  );
  expect(r.status).toBe(202);
  const job = hand.jobs[0]!;
  // What markStale on an instance whose clock is 2 s ahead wrote before it died, before it told.
  await store.set(
    recordKeyOf('client-1:idempotency', job.key),
    JSON.stringify({ fingerprint: job.fingerprint, stale: true }),
    60_000,
  );
  time += 59_000; // this instance: inside the bound
  expect(await hand.run(job)).toEqual({ done: true, stale: true });
  expect(outcomes).toEqual(['NotChecked(blackbox_stale)']);
  await handler.close();
});
