// The endpoint against an attacker, on a stub client: unauthenticated outcome reports cannot
// fill the store (and so cannot make it forget a used nonce), a full memory store refuses new
// work instead of forgetting a claim, and the browser's answer never depends on onResult.
import { describe, expect, it } from 'vitest';
import { stubClient } from '../../support/stub-client.js';
import {
  createCaptureNonce,
  createMemoryStore,
  type DeviceRiskClient,
  type DeviceRiskHandlerOptions,
  type Store,
} from '../../../src/server/index.js';
import { BLACKBOX, blackboxOf, handlerWith as checkoutHandler, SHOP } from '../../support/kit.js';
const SECRET = 'a-nonce-secret-of-at-least-32-characters';
const OUTCOME = { outcome: 'collection_failed', scripts: ['fp_static_wdp'], durationMs: 900 };

const post = (body: unknown, key: string) =>
  new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
  });

/** The endpoint with capture nonces. */
const handlerWith = (client: DeviceRiskClient, extra: Partial<DeviceRiskHandlerOptions> = {}) =>
  checkoutHandler(client, { nonceSecret: SECRET, ...extra });

/** A memory store that counts the writes of keys it did not hold. */
function countingStore(): Store & { newKeys: () => number } {
  const inner = createMemoryStore();
  const keys = new Set<string>();
  const note = (key: string) => void keys.add(key);
  return {
    ...inner,
    set: (k, v, t) => {
      note(k);
      return inner.set(k, v, t);
    },
    setIfAbsent: (k, v, t) => {
      note(k);
      return inner.setIfAbsent(k, v, t);
    },
    newKeys: () => keys.size,
  };
}

describe('outcome-only reports: anyone can send them, so they write nothing to the store', () => {
  it('20,000 reports, each with a key of its own, write nothing; a used nonce stays used', async () => {
    const { client, creates } = stubClient();
    const store = countingStore();
    const told: unknown[] = [];
    const handler = handlerWith(client, { store, onOutcome: (o) => void told.push(o) });
    const nonce = await createCaptureNonce({ secret: SECRET, subject: 'order-1' });
    expect((await handler(post({ blackbox: blackboxOf('checkout-key-1'), nonce }, 'checkout-key-1'))).status).toBe(200);
    const written = store.newKeys();
    const statuses = new Set<number>();
    for (let i = 0; i < 20_000; i++)
      statuses.add((await handler(post({ outcome: OUTCOME }, `report-key-${i}`))).status);
    expect(store.newKeys()).toBe(written);
    expect([...statuses].sort()).toEqual([202, 429]);
    const replay = await handler(post({ blackbox: blackboxOf('checkout-key-2'), nonce }, 'checkout-key-2'));
    expect(replay.status).toBe(409);
    expect(await replay.json()).toMatchObject({ error: { code: 'nonce_reused' } });
    expect(creates()).toBe(1);
  }, 60_000); // 20,000 requests: seconds on a busy machine

  it('on the default memory store too: the replay after 20,000 reports is refused', async () => {
    const { client, creates } = stubClient();
    const handler = handlerWith(client, { idempotencyMaxKeys: 10 });
    const nonce = await createCaptureNonce({ secret: SECRET, subject: 'order-1' });
    expect((await handler(post({ blackbox: blackboxOf('checkout-key-1'), nonce }, 'checkout-key-1'))).status).toBe(200);
    for (let i = 0; i < 20_000; i++) await handler(post({ outcome: OUTCOME }, `report-key-${i}`));
    expect((await handler(post({ blackbox: blackboxOf('checkout-key-2'), nonce }, 'checkout-key-2'))).status).toBe(409);
    expect(creates()).toBe(1);
  }, 60_000);

  it('are bounded per second: past a burst, 429 with Retry-After, not told; the bound refills with time', async () => {
    let now = 1_800_000_000_000;
    const { client } = stubClient();
    const told: unknown[] = [];
    const handler = handlerWith(client, {
      now: () => now,
      maxOutcomeReportsPerSecond: 2,
      onOutcome: (o) => void told.push(o),
    });
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await handler(post({ outcome: OUTCOME }, `report-key-${i}`))).status);
    expect(statuses).toEqual([...Array(10).fill(202), 429, 429]); // a burst of 5 s worth
    expect(told).toHaveLength(10);
    const refused = await handler(post({ outcome: OUTCOME }, 'report-key-x'));
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ error: { code: 'too_many_reports' } });
    now += 1000;
    expect((await handler(post({ outcome: OUTCOME }, 'report-key-y'))).status).toBe(202);
    expect((await handler(post({ outcome: OUTCOME }, 'report-key-z'))).status).toBe(202);
    expect((await handler(post({ outcome: OUTCOME }, 'report-key-w'))).status).toBe(429);
  });

  it('a report retried with its key is told once', async () => {
    const { client } = stubClient();
    const told: unknown[] = [];
    const handler = handlerWith(client, { onOutcome: (o) => void told.push(o) });
    for (let i = 0; i < 3; i++) expect((await handler(post({ outcome: OUTCOME }, 'report-key-1'))).status).toBe(202);
    expect(told).toHaveLength(1);
  });

  it.each([
    ['no key', null, 2],
    ['a key too short to be one (7 characters)', 'k'.repeat(7), 2],
    ['a key too long to be one (201 characters)', 'k'.repeat(201), 2],
    ['a key with a space', 'report key 1', 2],
    ['a key of 8 characters', 'k'.repeat(8), 1],
    ['a key of 200 characters', 'k'.repeat(200), 1],
  ])('reports with %s, sent twice, are told %i time(s)', async (_, key, times) => {
    const { client } = stubClient();
    const told: unknown[] = [];
    const handler = handlerWith(client, { onOutcome: (o) => void told.push(o) });
    const report = () =>
      new Request(`${SHOP}/device-risk`, {
        method: 'POST',
        headers: {
          origin: SHOP,
          'content-type': 'application/json',
          ...(key === null ? {} : { 'idempotency-key': key }),
        },
        body: JSON.stringify({ outcome: OUTCOME }),
      });
    for (let i = 0; i < 2; i++) expect((await handler(report())).status).toBe(202);
    expect(told).toHaveLength(times);
  });

  it('a bound that is not a positive number is refused at creation', () => {
    const { client } = stubClient();
    for (const bad of [0, -1, Number.NaN])
      expect(() => handlerWith(client, { maxOutcomeReportsPerSecond: bad })).toThrow(
        expect.objectContaining({ code: 'invalid_configuration' }),
      );
  });
});

describe('a full memory store refuses new work; it never forgets a claim', () => {
  it('503 store_full with Retry-After for a new checkout; a used nonce is still refused; a done key still answers', async () => {
    let now = 1_800_000_000_000;
    const { client, creates } = stubClient();
    const handler = handlerWith(client, { idempotencyMaxKeys: 2, now: () => now });
    const nonces = await Promise.all(
      [1, 2, 3].map(() => createCaptureNonce({ secret: SECRET, subject: 'order-1', now: () => now })),
    );
    const first = await handler(post({ blackbox: blackboxOf('checkout-key-1'), nonce: nonces[0] }, 'checkout-key-1'));
    expect(first.status).toBe(200);
    expect(
      (await handler(post({ blackbox: blackboxOf('checkout-key-2'), nonce: nonces[1] }, 'checkout-key-2'))).status,
    ).toBe(200);
    // Eight entries: two records, two nonce claims and two blackbox claims are held; a third
    // key's claims fit, its lease does not.
    const refusal = await handler(post({ blackbox: blackboxOf('checkout-key-3'), nonce: nonces[2] }, 'checkout-key-3'));
    expect(refusal.status).toBe(503);
    expect(await refusal.json()).toMatchObject({ error: { code: 'store_full' } });
    expect(Number(refusal.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // What it holds still holds: the first key's nonce and blackbox stay used.
    expect(
      (await handler(post({ blackbox: blackboxOf('checkout-key-9'), nonce: nonces[0] }, 'checkout-key-9'))).status,
    ).not.toBe(200);
    expect(creates()).toBe(2); // refused before any call to the service
    // Once the records expire (24 h), there is room again.
    now += 24 * 3_600_000 + 1;
    const later = await createCaptureNonce({ secret: SECRET, subject: 'order-1', now: () => now });
    expect(
      (await handler(post({ blackbox: blackboxOf('checkout-key-5'), nonce: later }, 'checkout-key-5'))).status,
    ).toBe(200);
  });
});

describe("the browser's answer never depends on onResult", () => {
  it('an onResult that throws for one decision: the same 200 as for the others, and onError is told', async () => {
    const { client } = stubClient();
    const errors: unknown[] = [];
    const handler = checkoutHandler(client, {
      onResult: (details) => {
        if ((details as unknown as { decision: string }).decision === 'REJECTED')
          throw new Error('no handler for REJECTED');
      },
      onError: (error) => void errors.push(error),
    });
    const passed = await handler(post({ blackbox: blackboxOf('checkout-key-1') }, 'checkout-key-1'));
    const rejected = await handler(post({ blackbox: BLACKBOX.replace('abc', 'abd') }, 'checkout-key-2'));
    expect([passed.status, rejected.status]).toEqual([200, 200]);
    expect(Object.keys(await rejected.json()).sort()).toEqual(Object.keys(await passed.json()).sort());
    expect(errors).toEqual([expect.objectContaining({ message: 'no handler for REJECTED' })]);
  });

  it('an onResult that rejects: the same', async () => {
    const { client } = stubClient();
    const errors: unknown[] = [];
    const handler = handlerWith(client, {
      nonceSecret: undefined,
      onResult: async () => Promise.reject(new Error('down')),
      onError: (e) => void errors.push(e),
    });
    expect((await handler(post({ blackbox: blackboxOf('checkout-key-1') }, 'checkout-key-1'))).status).toBe(200);
    expect(errors).toHaveLength(1);
  });
});

describe('admission before cost: one visitor or one customer cannot spend what others need', () => {
  const at = (address: string) => ({ clientAddress: address });
  const postFor = (key: string) =>
    new Request(`${SHOP}/device-risk`, {
      method: 'POST',
      headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ blackbox: blackboxOf(key) }),
    });

  it('250 posts from one address: past the burst, 429 too_many_checkouts with Retry-After, no store write and no create; another address goes on', async () => {
    const { client, creates } = stubClient();
    const store = countingStore();
    const errors: { code?: string }[] = [];
    let n = 0;
    const handler = checkoutHandler(client, {
      store,
      // Each post a customer of its own: only the address bucket can hold the flood.
      resolveCustomer: () => ({ customerInternalReference: `guest-${++n}` }),
      onError: (e) => void errors.push(e as { code?: string }),
    });
    const answers = [];
    for (let i = 0; i < 250; i++) answers.push(await handler(postFor(`flood-key-${i}`), at('203.0.113.9')));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.slice(5).every((s) => s === 429)).toBe(true);
    const refused = answers[5]!;
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('too_many_checkouts');
    expect(Number(refused.headers.get('retry-after'))).toBe(10);
    expect(creates()).toBe(5);
    const keysAfterFlood = store.newKeys();
    // Each refusal is logged, as a rate limit with its wait.
    expect(errors.filter((e) => e.code === 'rate_limited')).toHaveLength(245);
    // An honest shopper on another address is not held up.
    expect((await handler(postFor('honest-key-1'), at('198.51.100.7'))).status).toBe(200);
    expect(store.newKeys()).toBeGreaterThan(keysAfterFlood);
  });

  it('200 posts from 200 addresses of one IPv6 /64 are one visitor: the burst, then 429; a shopper outside it goes on', async () => {
    const { client, creates } = stubClient();
    let n = 0;
    const handler = checkoutHandler(client, {
      resolveCustomer: () => ({ customerInternalReference: `guest-${++n}` }),
      onError: () => {},
    });
    const answers = [];
    for (let i = 1; i <= 200; i++)
      answers.push(
        await handler(postFor(`v6-flood-${i}`), at(`2001:db8:66:1:${i.toString(16)}:a:b:${i.toString(16)}`)),
      );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.slice(5).every((s) => s === 429)).toBe(true);
    expect(((await answers[199]!.json()) as { error: { code: string } }).error.code).toBe('too_many_checkouts');
    expect(creates()).toBe(5);
    // The next /64, an IPv4 shopper, and the same shopper as Node's dual-stack socket gives it.
    expect((await handler(postFor('honest-v6-1'), at('2001:db8:66:2::1'))).status).toBe(200);
    expect((await handler(postFor('honest-v4-1'), at('198.51.100.7'))).status).toBe(200);
    for (let i = 2; i <= 5; i++)
      expect((await handler(postFor(`honest-v4-${i}`), at('::ffff:198.51.100.7'))).status).toBe(200);
    expect((await handler(postFor('honest-v4-6'), at('[::ffff:198.51.100.7]'))).status).toBe(429);
  });

  it('addressPrefix sets the network one visitor holds, and is checked when the handler is made', async () => {
    const { client } = stubClient();
    let n = 0;
    const handler = checkoutHandler(client, {
      resolveCustomer: () => ({ customerInternalReference: `guest-${++n}` }),
      addressPrefix: { ipv4: 24, ipv6: 128 },
      onError: () => {},
    });
    const statuses = [];
    for (let i = 1; i <= 6; i++) statuses.push((await handler(postFor(`v4-net-${i}`), at(`192.0.2.${i}`))).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    // Each IPv6 address its own visitor.
    for (let i = 1; i <= 6; i++) expect((await handler(postFor(`v6-own-${i}`), at(`2001:db8::${i}`))).status).toBe(200);
    for (const addressPrefix of [{ ipv6: 0 }, { ipv4: 33 }, { ipv6: 64.5 }, null])
      expect(() => checkoutHandler(client, { addressPrefix: addressPrefix as never })).toThrow(
        expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining('addressPrefix') }),
      );
  });

  it('one customer from many addresses is held by the customer bucket', async () => {
    const { client, creates } = stubClient();
    const handler = handlerWith(client, { nonceSecret: undefined, onError: () => {} });
    const statuses = [];
    for (let i = 0; i < 12; i++) statuses.push((await handler(postFor(`cust-key-${i}`), at(`192.0.2.${i}`))).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429, 429, 429, 429, 429]);
    expect(creates()).toBe(5);
  });

  it('limits are options: false turns one off; a larger burst lets a shared address (a NAT) through', async () => {
    const { client } = stubClient();
    let n = 0;
    const handler = handlerWith(client, {
      nonceSecret: undefined,
      resolveCustomer: () => ({ customerInternalReference: `c-${++n}` }),
      checkoutsPerAddress: { burst: 20, perMinute: 60 },
      onError: () => {},
    });
    const statuses = [];
    for (let i = 0; i < 21; i++) statuses.push((await handler(postFor(`nat-key-${i}`), at('192.0.2.1'))).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses[20]).toBe(429);
    const open = handlerWith(client, {
      nonceSecret: undefined,
      checkoutsPerAddress: false,
      checkoutsPerCustomer: false,
    });
    for (let i = 0; i < 12; i++) expect((await open(postFor(`open-key-${i}`), at('192.0.2.1'))).status).toBe(200);
    expect(() => handlerWith(client, { checkoutsPerCustomer: { burst: 0, perMinute: 1 } })).toThrow(
      expect.objectContaining({ code: 'invalid_configuration' }),
    );
  });

  it('without a caller address the per-address limit cannot apply: said once on the console, the customer bucket still holds', async () => {
    const { client } = stubClient();
    const warnings: unknown[] = [];
    const warn = console.warn;
    console.warn = (...args: unknown[]) => void warnings.push(args.join(' '));
    try {
      const handler = handlerWith(client, { nonceSecret: undefined, onError: () => {} });
      const statuses = [];
      for (let i = 0; i < 6; i++) statuses.push((await handler(postFor(`noaddr-key-${i}`))).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
      expect(warnings).toEqual([expect.stringContaining('no caller address was given')]);
    } finally {
      console.warn = warn;
    }
  });

  it('a create the service refused (429) keeps no record: 60 refused checkouts leave a store of 60 keys room for an honest one', async () => {
    let refuse = true;
    const { DeviceRiskError } = await import('../../../src/server/errors.js');
    const { client, creates } = stubClient();
    const refusing = {
      ...client,
      createAccount: (body: never) =>
        refuse
          ? Promise.reject(
              new DeviceRiskError('rate_limited', 'busy', { status: 429, operation: 'account create', retryAfter: 1 }),
            )
          : client.createAccount(body),
    } as DeviceRiskClient;
    let n = 0;
    const handler = handlerWith(refusing, {
      nonceSecret: undefined,
      idempotencyMaxKeys: 20,
      resolveCustomer: () => ({ customerInternalReference: `c-${++n}` }),
      checkoutsPerAddress: false,
      onError: () => {},
    });
    for (let i = 0; i < 60; i++)
      expect((await handler(postFor(`refused-key-${i}`), at(`192.0.2.${i}`))).status).toBe(503);
    refuse = false;
    expect((await handler(postFor('honest-key-2'), at('198.51.100.8'))).status).toBe(200);
    expect(creates()).toBe(1);
  });
});
