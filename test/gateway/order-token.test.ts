import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  MAX_ORDER_TOKEN_SECONDS,
  ORDER_TOKEN_HEADER,
  mintOrderToken,
  orderKey,
  orderTokenStatus,
  OrderTokenError,
  verifyOrderToken,
} from '../../src/gateway/order-token.js';

const SECRET = 'order-secret-of-32-characters-ok';
const NOW = 1_800_000_000;
const b64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/** A token as any language's standard library signs one: header, claims, HMAC-SHA256. */
function sign(claims: object, header: object = { alg: 'HS256', typ: 'JWT' }, secret = SECRET): string {
  const unsigned = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`;
}

/** A token signed over claims given as they are. */
function signRaw(claims: string): string {
  const unsigned = `${b64url('{"alg":"HS256"}')}.${claims}`;
  return `${unsigned}.${createHmac('sha256', SECRET).update(unsigned).digest('base64url')}`;
}

async function refusal(token: string | null, now = NOW): Promise<OrderTokenError> {
  const error = await verifyOrderToken(token, await orderKey(SECRET), now).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OrderTokenError);
  return error as OrderTokenError;
}

describe('the order token', () => {
  it('names the order: sub and uref', async () => {
    const key = await orderKey(SECRET);
    expect(await verifyOrderToken(sign({ sub: 'order-42', uref: 'user-7', exp: NOW + 600 }), key, NOW)).toEqual({
      customerInternalReference: 'order-42',
      userReference: 'user-7',
    });
    expect(await verifyOrderToken(sign({ sub: 'order-42', exp: NOW + 600 }), key, NOW)).toEqual({
      customerInternalReference: 'order-42',
    });
  });

  it('is what mintOrderToken mints', async () => {
    const token = await mintOrderToken(SECRET, { customerInternalReference: 'order-1', userReference: 'u' }, 60, NOW);
    expect(token).toBe(sign({ sub: 'order-1', uref: 'u', exp: NOW + 60 }));
    expect(await verifyOrderToken(token, await orderKey(SECRET), NOW)).toMatchObject({
      customerInternalReference: 'order-1',
    });
  });

  it('refuses a missing token: order_token_missing', async () => {
    expect((await refusal(null)).code).toBe('order_token_missing');
    expect((await refusal('')).code).toBe('order_token_missing');
  });

  it('refuses an expired token: order_token_expired', async () => {
    const error = await refusal(sign({ sub: 'o', exp: NOW }));
    expect(error.code).toBe('order_token_expired');
    expect((await refusal(sign({ sub: 'o', exp: NOW + 10 }), NOW + 11)).code).toBe('order_token_expired');
  });

  const INVALID: Array<[string, () => string, string]> = [
    ['another key', () => sign({ sub: 'o', exp: NOW + 60 }, undefined, 'x'.repeat(32)), 'bad signature'],
    [
      'a changed claim',
      () =>
        sign({ sub: 'o', exp: NOW + 60 }).replace(
          /\.[^.]+\./,
          `.${b64url(JSON.stringify({ sub: 'p', exp: NOW + 60 }))}.`,
        ),
      'bad signature',
    ],
    ['alg none', () => `${b64url('{"alg":"none"}')}.${b64url(JSON.stringify({ sub: 'o', exp: NOW + 60 }))}.`, 'HS256'],
    ['HS512', () => sign({ sub: 'o', exp: NOW + 60 }, { alg: 'HS512' }), 'HS256'],
    ['two parts', () => 'abc.def', 'JWT'],
    ['no exp', () => sign({ sub: 'o' }), 'exp'],
    ['exp as text', () => sign({ sub: 'o', exp: String(NOW + 60) }), 'exp'],
    ['exp more than an hour ahead', () => sign({ sub: 'o', exp: NOW + MAX_ORDER_TOKEN_SECONDS + 120 }), 'ahead'],
    ['nbf in the future', () => sign({ sub: 'o', exp: NOW + 600, nbf: NOW + 300 }), 'nbf'],
    ['no sub', () => sign({ exp: NOW + 60 }), 'sub'],
    ['a numeric uref', () => sign({ sub: 'o', uref: 7, exp: NOW + 60 }), 'uref'],
    ['signed claims that are no JSON object', () => signRaw(b64url('[1]')), 'JSON claims'],
    ['signed claims that are no UTF-8', () => signRaw(b64url(Buffer.from([0xff, 0xfe]))), 'JSON claims'],
    ['a signature that is no base64url', () => `${sign({ sub: 'o', exp: NOW + 60 }).slice(0, -2)}!!`, 'signature'],
  ];
  it.each(INVALID)('refuses %s: order_token_invalid', async (_name, token, why) => {
    const error = await refusal(token());
    expect(error.code).toBe('order_token_invalid');
    expect(error.message).toContain(why);
    // Never the secret in what it says.
    expect(error.message).not.toContain(SECRET);
  });

  it('takes an exp up to an hour ahead (and a minute of skew)', async () => {
    const key = await orderKey(SECRET);
    await expect(
      verifyOrderToken(sign({ sub: 'o', exp: NOW + MAX_ORDER_TOKEN_SECONDS }), key, NOW),
    ).resolves.toBeDefined();
  });
});

describe('the order token at its edges', () => {
  const verify = async (token: string, now = NOW) => verifyOrderToken(token, await orderKey(SECRET), now);

  it('takes exp at an hour and a minute of skew ahead, and nbf up to a minute ahead; not one second more', async () => {
    const edge = NOW + MAX_ORDER_TOKEN_SECONDS + 60;
    await expect(verify(sign({ sub: 'o', exp: edge }))).resolves.toEqual({ customerInternalReference: 'o' });
    expect((await refusal(sign({ sub: 'o', exp: edge + 1 }))).code).toBe('order_token_invalid');
    await expect(verify(sign({ sub: 'o', exp: NOW + 60, nbf: NOW + 60 }))).resolves.toBeDefined();
    await expect(verify(sign({ sub: 'o', exp: NOW + 60, nbf: NOW - 600 }))).resolves.toBeDefined();
    expect((await refusal(sign({ sub: 'o', exp: NOW + 60, nbf: NOW + 61 }))).message).toContain('nbf');
    // An nbf that is no number is no claim of validity at all.
    await expect(verify(sign({ sub: 'o', exp: NOW + 60, nbf: String(NOW + 600) }))).resolves.toBeDefined();
  });

  it('takes references of 1 to 100 characters, never an empty one', async () => {
    await expect(verify(sign({ sub: 'o'.repeat(100), uref: 'u'.repeat(100), exp: NOW + 60 }))).resolves.toEqual({
      customerInternalReference: 'o'.repeat(100),
      userReference: 'u'.repeat(100),
    });
    expect((await refusal(sign({ sub: '', exp: NOW + 60 }))).message).toContain('sub');
    expect((await refusal(sign({ sub: 'o', uref: '', exp: NOW + 60 }))).message).toContain('uref');
    expect((await refusal(sign({ sub: 'o', uref: 'u'.repeat(101), exp: NOW + 60 }))).message).toContain('uref');
    expect((await refusal(sign({ sub: 7, exp: NOW + 60 }))).code).toBe('order_token_invalid');
  });

  it("refuses a uref the service forbids (its rule for userReference) as a malformed token, 401's code", async () => {
    // Counted as the service's rule counts (src/server/api/account.ts): UTF-16 code units, so
    // 51 characters outside the Basic Multilingual Plane are 102.
    for (const uref of ['u\ud800', '\udc00u', '😀'.repeat(51), 7, null]) {
      const error = await refusal(sign({ sub: 'o', uref, exp: NOW + 60 }));
      expect(error.code).toBe('order_token_invalid');
      expect(error.message).toContain('uref must be 1 to 100 UTF-16 code units of text');
    }
    await expect(verify(sign({ sub: 'o', uref: '😀'.repeat(50), exp: NOW + 60 }))).resolves.toBeDefined();
  });

  it("refuses a sub the service forbids (its rule for customerInternalReference): 422's code", async () => {
    for (const sub of [
      '',
      'o'.repeat(101),
      'INV/2026/0001',
      'A%20B',
      'ord;x',
      'a<b',
      'a>b',
      'a"b',
      'a`b',
      'a{b}',
      'a|b',
      // Half of a surrogate pair on its own, first, last or between: no text to send or key by.
      '\ud800abc',
      'abc\udc00',
      'a\udbff\udbffb',
      // Steps in a URL path: GET /decisions/{reference} could never find them.
      '.',
      '..',
    ]) {
      const error = await refusal(sign({ sub, exp: NOW + 60 }));
      expect([sub, error.code]).toEqual([sub, 'order_token_sub_invalid']);
      expect(orderTokenStatus(error.code)).toBe(422);
    }
    expect((await refusal(sign({ sub: 'a/b', exp: NOW + 60 }))).message).toBe(
      'the Order-Token\'s sub: customerInternalReference must not contain any of < > " / ; ` % { } |',
    );
    expect((await refusal(sign({ sub: '\ud800abc', exp: NOW + 60 }))).message).toBe(
      "the Order-Token's sub: customerInternalReference must be text: it holds half of a UTF-16 surrogate pair on its own",
    );
    expect(orderTokenStatus('order_token_invalid')).toBe(401);
    await expect(verify(sign({ sub: 'INV-2026-0001 #3 (ok)', exp: NOW + 60 }))).resolves.toBeDefined();
    expect((await refusal(sign({ sub: '..', exp: NOW + 60 }))).message).toBe(
      'the Order-Token\'s sub: ".." is no order\'s reference in a URL path',
    );
    await expect(verify(sign({ sub: '...', exp: NOW + 60 }))).resolves.toBeDefined();
    // A whole pair is text (an emoji): accepted.
    await expect(verify(sign({ sub: 'order-\ud83d\ude00', exp: NOW + 60 }))).resolves.toBeDefined();
  });

  it('refuses another typ, and headers or parts that are not base64url JSON objects', async () => {
    const claims = { sub: 'o', exp: NOW + 60 };
    await expect(verify(sign(claims, { alg: 'HS256' }))).resolves.toBeDefined();
    expect((await refusal(sign(claims, { alg: 'HS256', typ: 'JWS' }))).message).toContain('HS256');
    const [, body, mac] = sign(claims).split('.') as [string, string, string];
    for (const head of ['bnVsbA', 'WzFd', 'e30+', 'e30=', '!!!!', 'e30'.slice(0, 1)])
      expect((await refusal(`${head}.${body}.${mac}`)).code).toBe('order_token_invalid');
    // Unpadded base64url of every length decodes: a header of 1, 2 and 3 bytes past a multiple of 3.
    for (const extra of ['', ' ', '  '])
      await expect(verify(sign(claims, JSON.parse(`{"alg":"HS256"${extra}}`) as object))).resolves.toBeDefined();
    expect((await refusal(`${b64url('{"alg":"HS256"}')}.${b64url('{"sub":"o"')}.${mac}`)).code).toBe(
      'order_token_invalid',
    );
  });

  it('says what it refuses, as an OrderTokenError, and mints base64url with the clock as default', async () => {
    const missing = await refusal(null);
    expect(missing.name).toBe('OrderTokenError');
    expect(missing.message).toMatch(/no Order-Token header/);
    expect((await refusal(sign({ sub: 'o', exp: NOW }))).message).toMatch(/expired/);
    expect(ORDER_TOKEN_HEADER).toBe('order-token');
    // The real clock on both sides: minted now, valid now (seconds, not milliseconds).
    const token = await mintOrderToken(SECRET, { customerInternalReference: 'o???~~~' }, 60);
    await expect(verifyOrderToken(token, await orderKey(SECRET))).resolves.toEqual({
      customerInternalReference: 'o???~~~',
    });
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    // The key cannot be exported: the secret stays in WebCrypto.
    expect((await orderKey(SECRET)).extractable).toBe(false);
  });
});
