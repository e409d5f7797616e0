/**
 * The OpenAPI document (src/gateway/openapi.json) against the running gateway's answers: the
 * gateway started on the emulated service, each route asked for its answers (a checkout
 * accepted, each refusal, the callback's, the decisions', the health route's) and each answer
 * held to the document (status, body schema, Retry-After, the code's statuses); the decision
 * webhook it sends to DECISION_URL too, signed as Standard Webhooks say.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { startGateway, type Gateway } from '../../src/gateway/gateway.js';
import { mintOrderToken } from '../../src/gateway/order-token.js';
import { parseSettings } from '../../src/gateway/settings.js';
import { emulatorEnvironment } from '../support/emulator-env.js';
import { offDocument, offWebhook } from '../support/openapi.js';
import { blackboxOf } from '../support/kit.js';

const ORIGIN = 'https://shop.test';
const ORDER_SECRET = randomBytes(32).toString('base64url');
const WEBHOOK_SECRET = 'whsec_' + randomBytes(24).toString('base64');
const DECISIONS_TOKEN = randomBytes(32).toString('base64url');

let emulator: Emulator;
let gateway: Gateway;
let shop: Server;
let dataDir: string;
const webhooks: { headers: Record<string, string>; body: string }[] = [];
const log: string[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ limits: false });
  shop = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      webhooks.push({ headers: request.headers as Record<string, string>, body });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
  dataDir = mkdtempSync(join(tmpdir(), 'gateway-openapi-'));
  const settings = parseSettings({
    ...emulatorEnvironment(emulator),
    ALLOWED_ORIGINS: ORIGIN,
    ORDER_SECRET,
    DECISION_URL: `http://127.0.0.1:${(shop.address() as AddressInfo).port}/webhook`,
    WEBHOOK_SECRET,
    DECISIONS_TOKEN,
    DATA_DIR: dataDir,
    PORT: '0',
    ADMIN_PORT: '0',
  });
  gateway = await startGateway(settings, { log: (line) => log.push(line) });
});
afterAll(async () => {
  await gateway?.close();
  await emulator?.close();
  await new Promise((resolve) => shop?.close(resolve));
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

// A blackbox of its own for each post: the endpoint refuses one already used for another key.
const fresh = () => JSON.stringify({ blackbox: blackboxOf(randomBytes(8).toString('hex')) });
const checkout = (headers: Record<string, string>, body: string = fresh()) =>
  fetch(gateway.url + '/device-risk', {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'application/json', ...headers },
    body,
  });
const key = () => 'key-' + randomBytes(8).toString('hex');
const token = (order: string, lifetime = 600) =>
  mintOrderToken(ORDER_SECRET, { customerInternalReference: order }, lifetime);

describe('the running gateway answers as its OpenAPI document says', () => {
  it('POST /device-risk: each refusal, with its code, status and Retry-After', async () => {
    const good = await token('order-refused');
    const answers: [string, Response][] = [
      ['no order token', await checkout({ 'idempotency-key': key() })],
      ['a forged order token', await checkout({ 'idempotency-key': key(), 'order-token': good.slice(0, -2) + 'xx' })],
      ['an expired order token', await checkout({ 'order-token': await token('order-old', -10) })],
      ['another origin', await checkout({ origin: 'https://other.test', 'order-token': good })],
      ['text/plain', await checkout({ 'content-type': 'text/plain', 'order-token': good })],
      ['not JSON', await checkout({ 'order-token': good, 'idempotency-key': key() }, '{')],
      ['a short key', await checkout({ 'order-token': good, 'idempotency-key': 'short' })],
      ['a body over 16 KiB', await checkout({ 'order-token': good }, JSON.stringify({ blackbox: 'x'.repeat(20_000) }))],
      ['GET', await fetch(gateway.url + '/device-risk', { headers: { origin: ORIGIN } })],
    ];
    const codes: string[] = [];
    for (const [why, answer] of answers) {
      const copy = answer.clone();
      expect(await offDocument('/device-risk', 'post', answer), why).toEqual([]);
      codes.push(((await copy.json()) as { error: { code: string } }).error.code);
    }
    expect(codes).toEqual([
      'order_token_missing',
      'order_token_invalid',
      'order_token_expired',
      'origin_not_allowed',
      'unsupported_media_type',
      'invalid_blackbox',
      'invalid_idempotency_key',
      'body_too_large',
      'method_not_allowed',
    ]);
  });

  it('POST /device-risk takes a checkout (202), and the decision webhook is the documented one, signed', async () => {
    const order = 'order-' + randomBytes(6).toString('hex');
    const idempotencyKey = key();
    const accepted = await checkout({ 'order-token': await token(order), 'idempotency-key': idempotencyKey });
    expect(accepted.status).toBe(202);
    expect(await offDocument('/device-risk', 'post', accepted.clone())).toEqual([]);
    expect(await accepted.json()).toEqual({ accepted: true, reference: idempotencyKey });

    await expect.poll(() => webhooks.length, { timeout: 30_000 }).toBeGreaterThan(0);
    const [{ headers, body }] = webhooks as [(typeof webhooks)[0]];
    // Standard Webhooks' own library verifies it, with its 5 minutes' tolerance.
    const event = new Webhook(WEBHOOK_SECRET).verify(body, headers) as { data: { customerInternalReference: string } };
    expect(offWebhook(event)).toEqual([]);
    expect(event.data.customerInternalReference).toBe(order);
    expect(() => new Webhook('whsec_' + randomBytes(24).toString('base64')).verify(body, headers)).toThrow();

    const polled = await fetch(`${gateway.url}/decisions/${order}`, {
      headers: { authorization: `Bearer ${DECISIONS_TOKEN}` },
    });
    expect(polled.status).toBe(200);
    expect(await offDocument('/decisions/{customerInternalReference}', 'get', polled)).toEqual([]);
  });

  it('GET /decisions/{customerInternalReference}: 401 without the bearer, 404 before a decision', async () => {
    const unauthorized = await fetch(`${gateway.url}/decisions/order-none`);
    expect(unauthorized.status).toBe(401);
    expect(await offDocument('/decisions/{customerInternalReference}', 'get', unauthorized)).toEqual([]);
    const none = await fetch(`${gateway.url}/decisions/order-none`, {
      headers: { authorization: `Bearer ${DECISIONS_TOKEN}` },
    });
    expect(none.status).toBe(404);
    expect(await offDocument('/decisions/{customerInternalReference}', 'get', none)).toEqual([]);
  });

  it('POST /callback: its refusals', async () => {
    const post = (headers: Record<string, string>, body: string) =>
      fetch(gateway.url + '/callback', { method: 'POST', headers, body });
    const answers = [
      await post({ 'content-type': 'application/json' }, '{"not":"a callback"}'),
      await post({ 'content-type': 'text/plain' }, 'x'),
      await fetch(gateway.url + '/callback'),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([400, 415, 405]);
    for (const answer of answers) expect(await offDocument('/callback', 'post', answer)).toEqual([]);
  });

  it('GET /healthz and GET /openapi.json', async () => {
    expect(await offDocument('/healthz', 'get', await fetch(gateway.url + '/healthz'))).toEqual([]);
    const served = await fetch(gateway.url + '/openapi.json');
    expect(await offDocument('/openapi.json', 'get', served.clone())).toEqual([]);
    expect(await served.text()).toBe(readFileSync(new URL('../../src/gateway/openapi.json', import.meta.url), 'utf8'));
  });

  it("GET /iojs/{path}: the collector's script, and a path the contract refuses", async () => {
    const script = await fetch(gateway.url + '/iojs/general5/static_wdp.js');
    expect(script.status).toBe(200);
    expect(await offDocument('/iojs/{path}', 'get', script)).toEqual([]);
    const refused = await fetch(gateway.url + '/iojs/a:b');
    expect(refused.status).toBe(400);
    expect(await offDocument('/iojs/{path}', 'get', refused)).toEqual([]);
    expect(
      await offDocument('/iojs/{path}', 'get', Response.json({ error: { code: 'made_up' } }, { status: 400 })),
    ).not.toEqual([]);
  });

  it('GET /status and GET /metrics, on the admin listener', async () => {
    expect(gateway.adminUrl).toBeDefined();
    for (const path of ['/status', '/metrics'] as const) {
      const answer = await fetch(gateway.adminUrl + path);
      expect(answer.status).toBe(200);
      expect(await offDocument(path, 'get', answer)).toEqual([]);
    }
  });

  it('finds an answer off the document: the check is not vacuous', async () => {
    const teapot = Response.json({ error: { code: 'queue_full' } }, { status: 418 });
    expect(await offDocument('/device-risk', 'post', teapot)).toEqual([
      'post /device-risk answered 418, which is not documented',
    ]);
    const noRetryAfter = Response.json({ error: { code: 'queue_full', message: 'full' } }, { status: 503 });
    expect(await offDocument('/device-risk', 'post', noRetryAfter)).toEqual(['503 lacks Retry-After']);
    const wrongStatus = Response.json({ error: { code: 'origin_not_allowed', message: 'no' } }, { status: 400 });
    expect(await offDocument('/device-risk', 'post', wrongStatus)).toEqual([
      'origin_not_allowed is not documented with 400',
    ]);
    const unknown = Response.json({ error: { code: 'made_up', message: 'no' } }, { status: 400 });
    expect((await offDocument('/device-risk', 'post', unknown))[0]).toMatch(/^400 body/);
    expect(offWebhook({ type: 'device_risk.decision', data: {} })).not.toEqual([]);
  });
});
