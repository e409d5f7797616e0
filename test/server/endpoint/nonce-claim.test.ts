// A checkout's capture nonce claimed in the store (src/server/endpoint/nonce-claim.ts): verified
// for its customer, then used once per Idempotency-Key, for as long as the nonce lives.
import { describe, expect, it } from 'vitest';
import { claimNonce, type NonceClaim } from '../../../src/server/endpoint/nonce-claim.js';
import { createCaptureNonce } from '../../../src/server/endpoint/nonce.js';
import { createMemoryStore, type Store } from '../../../src/server/store/store.js';
import { recordingStore } from '../../support/store-doubles.js';

const SECRET = 'nonce-secret-0123456789-abcdefghijklmnop';
const T0 = 1_000_000;

async function setting(store: Store = createMemoryStore({ now: () => T0 })) {
  const options: NonceClaim = { store, secret: SECRET, prefix: 'bbc:client-1', now: () => T0 };
  const nonce = await createCaptureNonce({ secret: SECRET, subject: 'order-1', ttlMs: 60_000, now: () => T0 });
  return { options, nonce, store };
}
const refusal = async (answer: Response | undefined) => {
  expect(answer).toBeDefined();
  const body = (await answer!.json()) as { error: { code: string } };
  return { status: answer!.status, code: body.error.code };
};

describe('claimNonce', () => {
  it.each([undefined, null, ''])('no nonce (%j): 400 nonce_missing', async (nonce) => {
    const { options } = await setting();
    expect(await refusal(await claimNonce(options, nonce, 'order-1', 'key-1'))).toEqual({
      status: 400,
      code: 'nonce_missing',
    });
  });

  it('a nonce of another customer: 403 nonce_invalid; an expired one: 400 nonce_expired', async () => {
    const { options, nonce } = await setting();
    expect(await refusal(await claimNonce(options, nonce, 'order-2', 'key-1'))).toEqual({
      status: 403,
      code: 'nonce_invalid',
    });
    const later = { ...options, now: () => T0 + 60_000 };
    expect(await refusal(await claimNonce(later, nonce, 'order-1', 'key-1'))).toEqual({
      status: 400,
      code: 'nonce_expired',
    });
  });

  it('claimed once: the same key again goes on, another key is 409 nonce_reused', async () => {
    const { options, nonce } = await setting();
    expect(await claimNonce(options, nonce, 'order-1', 'key-1')).toBeUndefined();
    expect(await claimNonce(options, nonce, 'order-1', 'key-1')).toBeUndefined();
    expect(await refusal(await claimNonce(options, nonce, 'order-1', 'key-2'))).toEqual({
      status: 409,
      code: 'nonce_reused',
    });
  });

  it('the claim is kept under the client’s prefix for as long as the nonce lives, at least 1 ms', async () => {
    const { store: recording, writes } = recordingStore(createMemoryStore({ now: () => T0 }));
    const { options, nonce } = await setting(recording);
    await claimNonce(options, nonce, 'order-1', 'key-1');
    expect(writes).toEqual([
      { op: 'setIfAbsent', key: `bbc:client-1:nonce:${nonce.split('.')[2]}`, value: 'key-1', ttlMs: 60_000 },
    ]);
    await claimNonce({ ...options, now: () => T0 + 59_999.5 }, nonce, 'order-1', 'key-2');
    expect(writes[1]!.ttlMs).toBe(1);
  });

  it('a store that fails is store_unavailable, thrown for the handler to answer', async () => {
    const store = createMemoryStore();
    const { options, nonce } = await setting({ ...store, setIfAbsent: async () => Promise.reject(new Error('down')) });
    await expect(claimNonce(options, nonce, 'order-1', 'key-1')).rejects.toMatchObject({ code: 'store_unavailable' });
  });
});
