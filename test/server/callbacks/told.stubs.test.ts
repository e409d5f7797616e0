// Each decision told once per execution, whichever path brings it first: the service's
// callback (createCallbackHandler) or the endpoint's queued check (createDeviceRiskHandler
// with onResult), both on one stub client and one store (src/server/callbacks/told.ts).
import { describe, expect, it } from 'vitest';
import { DeviceRiskTransaction } from '../../../src/server/api/device-risk-client.js';
import {
  createCallbackHandler,
  createDeviceRiskHandler,
  createMemoryQueue,
  createMemoryStore,
  type CallbackHandlerOptions,
  type DeviceRiskClient,
  type DeviceRiskHandlerOptions,
  type Store,
} from '../../../src/server/index.js';
import { BLACKBOX, SHOP } from '../../support/kit.js';

const RETRIEVAL = 'https://retrieval.test';
const ACCOUNT = '11111111-2222-4333-8444-555555555555';
const EXECUTION = '66666666-7777-4888-9999-aaaaaaaaaaaa';

interface Told {
  path: 'callback' | 'queue';
  workflowExecutionId: string;
  customerInternalReference?: string;
  userReference?: string;
}

/** One stub service: the endpoint's check makes EXECUTION, and its details name the order. */
function stubClient() {
  const client = {
    retrievalOrigin: RETRIEVAL,
    clientId: 'client-1',
    accountTimeoutMs: 1000,
    createAccount: async () =>
      new DeviceRiskTransaction({
        accountId: ACCOUNT,
        workflowExecutionId: EXECUTION,
        credentialId: 'cred',
        uploadUrl: 'https://api.example/upload',
        finalizeUrl: 'https://api.example/finalize',
        tokenExpiresAt: Date.now() + 600_000,
        token: 'tx-token',
      }),
    uploadBlackbox: async () => {},
    finalize: async () => {},
    status: async () => 'PROCESSED',
    details: async (ids: { accountId: string; workflowExecutionId: string }) => {
      return {
        ...ids,
        status: 'PROCESSED',
        customerInternalReference: 'order-1',
        userReference: 'user-1',
        decision: { type: 'PASSED', label: 'OK' },
        deviceRisk: undefined,
        raw: {},
      };
    },
    vouches: async () => false,
    sealTransaction: async (tx: DeviceRiskTransaction) => JSON.stringify({ ...tx.toJSON(), token: tx.token }),
    openTransaction: async (sealed: string) => new DeviceRiskTransaction(JSON.parse(sealed) as never),
  } as unknown as DeviceRiskClient;
  return client;
}

/** Both paths wired on `client`, onResult of each counted in one list; `store` for both unless undefined. */
function wired(
  client: DeviceRiskClient,
  store: Store | undefined,
  options: {
    endpoint?: Partial<DeviceRiskHandlerOptions>;
    callbacks?: Partial<CallbackHandlerOptions>;
    /** onResult of this path throws once before it succeeds. */
    throwsOnce?: Told['path'];
    /** The onResult of this path waits for `hold()`. */
    holding?: Told['path'];
    hold?: () => Promise<void>;
  } = {},
) {
  const told: Told[] = [];
  const errors: unknown[] = [];
  let throws = options.throwsOnce;
  const tell = async (entry: Told) => {
    if (entry.path === options.holding) await options.hold?.();
    if (throws === entry.path) {
      throws = undefined;
      throw new Error(`${entry.path} onResult failed`);
    }
    told.push(entry);
  };
  const queue = createMemoryQueue({ concurrency: 1 });
  const endpoint = createDeviceRiskHandler({
    client,
    ...(store ? { store } : {}),
    queue,
    allowedOrigins: [SHOP],
    workflowKey: 10020,
    checkoutsPerAddress: false,
    checkoutsPerCustomer: false,
    resolveCustomer: () => ({ customerInternalReference: 'order-1', userReference: 'user-1' }),
    onError: (error) => errors.push(error),
    onResult: (details, { customerInternalReference, userReference }) =>
      tell({
        path: 'queue',
        workflowExecutionId: details.workflowExecutionId,
        ...(customerInternalReference ? { customerInternalReference } : {}),
        ...(userReference ? { userReference } : {}),
      }),
    ...options.endpoint,
  });
  const callbacks = createCallbackHandler({
    client,
    ...(store ? { store } : {}),
    allowedSources: 'any',
    retryDelayMs: 5,
    maxRetryDelayMs: 20,
    onError: (error) => errors.push(error),
    onResult: ({ workflowExecutionId, customerInternalReference, userReference }) =>
      tell({
        path: 'callback',
        workflowExecutionId,
        ...(customerInternalReference ? { customerInternalReference } : {}),
        ...(userReference ? { userReference } : {}),
      }),
    ...options.callbacks,
  });
  const checkout = async () => {
    const answer = await endpoint(
      new Request(`${SHOP}/device-risk`, {
        method: 'POST',
        headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': 'key-0000000001' },
        body: JSON.stringify({ blackbox: BLACKBOX }),
      }),
    );
    expect(answer.status).toBe(202);
    await queue.idle();
  };
  // The service writes UUIDs as it likes: the callback's upper case is the same execution.
  const id = EXECUTION.toUpperCase();
  const callback = async () => {
    const answer = await callbacks(
      new Request('https://shop.test/callbacks', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          callbackSentAt: '2026-11-27T10:00:00.000Z',
          userReference: 'user-1',
          workflowExecution: {
            id,
            href: `${RETRIEVAL}/api/v1/accounts/${ACCOUNT}/workflow-executions/${id}`,
            definitionKey: 10020,
            status: 'PROCESSED',
          },
          account: { id: ACCOUNT, href: `${RETRIEVAL}/api/v1/accounts/${ACCOUNT}` },
        }),
      }),
    );
    expect(answer.status).toBe(200);
    await callbacks.idle();
  };
  /** The callback's record, done once the callback handler has nothing left to do. */
  const callbackDone = async () => {
    if (!store) return true;
    const record = await store.get(`client-1:callback:${EXECUTION}:PROCESSED:${ACCOUNT}`);
    return record !== undefined && (JSON.parse(record) as { state: string }).state === 'done';
  };
  const close = async () => {
    await callbacks.close();
    await endpoint.close();
  };
  return { told, errors, checkout, callback, callbackDone, close };
}

const ORDER = { customerInternalReference: 'order-1', userReference: 'user-1' };

describe('each decision told once per execution, by the callback or the queued check', () => {
  it('callback first: the callback tells it, with the order; the queued check then calls nothing', async () => {
    const both = wired(stubClient(), createMemoryStore());
    await both.callback();
    await both.checkout();
    expect(both.told).toEqual([{ path: 'callback', workflowExecutionId: EXECUTION.toUpperCase(), ...ORDER }]);
    expect(await both.callbackDone()).toBe(true);
    expect(both.errors).toEqual([]);
    await both.close();
  });

  it('queue first: the queued check tells it, with the order; the callback then calls nothing and is done', async () => {
    const both = wired(stubClient(), createMemoryStore());
    await both.checkout();
    await both.callback();
    expect(both.told).toEqual([{ path: 'queue', workflowExecutionId: EXECUTION, ...ORDER }]);
    expect(await both.callbackDone()).toBe(true);
    expect(both.errors).toEqual([]);
    await both.close();
  });

  it('both at once: told once', async () => {
    const both = wired(stubClient(), createMemoryStore());
    await Promise.all([both.checkout(), both.callback()]);
    await expect.poll(both.callbackDone).toBe(true);
    expect(both.told).toHaveLength(1);
    expect(both.told[0]).toMatchObject(ORDER);
    await both.close();
  });

  /** `wired` with the onResult of the `holding` path held until `open()`, once it is entered (`entered`). */
  function heldWhileTelling(holding: Told['path'], extra: Parameters<typeof wired>[2] = {}) {
    let open!: () => void;
    let enter!: () => void;
    const entered = new Promise<void>((resolve) => (enter = resolve));
    const held = new Promise<void>((resolve) => (open = resolve));
    const both = wired(stubClient(), createMemoryStore(), {
      holding,
      hold: () => {
        enter();
        return held;
      },
      ...extra,
    });
    return { both, entered, open };
  }

  it('a callback while the queued check is telling waits for it, quietly, and then calls nothing', async () => {
    const { both, entered, open } = heldWhileTelling('queue');
    const checked = both.checkout();
    await entered;
    await both.callback();
    expect(both.told).toEqual([]);
    open();
    await checked;
    await expect.poll(both.callbackDone).toBe(true);
    expect(both.told).toEqual([{ path: 'queue', workflowExecutionId: EXECUTION, ...ORDER }]);
    expect(both.errors).toEqual([]);
    await both.close();
  });

  /** The callback enters its onResult, held; the checkout's queued check comes meanwhile; 50 ms on, the callback goes on. */
  async function checkoutWhileCallbackTells(extra: Parameters<typeof wired>[2] = {}) {
    const { both, entered, open } = heldWhileTelling('callback', extra);
    const called = both.callback();
    await entered;
    const checked = both.checkout();
    await new Promise((resolve) => setTimeout(resolve, 50));
    open();
    await Promise.all([called, checked]);
    return both;
  }

  it('a queued check while the callback is telling comes back, quietly, and then calls nothing', async () => {
    const both = await checkoutWhileCallbackTells();
    expect(both.told).toEqual([{ path: 'callback', workflowExecutionId: EXECUTION.toUpperCase(), ...ORDER }]);
    expect(both.errors).toEqual([]);
    await both.close();
  });

  it('the callback telling, then throwing: the queued check, come back, tells it; the callback then calls nothing', async () => {
    const both = await checkoutWhileCallbackTells({
      throwsOnce: 'callback',
      // The callback's retry comes after the queued check's (1 s).
      callbacks: { retryDelayMs: 1500, maxRetryDelayMs: 1500 },
    });
    expect(both.told).toEqual([{ path: 'queue', workflowExecutionId: EXECUTION, ...ORDER }]);
    await expect.poll(both.callbackDone).toBe(true);
    expect(both.told).toHaveLength(1);
    expect(both.errors).toMatchObject([{ message: 'callback onResult failed' }]);
    await both.close();
  });

  it('queue first, its onResult throwing: the claim is let go, the queued check comes back and tells it; the callback finds it told', async () => {
    const both = wired(stubClient(), createMemoryStore(), { throwsOnce: 'queue' });
    // The queue is idle once the job's second try told it (no callback need ever come).
    await both.checkout();
    expect(both.told).toEqual([{ path: 'queue', workflowExecutionId: EXECUTION, ...ORDER }]);
    expect(both.errors).toMatchObject([{ message: 'queue onResult failed' }]);
    await both.callback();
    await expect.poll(both.callbackDone).toBe(true);
    expect(both.told).toHaveLength(1);
    expect(both.errors).toHaveLength(1);
    await both.close();
  });

  it('callback first, its onResult throwing: one tell in the end, by its retry or the queued check', async () => {
    const both = wired(stubClient(), createMemoryStore(), { throwsOnce: 'callback' });
    await both.callback();
    await both.checkout();
    await expect.poll(both.callbackDone).toBe(true);
    expect(both.told).toHaveLength(1);
    expect(both.told[0]).toMatchObject(ORDER);
    expect(both.errors).toMatchObject([{ message: 'callback onResult failed' }]);
    await both.close();
  });

  it('callback alone, its onResult throwing once: its retry tells it', async () => {
    const both = wired(stubClient(), createMemoryStore(), { throwsOnce: 'callback' });
    await both.callback();
    await expect.poll(both.callbackDone).toBe(true);
    expect(both.told).toEqual([{ path: 'callback', workflowExecutionId: EXECUTION.toUpperCase(), ...ORDER }]);
    await both.close();
  });

  it('neither handler given a store: made with one client, they share its markers in memory', async () => {
    const both = wired(stubClient(), undefined);
    await both.checkout();
    await both.callback();
    expect(both.told).toEqual([{ path: 'queue', workflowExecutionId: EXECUTION, ...ORDER }]);
    await both.close();
  });
});
