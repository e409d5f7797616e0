// An Idempotency-Key's record: its reads and the answer it already gives, written once for the
// request waiting on the key, the attempt under its lease and the queue.
import { describe, expect, it } from 'vitest';
import {
  parseKeyRecord,
  readKeyRecord,
  readRecord,
  recordedAnswer,
  recordKeyOf,
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
