// One transaction with a blackbox per Idempotency-Key, whatever stops or stalls: the key's
// record carries an account create's intent before the create, each attempt replaces only
// the version it wrote (fencing), and a transaction the kit made is never dropped silently.
import { describe, expect, it } from 'vitest';
import { createDeviceRiskHandler, createMemoryStore, type DeviceRiskClient, type DeviceRiskHandlerOptions, type Store } from '../src/server/index.js';
import { stubClient } from './support/stub-client.js';

const SHOP = 'https://shop.example';
const BLACKBOX = '0400' + 'nVQ+/abc'.repeat(150) + '==';
const KEY = 'checkout-key-1';

const post = () =>
  new Request(`${SHOP}/device-risk`, { method: 'POST', headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': KEY }, body: JSON.stringify({ blackbox: BLACKBOX }) });

function handlerWith(client: DeviceRiskClient, extra: Partial<DeviceRiskHandlerOptions> = {}) {
  const errors: Array<{ code?: string; message: string }> = [];
  const handler = createDeviceRiskHandler({
    client,
    allowedOrigins: [SHOP],
    workflowKey: 10020,
    resolveCustomer: () => ({ customerInternalReference: 'order-1' }),
    onError: (error) => void errors.push(error as { code?: string; message: string }),
    ...extra,
  });
  return { handler, errors };
}

/** The one record the handler keeps for KEY, as stored. */
async function recordIn(store: Store): Promise<Record<string, unknown> & { creating?: { owner: string; until: number } }> {
  const keys = (store as Store & { keys?: () => string[] }).keys?.() ?? [];
  const key = keys.find((k) => k.endsWith(`:${KEY}`))!;
  return JSON.parse((await store.get(key))!) as never;
}

/** A memory store that lists its keys, and whose writes can be made to fail. */
function failingStore() {
  const memory = createMemoryStore();
  const keys = new Set<string>();
  let failing: ((value: string) => boolean) | undefined;
  const guard = (value: string) => {
    if (failing?.(value)) throw new Error('store away');
  };
  const store: Store & { keys: () => string[]; fail: (when?: (value: string) => boolean) => void } = {
    ...memory,
    set: async (k, v, t) => (guard(v), keys.add(k), memory.set(k, v, t)),
    setIfAbsent: async (k, v, t) => (guard(v), keys.add(k), memory.setIfAbsent(k, v, t)),
    compareAndSet: async (k, e, v, t) => (guard(v), memory.compareAndSet(k, e, v, t)),
    keys: () => [...keys],
    fail: (when) => void (failing = when),
  };
  return store;
}

describe('the create intent', () => {
  it('is in the record before the account create, and gone once the transaction is recorded', async () => {
    const store = failingStore();
    const seen: unknown[] = [];
    const { client } = stubClient({ createAccount: (async () => (seen.push(await recordIn(store)), stubClient().client.createAccount({} as never))) as never });
    const { handler } = handlerWith(client, { store });
    expect((await handler(post())).status).toBe(200);
    expect(seen).toEqual([expect.objectContaining({ creating: { owner: expect.any(String), until: expect.any(Number) } })]);
    expect((await recordIn(store)).creating).toBeUndefined();
  });

  it("another attempt's intent still running: 409 with Retry-After, and no second create", async () => {
    const store = failingStore();
    const { client, creates } = stubClient();
    // The handler's clock stands still: the intent is still running when the second attempt reads it, however slow the machine.
    const { handler } = handlerWith(client, { store, idempotencyLeaseMs: 200, now: () => 1_800_000_000_000 });
    // An attempt that wrote its intent and is still on the wire (on another instance).
    store.fail((value) => value.includes('"transaction"'));
    const first = await handler(post());
    expect(first.status).toBe(503); // its transaction could not be recorded
    store.fail(undefined);
    const record = await recordIn(store);
    expect(record.creating).toBeDefined();
    const second = await handler(post());
    expect(second.status).toBe(409);
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await second.json()).toMatchObject({ error: { code: 'idempotency_key_in_use' } });
    expect(creates()).toBe(1);
  });

  it('a transaction made but never recorded is reported, with its execution id; never silent', async () => {
    const store = failingStore();
    const { client } = stubClient();
    const { handler, errors } = handlerWith(client, { store, idempotencyLeaseMs: 200 });
    store.fail((value) => value.includes('"transaction"'));
    expect((await handler(post())).status).toBe(503);
    expect(errors).toContainEqual(expect.objectContaining({ code: 'orphaned_transaction', message: expect.stringContaining('wf-1') }));
  });

  it('an intent whose time ran out (its owner died with the create on the wire): the next attempt creates, and reports the possible orphan', async () => {
    let now = 1_800_000_000_000;
    const store = failingStore();
    const { client, creates, calls } = stubClient();
    const { handler, errors } = handlerWith(client, { store, now: () => now, idempotencyLeaseMs: 200 });
    store.fail((value) => value.includes('"transaction"'));
    expect((await handler(post())).status).toBe(503);
    store.fail(undefined);
    now += 1000 + 200; // accountTimeoutMs + the lease
    const errorsBefore = errors.length;
    expect((await handler(post())).status).toBe(200);
    expect(creates()).toBe(2);
    expect(calls.filter((c) => c.startsWith('upload'))).toEqual(['upload wf-2']);
    expect(errors.slice(errorsBefore)).toContainEqual(expect.objectContaining({ code: 'orphaned_transaction' }));
  });

  it('a store away for longer than the lease, within the create window: the transaction is recorded when it is back, and resumed', async () => {
    const store = failingStore();
    let failures = 0;
    const { client, creates, calls } = stubClient({ accountTimeoutMs: 5000 } as Partial<DeviceRiskClient>);
    const { handler, errors } = handlerWith(client, { store, idempotencyLeaseMs: 150 });
    store.fail((value) => value.includes('"transaction"') && failures++ < 4); // 4 × 100 ms: past the lease of 150 ms
    expect((await handler(post())).status).toBe(200);
    expect(creates()).toBe(1);
    expect(calls.filter((c) => c.startsWith('upload'))).toEqual(['upload wf-1']);
    expect(errors.filter((e) => e.code === 'orphaned_transaction')).toEqual([]);
  });
});

describe('fencing', () => {
  it('an attempt whose record another attempt replaced writes nothing more and calls nothing more: 409', async () => {
    const store = failingStore();
    const { client, calls } = stubClient({
      // While this attempt creates, another takes the key over and writes its own version.
      createAccount: (async () => {
        const key = store.keys().find((k) => k.endsWith(`:${KEY}`))!;
        await store.set(key, JSON.stringify({ ...(await recordIn(store)), creating: { owner: 'another attempt', until: Date.now() + 60_000 } }), 60_000);
        return stubClient().client.createAccount({} as never);
      }) as never,
    });
    const { handler, errors } = handlerWith(client, { store });
    const answer = await handler(post());
    expect(answer.status).toBe(409);
    expect(calls.filter((c) => !c.startsWith('create'))).toEqual([]); // no upload, no finalize
    expect(errors).toContainEqual(expect.objectContaining({ code: 'orphaned_transaction' }));
  });

  it('an attempt that lost its lease stops before its next call', async () => {
    const memory = createMemoryStore();
    let renewed!: () => void;
    const renewal = new Promise<void>((resolve) => (renewed = resolve));
    // Every renewal finds the lease gone (another attempt has it).
    const store: Store = { ...memory, compareAndSet: async (k, e, v, t) => (k.endsWith(':lease') ? (renewed(), false) : memory.compareAndSet(k, e, v, t)) };
    const { client, calls } = stubClient({
      createAccount: (async () => {
        await renewal;
        await new Promise((r) => setTimeout(r)); // its answer is read
        return stubClient().client.createAccount({} as never);
      }) as never,
    });
    const { handler } = handlerWith(client, { store, idempotencyLeaseMs: 300 });
    const answer = await handler(post());
    expect(answer.status).toBe(409);
    expect(calls).toEqual([]); // the stub's own calls: no upload, no finalize
  });
});
