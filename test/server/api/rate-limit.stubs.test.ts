// The service's limits as the Device Risk client keeps them (src/server/api/rate-limit.ts), on
// a stub API: account requests and retrievals wait for a slot shared through the token
// source's store, a 429 makes every client on the store back off, and a wait that would
// outlast the call is answered rate_limited at once. Upload and finalize are not limited.
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createDeviceRiskClient,
  DeviceRiskTransaction,
  type DeviceRiskClientOptions,
} from '../../../src/server/api/device-risk-client.js';
import type { TokenSource } from '../../../src/server/api/token-source.js';
import { createMemoryStore, type Store } from '../../../src/server/store/store.js';
import { ACCOUNT, BASE, CREDENTIAL, EXECUTION, EXECUTION_URL, PART_URL, T0, UA } from '../../support/api-shapes.js';

const BODY = { customerInternalReference: 'order-1', workflowDefinition: { key: 10020 } };

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
const created = () =>
  json({
    account: { id: ACCOUNT },
    workflowExecution: {
      id: EXECUTION,
      credentials: [
        {
          id: CREDENTIAL,
          category: 'DATA',
          allowedChannels: ['API'],
          api: { token: 'tx-token', parts: { device_risk: PART_URL }, workflowExecution: EXECUTION_URL },
        },
      ],
    },
  });
const tooMany = (retryAfter?: string) =>
  json({ title: 'Too Many Requests', status: 429, detail: 'Request limit exceeded' }, 429, {
    ...(retryAfter === undefined ? {} : { 'retry-after': retryAfter }),
  });

/** The API: each call answers the next of `answers` (the last repeats). */
function api(...answers: Array<() => Response>) {
  const sent: string[] = [];
  const fetch = (async (url: string, init: RequestInit) => {
    sent.push(`${init.method} ${new URL(url).pathname}`);
    return answers[Math.min(sent.length - 1, answers.length - 1)]!();
  }) as unknown as typeof globalThis.fetch;
  return { fetch, sent };
}

/** A token source whose limits live in `store` (as createTokenSource's live in its store). */
const tokens = (store: Store): TokenSource => ({
  tokenUrl: 'https://auth.example/oauth2/token',
  clientId: 'client-1',
  getToken: async () => 'at-1',
  invalidate: async () => {},
  seal: async (s) => s,
  unseal: async (s) => s,
  limitStore: { store, keyOf: async (name) => `client-1:${name}` },
});

function client(fetch: typeof globalThis.fetch, extra: Partial<DeviceRiskClientOptions> & { store?: Store } = {}) {
  const waits: number[] = [];
  const { store = createMemoryStore(), ...options } = extra;
  const c = createDeviceRiskClient({
    tokenSource: tokens(store),
    baseUrl: BASE,
    userAgent: UA,
    fetch,
    sleep: async (ms) => void waits.push(ms),
    ...options,
  });
  return { client: c, waits, store };
}

afterEach(() => {
  vi.useRealTimers();
});

/**
 * From now on, the timers (the slot polls, the time limits) and the clock move only when the
 * test moves them: how long a call took is how far the test had to move them.
 */
const standingTimers = () =>
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });

/** When `promise` settled, on the clock; Infinity while it has not. */
function settling(promise: Promise<unknown>) {
  const seen = { at: Infinity };
  promise.then(
    () => (seen.at = Date.now()),
    () => (seen.at = Date.now()),
  );
  return seen;
}

describe('the account limit', () => {
  it('a create waits for a slot instead of being sent to be refused', async () => {
    const service = api(created);
    // 10 a second, one at a time: each slot is free again 110 ms after its answer.
    const { client: c } = client(service.fetch, { limits: { accountRequestsPerSecond: 10, accountBurst: 1 } });
    const started = performance.now();
    await c.createAccount(BODY);
    await c.createAccount(BODY);
    expect(performance.now() - started).toBeGreaterThanOrEqual(100);
    expect(service.sent).toEqual(['POST /api/v1/accounts', 'POST /api/v1/accounts']);
  });

  it('a create that finds no slot within half its time limit is rate_limited with a Retry-After, and nothing is sent', async () => {
    standingTimers();
    const service = api(created);
    const { client: c } = client(service.fetch, { accountTimeoutMs: 400 });
    for (let i = 0; i < 5; i++) await c.createAccount(BODY); // the default burst
    const started = Date.now();
    const refused = c.createAccount(BODY);
    const answered = settling(refused);
    await vi.advanceTimersByTimeAsync(400); // its whole time limit
    await expect(refused).rejects.toMatchObject({
      code: 'rate_limited',
      status: 429,
      operation: 'account create',
      retryAfter: 5, // the first slot's window: 5 requests at 1 a second
    });
    expect(answered.at - started).toBeLessThan(400);
    expect(service.sent).toHaveLength(5);
  });

  it('clients on one store share the slots; on another store they do not', async () => {
    const store = createMemoryStore();
    const limits = { accountRequestsPerSecond: 1, accountBurst: 1 };
    const first = client(api(created).fetch, { store, limits });
    const second = client(api(created).fetch, { store, limits, accountTimeoutMs: 200 });
    const elsewhere = client(api(created).fetch, { limits, accountTimeoutMs: 200 });
    await first.client.createAccount(BODY);
    await expect(second.client.createAccount(BODY)).rejects.toMatchObject({ code: 'rate_limited' });
    await expect(elsewhere.client.createAccount(BODY)).resolves.toBeInstanceOf(DeviceRiskTransaction);
  });

  it('a 429 makes every client on the store wait its Retry-After, the one that got it once', async () => {
    const store = createMemoryStore();
    const refused = client(api(() => tooMany('2'), created).fetch, { store, now: () => T0 });
    const other = client(api(created).fetch, { store, now: () => T0 });
    await refused.client.createAccount(BODY);
    expect(refused.waits).toEqual([2000]);
    await other.client.createAccount(BODY);
    expect(other.waits).toEqual([2000]);
  });

  it('a 429 without Retry-After backs off with jitter, for the fleet too', async () => {
    // The store on the same standing clock: a backoff of a few ms does not expire before it is read.
    const store = createMemoryStore({ now: () => T0 });
    const refused = client(api(() => tooMany(), created).fetch, { store, now: () => T0 });
    await refused.client.createAccount(BODY);
    expect(refused.waits).toHaveLength(1);
    expect(Number(await store.get('client-1:account-backoff'))).toBe(T0 + refused.waits[0]!);
  });

  it('a 429 whose Retry-After outlasts half the time limit is the answer at once, with it', async () => {
    const service = api(() => tooMany('6'), created);
    const { client: c, waits } = client(service.fetch, { accountTimeoutMs: 12_000, now: () => T0 });
    await expect(c.createAccount(BODY)).rejects.toMatchObject({
      code: 'rate_limited',
      status: 429,
      operation: 'account create',
      retryAfter: 6,
    });
    expect(waits).toEqual([]);
    expect(service.sent).toHaveLength(1);
    // The fleet was told: another create on the store is refused without asking.
    await expect(c.createAccount(BODY)).rejects.toMatchObject({ code: 'rate_limited', retryAfter: 6 });
    expect(service.sent).toHaveLength(1);
  });

  it('a Retry-After that ends just within half the time limit is waited', async () => {
    const service = api(() => tooMany('5'), created);
    const { client: c, waits } = client(service.fetch, { accountTimeoutMs: 10_002, now: () => T0 });
    await c.createAccount(BODY);
    expect(waits).toEqual([5000]);
  });

  it('a store slow to take the slot back does not hold up the answer', async () => {
    standingTimers();
    const memory = createMemoryStore();
    // The release never answers (a frozen Redis): the create's answer comes all the same.
    const store: Store = { ...memory, compareAndSet: () => new Promise<boolean>(() => {}) };
    const { client: c } = client(api(created).fetch, { store, accountTimeoutMs: 60_000 });
    const started = Date.now();
    const creating = c.createAccount(BODY);
    const answered = settling(creating);
    await vi.advanceTimersByTimeAsync(1000);
    expect(answered.at - started).toBeLessThan(1000);
    await expect(creating).resolves.toBeInstanceOf(DeviceRiskTransaction);
  });

  it('a create whose slot the store gave too late (past half its limit) is not sent: store_unavailable', async () => {
    const memory = createMemoryStore();
    const slow: Store = {
      ...memory,
      setIfAbsent: async (key, value, ttlMs) => {
        await new Promise((resolve) => setTimeout(resolve, 150));
        return memory.setIfAbsent(key, value, ttlMs);
      },
    };
    const service = api(created);
    const { client: c } = client(service.fetch, { store: slow, accountTimeoutMs: 200 });
    await expect(c.createAccount(BODY)).rejects.toMatchObject({ code: 'store_unavailable', retryAfter: 1 });
    expect(service.sent).toEqual([]);
  });

  it('an update is under the same limit', async () => {
    const service = api(created);
    const { client: c } = client(service.fetch, {
      limits: { accountRequestsPerSecond: 1, accountBurst: 1 },
      accountTimeoutMs: 200,
    });
    await c.createAccount(BODY);
    await expect(c.updateAccount(ACCOUNT, BODY)).rejects.toMatchObject({
      code: 'rate_limited',
      operation: 'account update',
    });
    expect(service.sent).toHaveLength(1);
  });
});

describe('the retrieval limit', () => {
  const ids = { accountId: ACCOUNT, workflowExecutionId: EXECUTION };
  const status = () => json({ workflowExecution: { status: 'PROCESSED' } });

  it('status and details share it; past it a read is rate_limited within half its time limit', async () => {
    const service = api(status);
    const { client: c } = client(service.fetch, { limits: { retrievalsPerSecond: 1 }, timeoutMs: 300 });
    await c.status(ids);
    await expect(c.details(ids)).rejects.toMatchObject({ code: 'rate_limited', operation: 'details' });
    await expect(c.status(ids)).rejects.toMatchObject({ code: 'rate_limited', operation: 'status' });
    expect(service.sent).toHaveLength(1);
  });

  it('15 a second by default', async () => {
    const service = api(status);
    const { client: c } = client(service.fetch, { timeoutMs: 300 });
    for (let i = 0; i < 15; i++) await c.status(ids);
    await expect(c.status(ids)).rejects.toMatchObject({ code: 'rate_limited', operation: 'status' });
    expect(service.sent).toHaveLength(15);
  });

  it('a 429 on a read makes the fleet back off reads, not account requests', async () => {
    const store = createMemoryStore();
    const reader = client(api(() => tooMany('3'), status).fetch, { store, now: () => T0 });
    expect(await reader.client.status(ids)).toBe('PROCESSED');
    expect(reader.waits).toEqual([3000]);
    expect(await store.get('client-1:retrieval-backoff')).toBe(String(T0 + 3000));
    expect(await store.get('client-1:account-backoff')).toBeUndefined();
  });
});

describe('upload and finalize', () => {
  it('are not limited: docs/vendor-contract.md#the-service limits account requests and retrievals only', async () => {
    const service = api(() => json({}));
    const { client: c } = client(service.fetch, {
      limits: { accountRequestsPerSecond: 0.001, accountBurst: 1, retrievalsPerSecond: 0.001 },
      timeoutMs: 200,
    });
    const tx = new DeviceRiskTransaction({
      accountId: ACCOUNT,
      workflowExecutionId: EXECUTION,
      credentialId: CREDENTIAL,
      uploadUrl: PART_URL,
      finalizeUrl: EXECUTION_URL,
      tokenExpiresAt: Date.now() + 600_000,
      token: 'tx-token',
    });
    for (let i = 0; i < 20; i++) await c.uploadBlackbox(tx, '0400abc');
    for (let i = 0; i < 20; i++) await c.finalize(tx);
    expect(service.sent).toHaveLength(40);
  });
});

describe('the limits option', () => {
  it.each([
    [{ accountRequestsPerSecond: 0 }, 'limits.accountRequestsPerSecond'],
    [{ accountBurst: -1 }, 'limits.accountBurst'],
    [{ retrievalsPerSecond: Infinity }, 'limits.retrievalsPerSecond'],
    [{ retrievalsPerSecond: NaN }, 'limits.retrievalsPerSecond'],
    [{ accountRequestsPerSecond: '2' as unknown as number }, 'limits.accountRequestsPerSecond'],
  ])('%j is refused, naming the option', (limits, name) => {
    expect(() => client(api(created).fetch, { limits })).toThrow(
      expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining(name) }),
    );
  });

  it('a token source of your own without a store keeps the limits per client', async () => {
    const own: TokenSource = { ...tokens(createMemoryStore()) };
    delete (own as { limitStore?: unknown }).limitStore;
    const limits = { accountRequestsPerSecond: 1, accountBurst: 1 };
    const make = () =>
      createDeviceRiskClient({
        tokenSource: own,
        baseUrl: BASE,
        userAgent: UA,
        fetch: api(created).fetch,
        limits,
        accountTimeoutMs: 200,
      });
    const first = make();
    await first.createAccount(BODY);
    await expect(first.createAccount(BODY)).rejects.toMatchObject({ code: 'rate_limited' });
    await expect(make().createAccount(BODY)).resolves.toBeInstanceOf(DeviceRiskTransaction);
  });
});
