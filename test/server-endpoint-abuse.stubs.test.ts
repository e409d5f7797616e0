// The endpoint against an attacker, on a stub client: unauthenticated outcome reports cannot
// fill the store (and so cannot make it forget a used nonce), a full memory store refuses new
// work instead of forgetting a claim, and the browser's answer never depends on onResult.
import { describe, expect, it } from 'vitest';
import { stubClient } from './support/stub-client.js';
import {
  createCaptureNonce,
  createDeviceRiskHandler,
  createMemoryStore,
  type DeviceRiskClient,
  type DeviceRiskHandlerOptions,
  type Store,
} from '../src/server/index.js';

const SHOP = 'https://shop.example';
const BLACKBOX = '0400' + 'nVQ+/abc'.repeat(150) + '==';
const SECRET = 'a-nonce-secret-of-at-least-32-characters';
const OUTCOME = { outcome: 'collection_failed', scripts: ['fp_static_wdp'], durationMs: 900 };

const post = (body: unknown, key: string) =>
  new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
  });

function handlerWith(client: DeviceRiskClient, extra: Partial<DeviceRiskHandlerOptions> = {}) {
  return createDeviceRiskHandler({
    client,
    allowedOrigins: [SHOP],
    workflowKey: 10020,
    nonceSecret: SECRET,
    resolveCustomer: () => ({ customerInternalReference: 'order-1' }),
    ...extra,
  });
}

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
    expect((await handler(post({ blackbox: BLACKBOX, nonce }, 'checkout-key-1'))).status).toBe(200);
    const written = store.newKeys();
    const statuses = new Set<number>();
    for (let i = 0; i < 20_000; i++)
      statuses.add((await handler(post({ outcome: OUTCOME }, `report-key-${i}`))).status);
    expect(store.newKeys()).toBe(written);
    expect([...statuses].sort()).toEqual([202, 429]);
    const replay = await handler(post({ blackbox: BLACKBOX, nonce }, 'checkout-key-2'));
    expect(replay.status).toBe(409);
    expect(await replay.json()).toMatchObject({ error: { code: 'nonce_reused' } });
    expect(creates()).toBe(1);
  }, 60_000); // 20,000 requests: seconds on a busy machine

  it('on the default memory store too: the replay after 20,000 reports is refused', async () => {
    const { client, creates } = stubClient();
    const handler = handlerWith(client, { idempotencyMaxKeys: 10 });
    const nonce = await createCaptureNonce({ secret: SECRET, subject: 'order-1' });
    expect((await handler(post({ blackbox: BLACKBOX, nonce }, 'checkout-key-1'))).status).toBe(200);
    for (let i = 0; i < 20_000; i++) await handler(post({ outcome: OUTCOME }, `report-key-${i}`));
    expect((await handler(post({ blackbox: BLACKBOX, nonce }, 'checkout-key-2'))).status).toBe(409);
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
    const first = await handler(post({ blackbox: BLACKBOX, nonce: nonces[0] }, 'checkout-key-1'));
    expect(first.status).toBe(200);
    expect((await handler(post({ blackbox: BLACKBOX, nonce: nonces[1] }, 'checkout-key-2'))).status).toBe(200);
    // Six entries: two records and two nonce claims are held; a third key's claim and lease fit, its record does not.
    const refusal = await handler(post({ blackbox: BLACKBOX, nonce: nonces[2] }, 'checkout-key-3'));
    expect(refusal.status).toBe(503);
    expect(await refusal.json()).toMatchObject({ error: { code: 'store_full' } });
    expect(Number(refusal.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // What it holds still holds: the first key answers as before, its nonce stays used.
    expect(await (await handler(post({ blackbox: BLACKBOX, nonce: nonces[0] }, 'checkout-key-1'))).json()).toEqual(
      await first.json(),
    );
    expect((await handler(post({ blackbox: BLACKBOX, nonce: nonces[0] }, 'checkout-key-9'))).status).not.toBe(200);
    expect(creates()).toBe(2); // refused before any call to the service
    // Once the records expire (24 h), there is room again.
    now += 24 * 3_600_000 + 1;
    const later = await createCaptureNonce({ secret: SECRET, subject: 'order-1', now: () => now });
    expect((await handler(post({ blackbox: BLACKBOX, nonce: later }, 'checkout-key-5'))).status).toBe(200);
  });
});

describe("the browser's answer never depends on onResult", () => {
  it('an onResult that throws for one decision: the same 200 as for the others, and onError is told', async () => {
    const { client } = stubClient();
    const errors: unknown[] = [];
    const handler = createDeviceRiskHandler({
      client,
      allowedOrigins: [SHOP],
      workflowKey: 10020,
      resolveCustomer: () => ({ customerInternalReference: 'order-1' }),
      onResult: (details) => {
        if ((details as unknown as { decision: string }).decision === 'REJECTED')
          throw new Error('no handler for REJECTED');
      },
      onError: (error) => void errors.push(error),
    });
    const passed = await handler(post({ blackbox: BLACKBOX }, 'checkout-key-1'));
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
    expect((await handler(post({ blackbox: BLACKBOX }, 'checkout-key-1'))).status).toBe(200);
    expect(errors).toHaveLength(1);
  });
});
