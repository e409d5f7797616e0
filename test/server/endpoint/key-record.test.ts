// An Idempotency-Key's record: its reads and the answer it already gives, written once for the
// request waiting on the key, the attempt under its lease and the queue; the queue's stale mark
// (the attempt's writes: key-record-fenced.test.ts).
import { describe, expect, it, vi } from 'vitest';
import {
  earlierCreate,
  finishedRecord,
  markStale,
  parseKeyRecord,
  readKeyRecord,
  readRecord,
  recordedAnswer,
  recordKeyOf,
  startedRecord,
  withCreateIntent,
  type KeyRecord,
} from '../../../src/server/endpoint/key-record.js';
import { createMemoryStore } from '../../../src/server/store/store.js';

const result = { accountId: 'a', workflowExecutionId: 'w', status: 'PROCESSED' };

describe('recordedAnswer', () => {
  it.each<[string, KeyRecord | undefined, number | undefined, string | undefined]>([
    ['no record: the check is to run', undefined, undefined, undefined],
    ['a record of this request, still running', { fingerprint: 'f', uploaded: true }, undefined, undefined],
    ['a record of another request: 422', { fingerprint: 'other', result }, 422, 'idempotency_key_reused'],
    ['a finished check: its first answer', { fingerprint: 'f', result }, 200, undefined],
    ['a key given up stale: 410', { fingerprint: 'f', stale: true }, 410, 'blackbox_stale'],
  ])('%s', async (_, record, status, code) => {
    const answer = recordedAnswer(record, 'f');
    expect(answer?.status).toBe(status);
    if (status === 200) expect(await answer!.json()).toEqual(result);
    if (code) expect(await answer!.json()).toMatchObject({ error: { code } });
  });
});

describe('the reads', () => {
  it('reads a record as stored and parsed, under its key', async () => {
    const store = createMemoryStore();
    const key = recordKeyOf('client:idempotency', 'key-0001');
    expect(await readRecord(store, key)).toEqual({ stored: undefined, record: undefined });
    const stored = JSON.stringify({ fingerprint: 'f', result } satisfies KeyRecord);
    await store.set(key, stored, 60_000);
    expect(await readRecord(store, key)).toEqual({ stored, record: { fingerprint: 'f', result } });
    expect(await readKeyRecord(store, 'client:idempotency', 'key-0001')).toEqual({ fingerprint: 'f', result });
    expect(parseKeyRecord(undefined)).toBeUndefined();
  });
});

describe('markStale', () => {
  const place = (store = createMemoryStore()) => ({ store, recordKey: 'ns:key-0001', ttlMs: 60_000 });
  let time = 10_000;
  const clock = () => time;

  it('marks a key with no record, or one still in progress, stale for its time to live', async () => {
    const fresh = place();
    // A key no one wrote is written only if still absent: a record landing meanwhile is kept.
    const absent = vi.spyOn(fresh.store, 'setIfAbsent');
    expect(await markStale(fresh, 'f', clock)).toBe(true);
    expect(absent).toHaveBeenCalledOnce();
    expect(await readRecord(fresh.store, fresh.recordKey)).toMatchObject({ record: { fingerprint: 'f', stale: true } });
    const running = place();
    await running.store.set(running.recordKey, JSON.stringify({ fingerprint: 'f', uploaded: false }), 60_000);
    expect(await markStale(running, 'f', clock)).toBe(true);
    expect((await readRecord(running.store, running.recordKey)).record).toEqual({ fingerprint: 'f', stale: true });
  });

  it('leaves a finished record, one already stale, and one uploaded as they are; given up only the stale one', async () => {
    for (const [record, givenUp] of [
      [{ fingerprint: 'f', result }, false],
      [{ fingerprint: 'f', stale: true as const }, true],
      // Its blackbox is at the service: the check is finalized and told, never given up.
      [{ fingerprint: 'f', transaction: 'sealed', uploaded: true }, false],
    ] as const) {
      const at = place();
      const stored = JSON.stringify(record);
      await at.store.set(at.recordKey, stored, 60_000);
      const writes = vi.spyOn(at.store, 'compareAndSet');
      expect(await markStale(at, 'f', clock)).toBe(givenUp);
      expect((await readRecord(at.store, at.recordKey)).stored).toBe(stored);
      expect(writes).not.toHaveBeenCalled();
    }
  });

  it('reads again when another writer came between its read and its write, and respects what it wrote', async () => {
    const at = place();
    await at.store.set(at.recordKey, JSON.stringify({ fingerprint: 'f' }), 60_000);
    const compareAndSet = at.store.compareAndSet.bind(at.store);
    // The first write loses to a finished check that lands just before it.
    vi.spyOn(at.store, 'compareAndSet').mockImplementationOnce(async (...args) => {
      await at.store.set(at.recordKey, JSON.stringify({ fingerprint: 'f', result }), 60_000);
      return compareAndSet(...args);
    });
    expect(await markStale(at, 'f', clock)).toBe(false);
    expect((await readRecord(at.store, at.recordKey)).record).toEqual({ fingerprint: 'f', result });
  });

  it('after three lost writes, gives up nothing beside the run that writes on: the job comes back (409)', async () => {
    const at = place();
    await at.store.set(at.recordKey, JSON.stringify({ fingerprint: 'f' }), 60_000);
    const lost = vi.spyOn(at.store, 'compareAndSet').mockResolvedValue(false);
    await expect(markStale(at, 'f', clock)).rejects.toMatchObject({
      code: 'idempotency_key_in_use',
      retryAfter: 1,
      operation: 'store',
    });
    expect(lost).toHaveBeenCalledTimes(3);
    expect((await readRecord(at.store, at.recordKey)).record).toEqual({ fingerprint: 'f' });
  });

  it('waits for an upload that may still land (its intent not yet up), then gives up', async () => {
    const at = place();
    const uploading = {
      fingerprint: 'f',
      transaction: 'sealed',
      uploaded: false,
      uploading: { owner: 'o', until: 12_500 },
    };
    await at.store.set(at.recordKey, JSON.stringify(uploading), 60_000);
    await expect(markStale(at, 'f', clock)).rejects.toMatchObject({ code: 'idempotency_key_in_use', retryAfter: 3 });
    expect((await readRecord(at.store, at.recordKey)).record).toEqual(uploading);
    time = 12_500;
    expect(await markStale(at, 'f', clock)).toBe(true);
    expect((await readRecord(at.store, at.recordKey)).record).toEqual({ fingerprint: 'f', stale: true });
    time = 10_000;
  });
});

describe('the transitions', () => {
  it("another attempt's create: waited for until its time is up, then taken as orphaned", () => {
    const creating = { fingerprint: 'f', creating: { owner: 'other', until: 10_500 } };
    expect(earlierCreate(undefined, 0)).toBeUndefined();
    expect(earlierCreate({ fingerprint: 'f' }, 0)).toBeUndefined();
    expect(earlierCreate(creating, 9_000)).toEqual({ waitS: 2 });
    expect(earlierCreate(creating, 10_499)).toEqual({ waitS: 1 });
    expect(earlierCreate(creating, 10_500)).toBe('orphaned');
    // A transaction recorded: the create ended, nothing is on the wire.
    expect(earlierCreate({ ...creating, transaction: 'sealed' }, 0)).toBeUndefined();
  });

  it("an attempt starts from the key's record without another's intents, or from its first", () => {
    const intents = { owner: 'other', until: 1 };
    expect(startedRecord(undefined, 'f')).toEqual({ fingerprint: 'f' });
    expect(startedRecord({ fingerprint: 'f', transaction: 't', creating: intents, uploading: intents }, 'f')).toEqual({
      fingerprint: 'f',
      transaction: 't',
    });
  });

  it("a create's intent, and the final record that keeps no transaction", () => {
    expect(withCreateIntent({ fingerprint: 'f' }, 'me', 5)).toEqual({
      fingerprint: 'f',
      creating: { owner: 'me', until: 5 },
    });
    expect(finishedRecord('f', result)).toEqual({ fingerprint: 'f', result });
  });
});
