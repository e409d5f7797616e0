// One blackbox, one transaction (src/server/endpoint/reuse.ts, #54): a blackbox already used
// for another Idempotency-Key is refused 422 blackbox_reused, told to onError, and no second
// transaction is started; the same key again stays an idempotent retry.
import { describe, expect, it } from 'vitest';
import { claimBlackbox, reuseKeyOf, type ReuseClaim } from '../../../src/server/endpoint/reuse.js';
import { DeviceRiskError } from '../../../src/server/errors.js';
import { createMemoryStore, type Store } from '../../../src/server/store/store.js';
import { blackboxOf, handlerWith, SHOP } from '../../support/kit.js';
import { stubClient } from '../../support/stub-client.js';
import { recordingStore } from '../../support/store-doubles.js';

const BLACKBOX = blackboxOf('checkout-a');
const T0 = 1_800_000_000_000;

const refusal = async (answer: Response | undefined) => {
  expect(answer).toBeDefined();
  const body = (await answer!.json()) as { error: { code: string; message: string } };
  return { status: answer!.status, code: body.error.code, message: body.error.message };
};

function setting(store: Store = createMemoryStore({ now: () => T0 })) {
  const errors: unknown[] = [];
  const options: ReuseClaim = { store, prefix: 'client-1', ttlMs: 900_000, onError: (e) => void errors.push(e) };
  return { options, errors, store };
}

describe('claimBlackbox', () => {
  it('the first key claims it; the same key again goes on; another key is 422 blackbox_reused, told', async () => {
    const { options, errors } = setting();
    expect(await claimBlackbox(options, BLACKBOX, 'key-a')).toBeUndefined();
    expect(await claimBlackbox(options, BLACKBOX, 'key-a')).toBeUndefined();
    expect(errors).toEqual([]);
    const refused = await refusal(await claimBlackbox(options, BLACKBOX, 'key-b'));
    expect(refused).toMatchObject({ status: 422, code: 'blackbox_reused' });
    expect(refused.message).toMatch(/capture again/);
    expect(errors).toEqual([expect.objectContaining({ code: 'blackbox_reused', status: 422 })]);
    expect(errors[0]).toBeInstanceOf(DeviceRiskError);
    // Another blackbox under another key is its own.
    expect(await claimBlackbox(options, blackboxOf('checkout-b'), 'key-b')).toBeUndefined();
  });

  it('the store holds a digest under the client’s prefix for the trust bound, never the blackbox', async () => {
    const { store: recording, writes } = recordingStore(createMemoryStore({ now: () => T0 }));
    const { options, errors } = setting(recording);
    await claimBlackbox(options, BLACKBOX, 'key-a');
    await claimBlackbox(options, BLACKBOX, 'key-b');
    expect(writes).toHaveLength(2);
    expect(writes[0]).toEqual({
      op: 'setIfAbsent',
      key: await reuseKeyOf('client-1', BLACKBOX),
      value: 'key-a',
      ttlMs: 900_000,
    });
    expect(writes[0]!.key).toMatch(/^client-1:blackbox:[0-9a-f]{64}$/);
    const said = JSON.stringify([writes, errors, String(errors[0])]);
    expect(said).not.toContain(BLACKBOX.slice(0, 40));
  });

  it('a claim lapses with the trust bound: past it, another key may claim', async () => {
    let now = T0;
    const { options } = setting(createMemoryStore({ now: () => now }));
    expect(await claimBlackbox(options, BLACKBOX, 'key-a')).toBeUndefined();
    now += 899_999;
    expect((await claimBlackbox(options, BLACKBOX, 'key-b'))?.status).toBe(422);
    now += 1;
    expect(await claimBlackbox(options, BLACKBOX, 'key-b')).toBeUndefined();
  });

  it('a store that fails is store_unavailable (503 with Retry-After), never "not used"', async () => {
    const down: Store = {
      ...createMemoryStore(),
      setIfAbsent: () => Promise.reject(new Error('ECONNREFUSED')),
    };
    const { options } = setting(down);
    await expect(claimBlackbox(options, BLACKBOX, 'key-a')).rejects.toMatchObject({ code: 'store_unavailable' });
    const readDown: Store = {
      ...createMemoryStore(),
      setIfAbsent: async () => false,
      get: () => Promise.reject(new Error('x')),
    };
    await expect(claimBlackbox(setting(readDown).options, BLACKBOX, 'key-a')).rejects.toMatchObject({
      code: 'store_unavailable',
    });
  });
});

const post = (key: string | null, blackbox = BLACKBOX) =>
  new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    body: JSON.stringify({ blackbox }),
  });

describe('the endpoint never starts a second transaction with a used blackbox', () => {
  it.each(['checked', 'accepted'] as const)(
    'answer %s: a retry is the same checkout; another key with the blackbox is 422, nothing started',
    async (answer) => {
      const { client, creates } = stubClient();
      const errors: unknown[] = [];
      const handler = handlerWith(client, { answer, onError: (e) => void errors.push(e) });
      const first = await handler(post('checkout-key-a'));
      expect(first.status).toBeLessThan(300);
      expect((await handler(post('checkout-key-a'))).status).toBeLessThan(300);
      const second = await handler(post('checkout-key-b'));
      expect(await refusal(second)).toMatchObject({ status: 422, code: 'blackbox_reused' });
      expect(errors).toEqual([expect.objectContaining({ code: 'blackbox_reused' })]);
      // A fresh blackbox under the second key is checked.
      expect((await handler(post('checkout-key-b', blackboxOf('checkout-b')))).status).toBeLessThan(300);
      await handler.close();
      await expect.poll(creates).toBe(2);
    },
  );

  it('without an Idempotency-Key, the same blackbox twice: the second is refused', async () => {
    const { client, creates } = stubClient();
    const handler = handlerWith(client, { onError: () => {} });
    expect((await handler(post(null))).status).toBe(200);
    expect((await refusal(await handler(post(null)))).code).toBe('blackbox_reused');
    expect(creates()).toBe(1);
  });

  it('the claim lives for maxQueuedMs, the trust bound', async () => {
    let now = T0;
    const { client, creates } = stubClient();
    const handler = handlerWith(client, { now: () => now, maxQueuedMs: 60_000, onError: () => {} });
    expect((await handler(post('checkout-key-a'))).status).toBe(200);
    now += 59_999;
    expect((await handler(post('checkout-key-b'))).status).toBe(422);
    now += 1;
    expect((await handler(post('checkout-key-c'))).status).toBe(200);
    expect(creates()).toBe(2);
  });
});
