// The upload's intent in the key's record (src/server/endpoint/upload-intent.ts): an attempt
// whose upload may still be on the wire keeps every other attempt from uploading beside it,
// until the service's status shows the blackbox or the intent's time is up; an attempt whose
// upload ended takes its intent back at once.
import { describe, expect, it } from 'vitest';
import { DeviceRiskTransaction } from '../../../src/server/api/device-risk-client.js';
import { createMemoryStore, type DeviceRiskClient, type Store } from '../../../src/server/index.js';
import { DeviceRiskError } from '../../../src/server/errors.js';
import { resumedProgress, uploadIntent } from '../../../src/server/endpoint/upload-intent.js';
import type { KeyRecord } from '../../../src/server/endpoint/idempotency.js';
import { BLACKBOX, handlerWith, SHOP } from '../../support/kit.js';
import { stubClient } from '../../support/stub-client.js';

const KEY = 'checkout-key-1';
const T0 = 1_800_000_000_000;

const post = () =>
  new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': KEY },
    body: JSON.stringify({ blackbox: BLACKBOX }),
  });

/** A memory store whose records can be read back by their Idempotency-Key. */
function listedStore() {
  const memory = createMemoryStore();
  const keys = new Set<string>();
  const store: Store = {
    ...memory,
    setIfAbsent: async (k, v, t) => {
      keys.add(k);
      return memory.setIfAbsent(k, v, t);
    },
    set: async (k, v, t) => {
      keys.add(k);
      return memory.set(k, v, t);
    },
  };
  const record = async (): Promise<KeyRecord> => {
    const key = [...keys].find((k) => k.endsWith(`:${KEY}`))!;
    return JSON.parse((await store.get(key))!) as KeyRecord;
  };
  return { store, record };
}

const transaction = new DeviceRiskTransaction({
  accountId: 'acc-1',
  workflowExecutionId: 'wf-1',
  credentialId: 'cred',
  uploadUrl: 'https://api.example/u',
  finalizeUrl: 'https://api.example/f',
  tokenExpiresAt: T0 + 600_000,
  token: 'tx',
});
const sealed = JSON.stringify({ ...transaction.toJSON(), token: 'tx' });

describe('resumedProgress', () => {
  const client = (status: string | Error) =>
    stubClient({
      status: async () => {
        if (status instanceof Error) throw status;
        return status;
      },
    }).client;
  const record = (extra: Partial<KeyRecord> = {}): KeyRecord => ({ fingerprint: 'f', transaction: sealed, ...extra });

  it('an intent whose time is not up, the status INITIATED: 409 with the seconds left', async () => {
    const answer = await resumedProgress(
      client('INITIATED'),
      record({ uploading: { owner: 'a', until: T0 + 2_500 } }),
      () => T0,
    );
    expect(answer).toBeInstanceOf(Response);
    expect((answer as Response).status).toBe(409);
    expect((answer as Response).headers.get('retry-after')).toBe('3');
  });

  it('an intent whose time is not up and a status read that fails: 409 too (the upload may still land)', async () => {
    const answer = await resumedProgress(
      client(new DeviceRiskError('rate_limited', 'status answered 429', { status: 429 })),
      record({ uploading: { owner: 'a', until: T0 + 1 } }),
      () => T0,
    );
    expect((answer as Response).status).toBe(409);
  });

  it('the blackbox there (past INITIATED): uploaded, whatever the intent says', async () => {
    const progress = await resumedProgress(
      client('ACQUIRED'),
      record({ uploading: { owner: 'a', until: T0 + 60_000 } }),
      () => T0,
    );
    expect(progress).toMatchObject({ uploaded: true, transaction: { workflowExecutionId: 'wf-1' } });
  });

  it('an intent whose time is up (to the millisecond), or none: the upload is to be made', async () => {
    for (const extra of [{ uploading: { owner: 'a', until: T0 } }, {}]) {
      const progress = await resumedProgress(client('INITIATED'), record(extra), () => T0);
      expect(progress).not.toBeInstanceOf(Response);
      expect(progress).not.toHaveProperty('uploaded');
    }
  });

  it('a record that shows the upload: no status read', async () => {
    const reads: string[] = [];
    const { client: c } = stubClient({
      status: async () => {
        reads.push('status');
        return 'INITIATED';
      },
    });
    expect(await resumedProgress(c, record({ uploaded: true }), () => T0)).toMatchObject({ uploaded: true });
    expect(await resumedProgress(c, { fingerprint: 'f' }, () => T0)).toEqual({});
    expect(reads).toEqual([]);
  });

  it("lasts one upload request's time limit and a lease (60 s when the client does not say)", () => {
    const withLimit = { uploadTimeoutMs: 15_000 } as DeviceRiskClient;
    expect(uploadIntent('me', withLimit, 10_000, () => T0)).toEqual({ owner: 'me', until: T0 + 25_000 });
    expect(uploadIntent('me', {} as DeviceRiskClient, 1_000, () => T0).until).toBe(T0 + 61_000);
  });
});

describe('the endpoint with the upload intent', () => {
  it('is in the record while the upload runs, and gone once the blackbox is recorded', async () => {
    const { store, record } = listedStore();
    const seen: KeyRecord[] = [];
    const { client } = stubClient({
      uploadTimeoutMs: 15_000,
      uploadBlackbox: async () => void seen.push(await record()),
      finalize: async () => void seen.push(await record()),
    } as Partial<DeviceRiskClient>);
    const started = Date.now();
    expect((await handlerWith(client, { store, idempotencyLeaseMs: 1_000 })(post())).status).toBe(200);
    expect(seen[0]!.uploading!.until).toBeGreaterThanOrEqual(started + 16_000);
    expect(seen[0]!.uploading!.until).toBeLessThanOrEqual(Date.now() + 16_000);
    expect(seen[1]).toMatchObject({ uploaded: true });
    expect(seen[1]).not.toHaveProperty('uploading');
    expect(await record()).not.toHaveProperty('uploading');
  });

  it('an attempt that resumes a transaction without its blackbox writes the intent before it uploads, and takes it back when the upload fails', async () => {
    const { store, record } = listedStore();
    const seen: Array<KeyRecord['uploading']> = [];
    let failures = 2;
    const { client, calls } = stubClient({
      status: async () => 'INITIATED',
      uploadBlackbox: async (tx: DeviceRiskTransaction) => {
        seen.push((await record()).uploading);
        if (failures-- > 0) throw new DeviceRiskError('upstream_error', 'upload answered 503', { status: 503 });
        calls.push(`upload ${tx.workflowExecutionId}`);
      },
    });
    const handler = handlerWith(client, { store, onError: () => {} });
    expect((await handler(post())).status).toBe(503); // created, upload failed
    expect((await handler(post())).status).toBe(503); // resumed, upload failed again
    expect(await record()).not.toHaveProperty('uploading');
    expect((await handler(post())).status).toBe(200);
    expect(seen.map((intent) => intent?.owner !== undefined)).toEqual([true, true, true]);
    expect(calls).toEqual(['create', 'upload wf-1', 'finalize wf-1']);
  });

  it('a retry while an upload may be on the wire (its owner gone, the service still at INITIATED): 409, no second upload', async () => {
    const { store, record } = listedStore();
    const uploads: string[] = [];
    let owner = true;
    const { client } = stubClient({
      status: async () => 'INITIATED',
      // The first owner "dies" with its upload sent: its lease is let go, its record keeps the intent.
      uploadBlackbox: async () => {
        uploads.push(owner ? 'first' : 'second');
        if (owner) throw Object.assign(new Error('killed'), { killed: true });
      },
    });
    const handler = handlerWith(client, { store, onError: () => {} });
    const uploadEnded = store.compareAndSet;
    // The dead owner cannot take its intent back: its last write never comes.
    store.compareAndSet = async (k, e, v, t) => (v.includes('"uploading"') || !owner ? uploadEnded(k, e, v, t) : false);
    await handler(post()).catch(() => {});
    owner = false;
    store.compareAndSet = uploadEnded;
    expect((await record()).uploading).toBeDefined();
    const retry = await handler(post());
    expect(retry.status).toBe(409);
    expect(Number(retry.headers.get('retry-after'))).toBeGreaterThan(1);
    expect(uploads).toEqual(['first']);
  });

  it('an upload that failed takes its intent back: the retry uploads at once', async () => {
    const { store, record } = listedStore();
    let fail = true;
    const { client, calls } = stubClient({
      status: async () => 'INITIATED',
      uploadBlackbox: async (tx: DeviceRiskTransaction) => {
        if (fail) throw new DeviceRiskError('upstream_error', 'upload answered 503', { status: 503, retryAfter: 1 });
        calls.push(`upload ${tx.workflowExecutionId}`);
      },
    });
    const handler = handlerWith(client, { store, onError: () => {} });
    expect((await handler(post())).status).toBe(503);
    expect(await record()).not.toHaveProperty('uploading');
    fail = false;
    expect((await handler(post())).status).toBe(200);
    expect(calls).toEqual(['create', 'upload wf-1', 'finalize wf-1']);
  });
});
