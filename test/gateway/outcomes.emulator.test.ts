// Every accepted order ends in exactly one signed outcome, with `blackbox-capture serve` as a
// process of its own on the emulated service (docs/gateway.md#one-order-one-check): an order
// the service would refuse is refused at the door; a second checkout of an order is 409; an
// accepted checkout that can never be checked is told as `device_risk.failed`, signed (the
// receiver verifies each delivery with the standardwebhooks package).
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mintOrderToken } from '../../src/gateway/order-token.js';
import { DATA_FILE } from '../../src/server/queue/default.js';
import {
  DECISIONS_TOKEN,
  drained,
  gatewayEnvironment,
  ORDER_SECRET,
  postCheckout,
  startGatewayProcess,
  useGateway,
  webhookReceiver,
} from '../support/gateway.js';
import { offWebhook } from '../support/openapi.js';
import { blackboxOf, SHOP } from '../support/kit.js';
import { execIn } from '../support/sqlite.js';

const { startEmulator, environment, served } = useGateway();

/** A checkout under `key` (the blackbox of `blackboxKey`: a new one per key), with `token` as its Order-Token. */
const post = (url: string, token: string, key: string, from = '203.0.113.9', blackboxKey = key) =>
  fetch(`${url}/device-risk`, {
    method: 'POST',
    headers: {
      origin: SHOP,
      'content-type': 'application/json',
      'idempotency-key': key,
      'order-token': token,
      'x-forwarded-for': from,
    },
    body: JSON.stringify({ blackbox: blackboxOf(blackboxKey) }),
  });

const poll = (url: string, order: string) =>
  fetch(`${url}/decisions/${encodeURIComponent(order)}`, { headers: { authorization: `Bearer ${DECISIONS_TOKEN}` } });

describe('every accepted order ends in exactly one signed outcome (serve as a process)', () => {
  it('refuses at the door an order reference the service forbids: 422 order_token_sub_invalid, logged', async () => {
    const { emulator, gateway } = await served();
    for (const order of ['INV/2026/0001', 'A%20B', 'ord;x', 'x'.repeat(101)]) {
      const answer = await postCheckout(gateway.url, { order });
      expect(answer.status).toBe(422);
      const body = (await answer.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('order_token_sub_invalid');
      expect(body.error.message).toMatch(/^the Order-Token's sub: customerInternalReference must/);
    }
    await expect
      .poll(gateway.output)
      .toContain(
        "refused a checkout: order_token_sub_invalid (the Order-Token's sub: customerInternalReference must not contain",
      );
    expect(gateway.output()).toContain('must be 1 to 100 UTF-16 code units');
    // Nothing reached the service: no account, no transaction.
    expect(emulator.inspect.transactions()).toHaveLength(0);
  });

  it('checks an order once: another checkout of it is 409 order_already_checked, a retry of its key its first answer', async () => {
    const { emulator, shop, gateway } = await served({ TRUSTED_FRONTS: '127.0.0.1' });
    const token = await mintOrderToken(ORDER_SECRET, { customerInternalReference: 'order-once' });
    const first = await post(gateway.url, token, 'first-key-of-order-once');
    expect(first.status).toBe(202);
    for (let i = 0; i < 4; i++) {
      const again = await post(gateway.url, token, `another-key-${i}-of-order-once`, `203.0.113.${20 + i}`);
      expect(again.status).toBe(409);
      expect(await again.json()).toMatchObject({ error: { code: 'order_already_checked' } });
    }
    // The browser's retry under its own key: the kit's answer for that key, never a refusal.
    const retry = await post(gateway.url, token, 'first-key-of-order-once');
    expect([200, 202]).toContain(retry.status);
    await expect.poll(() => shop.received.length, { timeout: 15_000 }).toBe(1);
    expect(shop.received[0]!.event).toMatchObject({
      type: 'device_risk.decision',
      data: { customerInternalReference: 'order-once' },
    });
    expect(emulator.inspect.transactions()).toHaveLength(1);
    await expect.poll(gateway.output, { timeout: 10_000 }).toContain('refused a checkout: order_already_checked');
  });

  it('gives back the claim of a checkout it did not accept: the order can be checked by the next', async () => {
    const { shop, gateway } = await served({ TRUSTED_FRONTS: '127.0.0.1' });
    const token = (order: string) => mintOrderToken(ORDER_SECRET, { customerInternalReference: order });
    expect((await post(gateway.url, await token('order-a'), 'key-of-order-a')).status).toBe(202);
    // Order B's first checkout reuses order A's blackbox: refused by the kit after B was claimed.
    const reused = await post(
      gateway.url,
      await token('order-b'),
      'first-key-of-order-b',
      '203.0.113.9',
      'key-of-order-a',
    );
    expect(reused.status).toBe(422);
    expect(await reused.json()).toMatchObject({ error: { code: 'blackbox_reused' } });
    // Not accepted, so not B's check: the next checkout of B is.
    expect((await post(gateway.url, await token('order-b'), 'second-key-of-order-b', '203.0.113.10')).status).toBe(202);
    await expect.poll(shop.orders, { timeout: 15_000 }).toEqual(['order-a', 'order-b']);
  });

  it("sends DECISION_URL's user:pass@ as HTTP Basic, and never logs it", async () => {
    const emulator = await startEmulator();
    const shop = await webhookReceiver(undefined, `Basic ${Buffer.from('shop:s3cret pass').toString('base64')}`);
    const withCredentials = shop.url.replace('http://', 'http://shop:s3cret%20pass@');
    const gateway = await startGatewayProcess(gatewayEnvironment(emulator, withCredentials));
    expect((await postCheckout(gateway.url, { order: 'order-basic' })).status).toBe(202);
    await expect.poll(shop.orders, { timeout: 15_000 }).toEqual(['order-basic']);
    expect(shop.attempts()).toBe(1);
    expect(gateway.output()).not.toContain('s3cret');
  });

  it('tells an accepted checkout that can never be checked as device_risk.failed, signed, once', async () => {
    // The admin listener: its /metrics says what the gateway has left to send (`drained`).
    const { emulator, shop, env } = await environment({ TRUSTED_FRONTS: '127.0.0.1', ADMIN_PORT: '0' });
    // The service refuses the account create for good (a 400 no retry can mend).
    emulator.faults.fail('accountCreate', { times: 10, status: 400 });
    const gateway = await startGatewayProcess(env);
    const answer = await postCheckout(gateway.url, { order: 'order-refused-by-service' });
    expect(answer.status).toBe(202);
    await expect.poll(() => shop.received.length, { timeout: 15_000 }).toBe(1);
    const [{ id, event }] = shop.received as [(typeof shop.received)[number]];
    expect(event).toMatchObject({
      type: 'device_risk.failed',
      data: {
        customerInternalReference: 'order-refused-by-service',
        userReference: null,
        code: 'request_rejected',
        lastError: null,
      },
    });
    expect(id).toMatch(/^msg_failed_[0-9a-f]{32}$/);
    expect(offWebhook(event, 'failed')).toEqual([]);
    expect(offWebhook(event, 'decision')).not.toEqual([]);
    // The poll tells the same, delivered.
    const polled = await poll(gateway.url, 'order-refused-by-service');
    expect(await polled.json()).toMatchObject({ type: 'device_risk.failed', delivered: true, webhookId: id });
    // The log names the order and why.
    await expect
      .poll(gateway.output, { timeout: 10_000 })
      .toMatch(/not_checked .*\(request_rejected\).*\(order order-refused-by-service\)/);
    // Once: no second failure, no decision. Final once nothing is left to send: the check has left
    // the queue (the failure is handed to the outbox as it leaves), and the outbox is empty (the
    // failure's record, one per order and made only if absent, leaves it once the shop answered 2xx).
    await drained(gateway.adminUrl!);
    expect(shop.attempts()).toBe(1);
  });

  it('a failure its outbox could not take: the checkout stays queued and the shop is told once the outbox takes it', async () => {
    const { emulator, shop, env } = await environment({ TRUSTED_FRONTS: '127.0.0.1' });
    emulator.faults.fail('accountCreate', { times: 1_000_000, status: 400 });
    const gateway = await startGatewayProcess(env);
    // The outbox refuses the failure's record (and only it): a store write that fails, as a full
    // disk or a Redis away would, put in by a trigger in the gateway's own file.
    const file = join(env.DATA_DIR!, DATA_FILE);
    execIn(
      file,
      `CREATE TRIGGER outbox_away BEFORE INSERT ON store_entries WHEN NEW.key LIKE 'gateway:outbox:decision:failed%'
       BEGIN SELECT RAISE(ABORT, 'outbox away for the test'); END`,
    );
    expect((await postCheckout(gateway.url, { order: 'order-outbox-away' })).status).toBe(202);
    // Refused twice: the job came back to tell it again, and did not check it again.
    const refusals = () => gateway.output().split('outbox away for the test').length - 1;
    await expect.poll(refusals, { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
    expect(shop.received).toEqual([]);
    // The outbox back: the checkout, still queued, is tried again and its failure told, once.
    execIn(file, 'DROP TRIGGER outbox_away');
    await expect.poll(shop.orders, { timeout: 20_000 }).toEqual(['order-outbox-away']);
    expect(shop.received[0]!.event).toMatchObject({ type: 'device_risk.failed', data: { code: 'request_rejected' } });
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
  });
});
