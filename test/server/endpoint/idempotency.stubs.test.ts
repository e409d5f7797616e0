// One transaction with a blackbox per Idempotency-Key, whatever stops or stalls: the key's
// record carries an account create's intent before the create, each attempt replaces only
// the version it wrote (fencing), and a transaction the kit made is never dropped silently.
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createMemoryStore,
  type DeviceRiskClient,
  type DeviceRiskHandlerOptions,
  type Store,
} from '../../../src/server/index.js';
import { BLACKBOX, handlerWith as checkoutHandler, SHOP } from '../../support/kit.js';
import { accountCreateLimited, stubClient } from '../../support/stub-client.js';
import { createIdempotency } from '../../../src/server/endpoint/idempotency.js';
import { recordKeyOf } from '../../../src/server/endpoint/key-record.js';
import { recordingStore, refusingStore } from '../../support/store-doubles.js';

const KEY = 'checkout-key-1';

const post = () =>
  new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': KEY },
    body: JSON.stringify({ blackbox: BLACKBOX }),
  });

function handlerWith(client: DeviceRiskClient, extra: Partial<DeviceRiskHandlerOptions> = {}) {
  const errors: Array<{ code?: string; message: string }> = [];
  const handler = checkoutHandler(client, {
    onError: (error) => void errors.push(error as { code?: string; message: string }),
    ...extra,
  });
  return { handler, errors };
}

/**
 * An attempt whose lease is lost while its account create runs: every renewal finds the lease
 * gone (another attempt has it), and the create answers after the first renewal.
 */
function losingLease() {
  const memory = createMemoryStore();
  let renewed!: () => void;
  const renewal = new Promise<void>((resolve) => (renewed = resolve));
  const store: Store = {
    ...memory,
    compareAndSet: async (k, e, v, t) => (k.endsWith(':lease') ? (renewed(), false) : memory.compareAndSet(k, e, v, t)),
  };
  const { client, calls } = stubClient({
    createAccount: async () => {
      await renewal;
      await new Promise((r) => setTimeout(r)); // its answer is read
      return stubClient().client.createAccount({} as never);
    },
  });
  return { calls, ...handlerWith(client, { store, idempotencyLeaseMs: 300 }) };
}

/**
 * The fingerprint the handler gives post()'s request, written out from the record's format
 * (SHA-256 of origin, customer and blackbox) rather than by calling fingerprintOf: a record
 * written by another version must still match.
 */
async function fingerprintOfPost(): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(`${SHOP}\norder-1\n${BLACKBOX}`));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The record kept for KEY, undefined when there is none. */
async function recordOrNone(store: Store): Promise<string | undefined> {
  const keys = (store as Store & { keys?: () => string[] }).keys?.() ?? [];
  const key = keys.find((k) => k.endsWith(`:${KEY}`));
  return key === undefined ? undefined : store.get(key);
}

/** The one record the handler keeps for KEY, as stored. */
async function recordIn(
  store: Store,
): Promise<Record<string, unknown> & { creating?: { owner: string; until: number } }> {
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
    set: async (k, v, t) => {
      guard(v);
      keys.add(k);
      return memory.set(k, v, t);
    },
    setIfAbsent: async (k, v, t) => {
      guard(v);
      keys.add(k);
      return memory.setIfAbsent(k, v, t);
    },
    compareAndSet: async (k, e, v, t) => {
      guard(v);
      return memory.compareAndSet(k, e, v, t);
    },
    keys: () => [...keys],
    fail: (when) => void (failing = when),
  };
  return store;
}

/** `client` with its account creates refused by the service (429, retry after 1 s) while `refused()`. */
function refusingCreates(client: DeviceRiskClient, refused: () => boolean): DeviceRiskClient {
  const create = client.createAccount.bind(client);
  return {
    ...client,
    createAccount: async (body) => (refused() ? Promise.reject(accountCreateLimited()) : create(body)),
  };
}

describe('the create intent', () => {
  it('is in the record before the account create, and gone once the transaction is recorded', async () => {
    const store = failingStore();
    const seen: unknown[] = [];
    const { client } = stubClient({
      createAccount: async () => {
        seen.push(await recordIn(store));
        return stubClient().client.createAccount({} as never);
      },
    });
    const { handler } = handlerWith(client, { store });
    expect((await handler(post())).status).toBe(200);
    expect(seen).toEqual([
      expect.objectContaining({ creating: { owner: expect.any(String), until: expect.any(Number) } }),
    ]);
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
    expect(first.status).toBe(503); // its transaction is not recorded yet (the store stays away)
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
    // Still being written when the request was answered; given up (and said) once the create window ends.
    expect(errors.filter((e) => e.code === 'orphaned_transaction')).toEqual([]);
    await expect
      .poll(() => errors, { timeout: 30_000 })
      .toContainEqual(
        expect.objectContaining({ code: 'orphaned_transaction', message: expect.stringContaining('wf-1') }),
      );
  });

  it('an intent whose time ran out (its owner died with the create on the wire): the next attempt creates, and reports the possible orphan', async () => {
    const now = 1_800_000_000_000;
    const store = failingStore();
    const { client, creates, calls } = stubClient();
    const { handler, errors } = handlerWith(client, { store, now: () => now, idempotencyLeaseMs: 200 });
    // The record as a dead owner left it: its intent, no transaction, and its time just ran out.
    await store.set(
      `client-1:idempotency:${KEY}`,
      JSON.stringify({ fingerprint: await fingerprintOfPost(), creating: { owner: 'dead', until: now } }),
      60_000,
    );
    expect((await handler(post())).status).toBe(200);
    expect(creates()).toBe(1);
    expect(calls.filter((c) => c.startsWith('upload'))).toEqual(['upload wf-1']);
    expect(errors).toContainEqual(expect.objectContaining({ code: 'orphaned_transaction' }));
  });

  it('a create never sent because the store went away (Redis killed, a failover): no orphan is reported when the key is checked after it', async () => {
    let now = 1_800_000_000_000;
    const memory = createMemoryStore();
    let away = false;
    const gone = async () => Promise.reject(new Error('Connection is closed.'));
    // Redis as a failover or a SIGKILL leaves it for a moment: every call fails, then it is back with what it held.
    const store: Store = {
      get: (k) => (away ? gone() : memory.get(k)),
      set: (k, v, t) => (away ? gone() : memory.set(k, v, t)),
      setIfAbsent: (k, v, t) => (away ? gone() : memory.setIfAbsent(k, v, t)),
      compareAndSet: (k, e, v, t) => (away ? gone() : memory.compareAndSet(k, e, v, t)),
      compareAndDelete: (k, e) => (away ? gone() : memory.compareAndDelete(k, e)),
      delete: (k) => (away ? gone() : memory.delete(k)),
    };
    const { DeviceRiskError } = await import('../../../src/server/errors.js');
    let first = true;
    const service = stubClient();
    const { client } = stubClient({
      // The first create stops before anything is sent: the service's limit, kept in the same Redis, could not be read.
      createAccount: async (body) => {
        if (!first) return service.client.createAccount(body);
        first = false;
        away = true;
        throw new DeviceRiskError('store_unavailable', 'the rate limit could not be read', {
          retryAfter: 1,
          operation: 'store',
        });
      },
    });
    const { handler, errors } = handlerWith(client, { store, now: () => now, idempotencyLeaseMs: 200 });
    expect((await handler(post())).status).toBe(503);
    expect(service.calls).toEqual([]);
    // Redis is back; the next attempt comes once any create of the first would have timed out.
    await new Promise((r) => setTimeout(r, 50));
    away = false;
    await new Promise((r) => setTimeout(r, 400));
    now += 60_000;
    expect((await handler(post())).status).toBe(200);
    // One transaction for the key, so nothing to report.
    expect(service.creates()).toBe(1);
    expect(errors.filter((e) => e.code === 'orphaned_transaction')).toEqual([]);
  });

  it('a store away for longer than the request may wait: 503 at once, the transaction written once it is back, and the retry resumes it', async () => {
    const store = failingStore();
    const { client, creates, calls } = stubClient({ accountTimeoutMs: 60_000, status: async () => 'INITIATED' });
    const { handler, errors } = handlerWith(client, { store, idempotencyWaitMs: 300 });
    store.fail((value) => value.includes('"transaction"'));
    const first = await handler(post());
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('1');
    expect(await first.json()).toMatchObject({ error: { code: 'store_unavailable' } });
    expect(errors).toContainEqual(
      expect.objectContaining({
        code: 'store_unavailable',
        retryAfter: 1,
        operation: 'store',
        message: expect.stringContaining('still being written'),
      }),
    );
    expect(calls).toEqual(['create']); // no upload before the transaction is recorded
    store.fail(undefined);
    await expect.poll(async () => (await recordIn(store)).transaction, { timeout: 10_000 }).toBeDefined();
    expect((await handler(post())).status).toBe(200);
    expect(creates()).toBe(1);
    expect(calls).toEqual(['create', 'upload wf-1', 'finalize wf-1']);
    expect(errors.filter((e) => e.code === 'orphaned_transaction')).toEqual([]);
  });
});

describe('fencing', () => {
  it('an attempt whose record another attempt replaced writes nothing more and calls nothing more: 409', async () => {
    const store = failingStore();
    const { client, calls } = stubClient({
      // While this attempt creates, another takes the key over and writes its own version.
      createAccount: async () => {
        const key = store.keys().find((k) => k.endsWith(`:${KEY}`))!;
        await store.set(
          key,
          JSON.stringify({
            ...(await recordIn(store)),
            creating: { owner: 'another attempt', until: Date.now() + 60_000 },
          }),
          60_000,
        );
        return stubClient().client.createAccount({} as never);
      },
    });
    const { handler, errors } = handlerWith(client, { store });
    const answer = await handler(post());
    expect(answer.status).toBe(409);
    expect(calls.filter((c) => !c.startsWith('create'))).toEqual([]); // no upload, no finalize
    expect(errors).toContainEqual(expect.objectContaining({ code: 'orphaned_transaction' }));
  });

  it('an attempt whose record another attempt replaced before the decision came tells no decision: 409', async () => {
    const store = failingStore();
    const { client } = stubClient({
      // While this attempt reads the details, another takes the key over and writes its own version.
      details: async (tx) => {
        const key = store.keys().find((k) => k.endsWith(`:${KEY}`))!;
        await store.set(key, JSON.stringify({ ...(await recordIn(store)), taken: 'another attempt' }), 60_000);
        return stubClient().client.details(tx);
      },
    });
    const decided: unknown[] = [];
    const { handler } = handlerWith(client, { store, onResult: (details) => void decided.push(details) });
    expect((await handler(post())).status).toBe(409);
    expect(decided).toEqual([]);
  });

  it('an attempt that lost its lease stops before its next call', async () => {
    const { handler, calls } = losingLease();
    const answer = await handler(post());
    expect(answer.status).toBe(409);
    expect(calls).toEqual([]); // the stub's own calls: no upload, no finalize
  });
});

describe('a lease the store stops confirming', () => {
  it('an owner whose renewals the store has not confirmed for a whole lease stops before its next call: 503, Retry-After 1; the next attempt resumes', async () => {
    let leaseAway = true;
    let clock = Date.now();
    // The lease's renewals fail (the store is away for them); the record's writes still land.
    const store = refusingStore(createMemoryStore(), (key) => key.endsWith(':lease') && leaseAway);
    const { client, calls } = stubClient({
      status: async () => 'INITIATED',
      createAccount: async () => {
        clock += 300; // a whole lease passes while the create is out
        return stubClient().client.createAccount({} as never);
      },
    });
    const { handler, errors } = handlerWith(client, { store, idempotencyLeaseMs: 300, now: () => clock });
    const answer = await handler(post());
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(await answer.json()).toMatchObject({ error: { code: 'store_unavailable' } });
    expect(calls).toEqual([]); // no upload, no finalize
    expect(errors).toContainEqual(
      expect.objectContaining({
        code: 'store_unavailable',
        retryAfter: 1,
        operation: 'store',
        message: expect.stringContaining('lease'),
      }),
    );
    leaseAway = false;
    expect((await handler(post())).status).toBe(200);
    expect(calls).toEqual(['upload wf-1', 'finalize wf-1']);
  });

  it('a lease one millisecond short of unconfirmed is still held', async () => {
    let clock = Date.now();
    const store = refusingStore(createMemoryStore(), (key) => key.endsWith(':lease'));
    const { client, calls } = stubClient({
      createAccount: async () => {
        clock += 299;
        return stubClient().client.createAccount({} as never);
      },
    });
    const { handler } = handlerWith(client, { store, idempotencyLeaseMs: 300, now: () => clock });
    expect((await handler(post())).status).toBe(200);
    expect(calls).toEqual(['upload wf-1', 'finalize wf-1']);
  });
});

describe('the intent, pinned', () => {
  const FROZEN = 1_800_000_000_000;

  it("lasts the create's time limit and a lease, and the waiting attempt is told how long", async () => {
    const store = failingStore();
    const { client } = stubClient();
    const { handler } = handlerWith(client, { store, idempotencyLeaseMs: 200, now: () => FROZEN });
    store.fail((value) => value.includes('"transaction"'));
    await handler(post());
    expect((await recordIn(store)).creating!.until).toBe(FROZEN + 1000 + 200);
    expect((await handler(post())).headers.get('retry-after')).toBe('2'); // 1.2 s, rounded up
  });

  it.each([
    [120_000, '60'], // at most a minute
    [1, '1'], // at least a second
  ])('an intent with %i ms left is told as Retry-After %s', async (left, told) => {
    const store = failingStore();
    const { client, creates } = stubClient();
    const { handler } = handlerWith(client, { store, now: () => FROZEN });
    // Another attempt's record, as it writes it: the request's fingerprint and its intent.
    const fingerprint = await fingerprintOfPost();
    await store.set(
      `client-1:idempotency:${KEY}`,
      JSON.stringify({ fingerprint, creating: { owner: 'other', until: FROZEN + left } }),
      60_000,
    );
    expect((await handler(post())).headers.get('retry-after')).toBe(told);
    expect(creates()).toBe(0);
  });

  it('is not written when the customer brings its own transaction: no create is made', async () => {
    const store = failingStore();
    const { client, calls } = stubClient();
    const transaction = await stubClient().client.createAccount({} as never);
    const { store: watched, writes } = recordingStore(store);
    const { handler } = handlerWith(client, {
      store: watched,
      resolveCustomer: () => ({ customerInternalReference: 'order-1', transaction }),
    });
    expect((await handler(post())).status).toBe(200);
    expect(writes.filter((write) => write.value.includes('"creating"'))).toEqual([]);
    expect(calls.filter((c) => c === 'create')).toEqual([]);
  });

  it('a create the service refused (a definite answer): the intent goes at once, nothing is reported, the retry creates', async () => {
    const store = failingStore();
    let refuse = true;
    const { client, creates } = stubClient();
    const refusing = refusingCreates(client, () => refuse);
    const { handler, errors } = handlerWith(refusing, { store, now: () => FROZEN });
    expect((await handler(post())).status).toBe(503);
    // No transaction, nothing to resume: no record is kept for a day (a flood of refused creates fills no store).
    expect(await recordOrNone(store)).toBeUndefined();
    refuse = false;
    expect((await handler(post())).status).toBe(200);
    expect(creates()).toBe(1);
    expect(errors.filter((e) => e.code === 'orphaned_transaction')).toEqual([]);
  });

  it('a create that got no answer: the intent goes, and the transaction it may have made is reported', async () => {
    const store = failingStore();
    const { DeviceRiskError } = await import('../../../src/server/errors.js');
    const { client } = stubClient({
      createAccount: async () =>
        Promise.reject(new DeviceRiskError('network_error', 'no answer in time', { operation: 'account create' })),
    });
    const { handler, errors } = handlerWith(client, { store });
    expect((await handler(post())).status).toBe(503);
    expect(await recordOrNone(store)).toBeUndefined();
    expect(errors).toContainEqual(
      expect.objectContaining({ code: 'orphaned_transaction', operation: 'account create' }),
    );
    // A network error of another call (the token, an upload) says nothing of a create.
    const other = stubClient({
      createAccount: async () => Promise.reject(new DeviceRiskError('network_error', 'token', { operation: 'token' })),
    });
    const second = handlerWith(other.client, { store: failingStore() });
    await second.handler(post());
    expect(second.errors.filter((e) => e.code === 'orphaned_transaction')).toEqual([]);
  });

  it('reports go to onError with their operation, and without an onError nothing breaks', async () => {
    for (const withOnError of [true, false]) {
      const store = failingStore();
      const { client } = stubClient();
      const errors: Array<{ code?: string; operation?: string }> = [];
      const handler = checkoutHandler(client, {
        store,
        idempotencyLeaseMs: 200,
        ...(withOnError ? { onError: (error: unknown) => void errors.push(error as never) } : {}),
      });
      store.fail((value) => value.includes('"transaction"'));
      expect((await handler(post())).status).toBe(503); // made, not recorded yet: still being written
      // Its intent runs out (as if its instance had died): the write still under way can never
      // land now, and is reported when it gives up; the next attempt reports the intent's orphan.
      const key = store.keys().find((k) => k.endsWith(`:${KEY}`))!;
      await store.set(
        key,
        JSON.stringify({ ...(await recordIn(store)), creating: { owner: 'dead', until: 0 } }),
        60_000,
      );
      store.fail(undefined);
      expect((await handler(post())).status).toBe(200);
      if (withOnError)
        await expect
          .poll(() => errors.filter((e) => e.code === 'orphaned_transaction').map((e) => e.operation), {
            timeout: 10_000,
          })
          .toEqual(['account create', 'account create']);
    }
  });
});

describe('the key record, pinned', () => {
  it('a retry after a failure is no new key: the outcome with the blackbox is told once', async () => {
    let failUpload = true;
    const told: unknown[] = [];
    const { client } = stubClient({
      uploadBlackbox: async () => (failUpload ? Promise.reject(new Error('503')) : undefined),
    });
    const { handler } = handlerWith(client, { store: failingStore(), onOutcome: (o) => void told.push(o) });
    const withOutcome = () =>
      new Request(`${SHOP}/device-risk`, {
        method: 'POST',
        headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': KEY },
        body: JSON.stringify({ blackbox: BLACKBOX, outcome: { outcome: 'complete', scripts: [], durationMs: 5 } }),
      });
    expect((await handler(withOutcome())).status).toBe(502);
    failUpload = false;
    expect((await handler(withOutcome())).status).toBe(200);
    expect(told).toHaveLength(1);
  });

  it('a write that timed out but landed is no takeover: the attempt goes on', async () => {
    const memory = createMemoryStore();
    let lostAnswers = 1;
    // The first write of the transaction lands, and its answer is lost.
    const store: Store = {
      ...memory,
      compareAndSet: async (k, e, v, t) => {
        const done = await memory.compareAndSet(k, e, v, t);
        if (v.includes('"transaction"') && lostAnswers-- > 0) throw new Error('no answer in time');
        return done;
      },
    };
    const { client, creates, calls } = stubClient();
    const { handler } = handlerWith(client, { store });
    expect((await handler(post())).status).toBe(200);
    expect(creates()).toBe(1);
    expect(calls.filter((c) => c.startsWith('upload'))).toEqual(['upload wf-1']);
  });

  it('a result that could not be written: still the answer, and onError hears of it', async () => {
    const store = refusingStore(createMemoryStore(), (_key, value) => value.includes('"result"'));
    const { client } = stubClient();
    const { handler, errors } = handlerWith(client, { store, idempotencyLeaseMs: 150 });
    expect((await handler(post())).status).toBe(200);
    expect(errors).toContainEqual(expect.objectContaining({ code: 'store_unavailable' }));
  });

  it('a lost lease is said as idempotency_key_in_use, Retry-After 1, to onError too', async () => {
    const { handler, errors } = losingLease();
    const answer = await handler(post());
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(errors).toContainEqual(
      expect.objectContaining({ code: 'idempotency_key_in_use', retryAfter: 1, operation: 'store' }),
    );
  });
});

describe('a refused create on a key that holds a lapsed transaction', () => {
  it('keeps the record with that transaction, its intent gone: only a key with nothing to resume is deleted', async () => {
    const store = failingStore();
    const { DeviceRiskError } = await import('../../../src/server/errors.js');
    let clock = Date.now();
    let refuse = false;
    const { client } = stubClient({
      status: async () => 'INITIATED',
      uploadBlackbox: async () =>
        Promise.reject(new DeviceRiskError('network_error', 'upload', { operation: 'upload' })),
    });
    const refusing = refusingCreates(client, () => refuse);
    const { handler } = handlerWith(refusing, { store, now: () => clock });
    // The first attempt makes wf-1 and records it; its upload fails.
    expect((await handler(post())).status).not.toBe(200);
    expect(await recordIn(store)).toMatchObject({ transaction: expect.stringContaining('wf-1') });
    // wf-1's token lapses: the next attempt creates anew, and the service refuses.
    clock += 600_000;
    refuse = true;
    expect((await handler(post())).status).toBe(503);
    const record = await recordIn(store);
    expect(record).toMatchObject({ transaction: expect.stringContaining('wf-1') });
    expect(record.creating).toBeUndefined();
  });
});

describe('a request waiting on a key another attempt holds', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('is answered 410 at once when the record says the key was given up stale, not 409 after its wait', async () => {
    // The waits' timers and the clock move only when the test moves them.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const store = createMemoryStore();
    const namespace = 'client:idempotency';
    const recordKey = recordKeyOf(namespace, KEY);
    await store.set(recordKey, JSON.stringify({ fingerprint: 'f', stale: true }), 60_000);
    await store.set(`${recordKey}:lease`, 'another instance', 60_000);
    const underKey = createIdempotency({
      store,
      client: stubClient().client,
      namespace,
      leaseMs: 10_000,
      waitMs: 5_000,
      ttlMs: 60_000,
      now: Date.now,
    });
    const started = Date.now();
    let answeredAt = Infinity;
    const answering = underKey(KEY, {
      fingerprint: 'f',
      customerTransaction: false,
      run: () => Promise.reject(new Error('not run')),
    });
    answering.then(
      () => (answeredAt = Date.now()),
      () => (answeredAt = Date.now()),
    );
    await vi.advanceTimersByTimeAsync(5_000); // its whole wait
    expect((await answering).status).toBe(410);
    expect(answeredAt - started).toBeLessThan(1_000);
  });
});
