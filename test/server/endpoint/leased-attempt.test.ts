// One attempt on an Idempotency-Key under its lease (src/server/endpoint/leased-attempt.ts), on
// a memory store and a stub client: what a record already says, what a resumed check is told,
// and an attempt with no onError that still answers.
import { describe, expect, it } from 'vitest';
import { attemptUnderLease, type AttemptContext } from '../../../src/server/endpoint/leased-attempt.js';
import type { DeviceRiskProgress } from '../../../src/server/endpoint/check.js';
import type { KeyRecord } from '../../../src/server/endpoint/idempotency.js';
import { DeviceRiskError } from '../../../src/server/errors.js';
import type { Lease } from '../../../src/server/store/lease.js';
import { createMemoryStore, type Store } from '../../../src/server/store/store.js';
import { stubClient } from '../../support/stub-client.js';
import { recordingStore, refusingStore } from '../../support/store-doubles.js';

const KEY = 'client-1:idempotency:key-1';
const RESULT = { accountId: 'acc-1', workflowExecutionId: 'wf-1', status: 'PROCESSED' };
const lease: Lease = { mark: 'me', lost: undefined, release: async () => {} };

/** What a test changes of an attempt: any of its settings, parts and call. */
type Changes = Partial<AttemptContext['settings'] & AttemptContext['parts'] & AttemptContext['call']>;

/** An attempt on `store`; `run` gets the progress and records what it makes through `save`. */
function attempt(store: Store, changes: Changes = {}) {
  const seen: DeviceRiskProgress[] = [];
  let newKeys = 0;
  const { client } = stubClient();
  const all = {
    store,
    client,
    leaseMs: 1000,
    storeWaitMs: 200,
    ttlMs: 60_000,
    now: Date.now,
    recordKey: KEY,
    read: async () => {
      const stored = await store.get(KEY);
      return { stored, record: stored === undefined ? undefined : (JSON.parse(stored) as KeyRecord) };
    },
    fingerprint: 'fp',
    customerTransaction: false,
    run: async (progress: DeviceRiskProgress) => {
      seen.push({ ...progress });
      return RESULT;
    },
    onNewKey: () => void newKeys++,
    ...changes,
  };
  const context: AttemptContext = {
    settings: { leaseMs: all.leaseMs, storeWaitMs: all.storeWaitMs, ttlMs: all.ttlMs },
    parts: { store: all.store, client: all.client, now: all.now, ...(all.onError ? { onError: all.onError } : {}) },
    call: {
      recordKey: all.recordKey,
      read: all.read,
      fingerprint: all.fingerprint,
      customerTransaction: all.customerTransaction,
      run: all.run,
      onNewKey: all.onNewKey,
    },
  };
  return { run: () => attemptUnderLease(context, lease), seen, newKeys: () => newKeys, client };
}
const record = async (store: Store) => JSON.parse((await store.get(KEY))!) as KeyRecord;
const sealed = async () => {
  const { client } = stubClient();
  return client.sealTransaction(await client.createAccount({} as never));
};

describe('what the record already says', () => {
  it('a key given up as stale: 410 blackbox_stale, and the check does not run', async () => {
    const store = createMemoryStore();
    await store.set(KEY, JSON.stringify({ fingerprint: 'fp', stale: true }), 60_000);
    const a = attempt(store);
    const answer = await a.run();
    expect(answer.status).toBe(410);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('blackbox_stale');
    expect(a.seen).toEqual([]);
  });

  it('a new key is told once; a key with a record is not new', async () => {
    const store = createMemoryStore();
    const first = attempt(store, { run: async () => Promise.reject(new DeviceRiskError('upstream_error', 'x')) });
    await first.run().catch(() => {});
    const second = attempt(store);
    await store.set(KEY, JSON.stringify({ fingerprint: 'fp', transaction: await sealed() }), 60_000);
    expect((await second.run()).status).toBe(200);
    expect([first.newKeys(), second.newKeys()]).toEqual([1, 0]);
  });
});

describe('a recorded transaction, resumed', () => {
  it('with its upload recorded: the check is told so, and the status is not asked', async () => {
    const store = createMemoryStore();
    await store.set(KEY, JSON.stringify({ fingerprint: 'fp', transaction: await sealed(), uploaded: true }), 60_000);
    const statuses: string[] = [];
    const a = attempt(store, {
      client: stubClient({
        status: async () => {
          statuses.push('read');
          return 'INITIATED';
        },
      }).client,
    });
    await a.run();
    expect(a.seen[0]).toMatchObject({ uploaded: true });
    expect(statuses).toEqual([]);
  });

  it('without its upload recorded and a status that cannot be read: uploaded again, never skipped', async () => {
    const store = createMemoryStore();
    await store.set(KEY, JSON.stringify({ fingerprint: 'fp', transaction: await sealed() }), 60_000);
    const a = attempt(store, {
      client: stubClient({ status: async () => Promise.reject(new Error('down')) }).client,
    });
    await a.run();
    expect(a.seen[0]!.transaction).toBeDefined();
    expect(a.seen[0]!.uploaded).toBeUndefined();
  });

  it('a live one makes no create: the record carries no intent to create', async () => {
    const store = createMemoryStore();
    const transaction = await sealed();
    await store.set(KEY, JSON.stringify({ fingerprint: 'fp', transaction }), 60_000);
    const { store: watched, writes } = recordingStore(store);
    const a = attempt(watched, {
      run: async () => {
        expect(await record(store)).not.toHaveProperty('creating');
        return RESULT;
      },
    });
    expect((await a.run()).status).toBe(200);
    expect(writes.filter((write) => write.value.includes('"creating"'))).toEqual([]);
  });
});

describe('an attempt without onError', () => {
  it("still creates after an earlier attempt's intent ran out", async () => {
    const store = createMemoryStore();
    await store.set(KEY, JSON.stringify({ fingerprint: 'fp', creating: { owner: 'dead', until: 0 } }), 60_000);
    expect((await attempt(store).run()).status).toBe(200);
  });

  it('a create that got no answer fails with its own error', async () => {
    const failure = new DeviceRiskError('network_error', 'no answer', { operation: 'account create' });
    const a = attempt(createMemoryStore(), { run: async () => Promise.reject(failure) });
    await expect(a.run()).rejects.toBe(failure);
  });

  it('a result the store did not take is still the answer', async () => {
    const store = refusingStore(createMemoryStore(), (_key, value) => value.includes('"result"'));
    const answer = await attempt(store, { storeWaitMs: 0 }).run();
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual(RESULT);
  });
});
