// Replay protection: capture nonces issued by the server, checked by the endpoint before any
// call to the service, used once (across instances sharing a store).
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../../src/emulator/index.js';
import {
  createCaptureNonce,
  createDeviceRiskHandler,
  createMemoryStore,
  verifyCaptureNonce,
  type Store,
} from '../../../src/server/index.js';
import { clientOn } from '../../support/kit.js';

const SECRET = 'nonce-secret-0123456789-abcdefghijklmnop';
const SHOP = 'https://shop.example';
const BLACKBOX = '0400' + 'nVQ+/abc'.repeat(150) + '==';
let emulator: Emulator | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

describe('createCaptureNonce / verifyCaptureNonce', () => {
  it('a nonce verifies for its subject until it expires, and for no other subject or secret', async () => {
    let now = 1_000_000;
    const nonce = await createCaptureNonce({ secret: SECRET, subject: 'order-1', ttlMs: 60_000, now: () => now });
    expect(nonce).toMatch(/^v1\.[0-9a-z]+\.[\w-]{22}\.[\w-]{43}$/);
    expect(await verifyCaptureNonce(nonce, { secret: SECRET, subject: 'order-1', now: () => now })).toEqual({
      id: nonce.split('.')[2],
      expiresAt: 1_060_000,
    });
    await expect(
      verifyCaptureNonce(nonce, { secret: SECRET, subject: 'order-2', now: () => now }),
    ).rejects.toMatchObject({ code: 'nonce_invalid' });
    await expect(
      verifyCaptureNonce(nonce, { secret: SECRET.replace('0', '1'), subject: 'order-1', now: () => now }),
    ).rejects.toMatchObject({ code: 'nonce_invalid' });
    now = 1_059_999;
    await expect(
      verifyCaptureNonce(nonce, { secret: SECRET, subject: 'order-1', now: () => now }),
    ).resolves.toBeDefined();
    now = 1_060_000;
    await expect(
      verifyCaptureNonce(nonce, { secret: SECRET, subject: 'order-1', now: () => now }),
    ).rejects.toMatchObject({ code: 'nonce_expired' });
  });

  it('a forged expiry, id or signature is nonce_invalid, as is anything that is no nonce', async () => {
    const nonce = await createCaptureNonce({ secret: SECRET, subject: 's' });
    const [v, expiry, id, signature] = nonce.split('.') as [string, string, string, string];
    const later = (parseInt(expiry, 36) + 3_600_000).toString(36);
    const flip = (text: string) => (text[0] === 'A' ? 'B' : 'A') + text.slice(1);
    for (const forged of [
      `${v}.${later}.${id}.${signature}`,
      `${v}.${expiry}.${flip(id)}.${signature}`,
      `${v}.${expiry}.${id}.${flip(signature)}`,
      `v2.${expiry}.${id}.${signature}`,
      `${nonce}.x`,
      'nonce',
      42,
      null,
      'x'.repeat(300),
    ]) {
      await expect(verifyCaptureNonce(forged, { secret: SECRET, subject: 's' }), String(forged)).rejects.toMatchObject({
        code: 'nonce_invalid',
      });
    }
  });

  it('refuses a short secret', async () => {
    await expect(createCaptureNonce({ secret: 'short', subject: 's' })).rejects.toMatchObject({
      code: 'invalid_configuration',
    });
  });
});

describe('the nonce format, exactly (src/server/endpoint/nonce.ts)', () => {
  const base64url = (bytes: Uint8Array) =>
    btoa(String.fromCharCode(...bytes))
      .replace(/\+/g, '-')
      .replace(/\//g, '_')
      .replace(/=+$/, '');
  /** A nonce of any parts, signed with the right secret: only its shape can make it invalid. */
  async function signedWith(version: string, expiry: string, id: string, subject = 's') {
    const key = await crypto.subtle.importKey(
      'raw',
      new TextEncoder().encode(SECRET),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign'],
    );
    const mac = await crypto.subtle.sign(
      'HMAC',
      key,
      new TextEncoder().encode(`${version}.${expiry}.${id}\n${subject}`),
    );
    return `${version}.${expiry}.${id}.${base64url(new Uint8Array(mac))}`;
  }
  const ID = 'A'.repeat(22);
  const EXPIRY = (2_000_000_000_000).toString(36);
  const verify = (nonce: string) => verifyCaptureNonce(nonce, { secret: SECRET, subject: 's', now: () => 1_000_000 });

  it('a nonce signed with the secret, of the documented shape, verifies', async () => {
    await expect(verify(await signedWith('v1', EXPIRY, ID))).resolves.toEqual({ id: ID, expiresAt: 2_000_000_000_000 });
  });

  it.each([
    ['another version', 'v2', EXPIRY, ID],
    ['an expiry of 13 characters', 'v1', EXPIRY.padStart(13, '0'), ID],
    ['an expiry that is not base 36', 'v1', `-${EXPIRY}`, ID],
    ['an id of 23 characters', 'v1', EXPIRY, `${ID}B`],
    ['an id of 21 characters after a stray one', 'v1', EXPIRY, `*${ID.slice(1)}`],
  ])('one signed with the secret but with %s is nonce_invalid', async (_, version, expiry, id) => {
    await expect(verify(await signedWith(version, expiry, id))).rejects.toMatchObject({ code: 'nonce_invalid' });
  });

  it('a signature with a stray character before or after it is nonce_invalid, not a decoding error', async () => {
    const [v, expiry, id, signature] = (await signedWith('v1', EXPIRY, ID)).split('.') as [
      string,
      string,
      string,
      string,
    ];
    for (const forged of [`*${signature}`, `${signature}*`])
      await expect(verify(`${v}.${expiry}.${id}.${forged}`)).rejects.toMatchObject({ code: 'nonce_invalid' });
  });

  it('a secret of 31 characters is refused, one of 32 accepted', async () => {
    await expect(createCaptureNonce({ secret: 'x'.repeat(31), subject: 's' })).rejects.toMatchObject({
      code: 'invalid_configuration',
    });
    await expect(verifyCaptureNonce('v1.x', { secret: 'x'.repeat(31), subject: 's' })).rejects.toMatchObject({
      code: 'invalid_configuration',
    });
    await expect(createCaptureNonce({ secret: 'x'.repeat(32), subject: 's' })).resolves.toMatch(/^v1\./);
  });
});

describe('the endpoint with nonceSecret', () => {
  async function setup(store: Store = createMemoryStore()) {
    emulator ??= await startEmulator({ accountRequestsPerSecond: 0 });
    const client = clientOn(emulator, { maxAttempts: 1 });
    return createDeviceRiskHandler({
      answer: 'checked',
      client,
      store,
      allowedOrigins: [SHOP],
      // Many refusals for one customer in a row: the nonce, not admission, is tested here.
      checkoutsPerCustomer: false,
      workflowKey: 10011,
      nonceSecret: SECRET,
      resolveCustomer: () => ({ customerInternalReference: 'order-1' }),
    });
  }
  const post = (body: unknown, key = `key-${Math.random().toString(36).slice(2)}`) =>
    new Request('https://shop.example/device-risk', {
      method: 'POST',
      headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
    });
  const code = async (response: Response) => [
    response.status,
    ((await response.json()) as { error?: { code: string } }).error?.code,
  ];

  it('missing 400, forged or for another customer 403, expired 400, used before 409: all before any call', async () => {
    const handler = await setup();
    expect(await code(await handler(post({ blackbox: BLACKBOX })))).toEqual([400, 'nonce_missing']);
    expect(await code(await handler(post({ blackbox: BLACKBOX, nonce: null })))).toEqual([400, 'nonce_missing']);
    expect(await code(await handler(post({ blackbox: BLACKBOX, nonce: '' })))).toEqual([400, 'nonce_missing']);
    const other = await createCaptureNonce({ secret: SECRET, subject: 'order-2' });
    expect(await code(await handler(post({ blackbox: BLACKBOX, nonce: other })))).toEqual([403, 'nonce_invalid']);
    expect(await code(await handler(post({ blackbox: BLACKBOX, nonce: 'v1.x.y.z' })))).toEqual([403, 'nonce_invalid']);
    const expired = await createCaptureNonce({ secret: SECRET, subject: 'order-1', ttlMs: -1 });
    expect(await code(await handler(post({ blackbox: BLACKBOX, nonce: expired })))).toEqual([400, 'nonce_expired']);
    // The message says which: a page can ask for a fresh nonce when it has only expired.
    const message = async (response: Response) =>
      ((await response.json()) as { error: { message: string } }).error.message;
    expect(await message(await handler(post({ blackbox: BLACKBOX, nonce: expired })))).toMatch(/expired/);
    expect(await message(await handler(post({ blackbox: BLACKBOX, nonce: other })))).toMatch(/not valid/);
    expect(emulator!.inspect.requests('token')).toBe(0);
    const nonce = await createCaptureNonce({ secret: SECRET, subject: 'order-1' });
    expect((await handler(post({ blackbox: BLACKBOX, nonce }, 'key-first-use'))).status).toBe(200);
    // The same request retried (same key) is fine; another request with the nonce is a replay.
    expect((await handler(post({ blackbox: BLACKBOX, nonce }, 'key-first-use'))).status).toBe(200);
    expect(await code(await handler(post({ blackbox: BLACKBOX, nonce }, 'key-replayed')))).toEqual([
      409,
      'nonce_reused',
    ]);
    expect(await code(await handler(post({ blackbox: BLACKBOX, nonce })))).toEqual([409, 'nonce_reused']);
    expect(emulator!.inspect.transactions()).toHaveLength(1);
  });

  it('used once across instances sharing a store', async () => {
    const store = createMemoryStore();
    const [a, b] = [await setup(store), await setup(store)];
    const nonce = await createCaptureNonce({ secret: SECRET, subject: 'order-1' });
    const answers = await Promise.all([a(post({ blackbox: BLACKBOX, nonce })), b(post({ blackbox: BLACKBOX, nonce }))]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
  });

  it('a store that cannot claim the nonce is 503 with Retry-After, not a pass', async () => {
    const handler = await setup({
      ...createMemoryStore(),
      setIfAbsent: async () => {
        throw new Error('down');
      },
    });
    const nonce = await createCaptureNonce({ secret: SECRET, subject: 'order-1' });
    const response = await handler(post({ blackbox: BLACKBOX, nonce }));
    expect(await code(response.clone())).toEqual([503, 'store_unavailable']);
    expect(response.headers.get('retry-after')).toBe('1');
  });

  it('refuses to start with a short nonceSecret', async () => {
    emulator = await startEmulator();
    const client = clientOn(emulator);
    expect(() =>
      createDeviceRiskHandler({
        answer: 'checked',
        client,
        allowedOrigins: [SHOP],
        nonceSecret: 'short',
        resolveCustomer: () => ({ customerInternalReference: 'o' }),
      }),
    ).toThrow(expect.objectContaining({ code: 'invalid_configuration' }));
  });
});
