// The gateway's tests' harness (test/gateway/): the shop's webhook receiver, verifying each
// delivery with the Standard Webhooks library; the environment `serve` reads on an emulator;
// a checkout as the browser package posts it, with its Order-Token.
import { mkdtempSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import type { Emulator } from '../../src/emulator/index.js';
import { mintOrderToken } from '../../src/gateway/order-token.js';
import type { DecisionEvent } from '../../src/gateway/webhook.js';
import { serve } from './http.js';
import { blackboxOf, SHOP } from './kit.js';

export const WEBHOOK_SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
export const ORDER_SECRET = 'the-order-secret-of-the-shop-32ch';
export const DECISIONS_TOKEN = 'the-bearer-of-get-decisions-32chars';

/** The shop's webhook receiver: answers `status()`, keeps every delivery it answered 2xx, verified. */
export async function webhookReceiver(status: () => number = () => 204) {
  const received: Array<{ id: string; event: DecisionEvent }> = [];
  let attempts = 0;
  const url = await serve((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      attempts++;
      const event = new Webhook(WEBHOOK_SECRET).verify(body, req.headers as Record<string, string>) as DecisionEvent;
      const answer = status();
      if (answer < 300) received.push({ id: req.headers['webhook-id'] as string, event });
      res.writeHead(answer).end();
    });
  });
  return {
    url: `${url}/webhooks/device-risk`,
    received,
    /** POSTs received, answered 2xx or not. */
    attempts: () => attempts,
    /** The orders told, sorted. */
    orders: () => received.map((r) => r.event.data.customerInternalReference).sort(),
  };
}

/** The environment `serve` reads, with the emulator's names as `--env` prints them. */
export function gatewayEnvironment(emulator: Emulator, decisionUrl: string, extra: Record<string, string> = {}) {
  return {
    CLIENT_ID: emulator.clientId,
    CLIENT_SECRET: emulator.clientSecret,
    TOKEN_URL: emulator.tokenUrl,
    BASE_URL: emulator.serviceUrls.baseUrl,
    API_URL: emulator.serviceUrls.apiBaseUrl,
    RETRIEVAL_URL: emulator.serviceUrls.retrievalBaseUrl,
    COLLECTOR_URL: emulator.collectorUrl,
    WORKFLOW_KEY: '10011',
    ALLOWED_ORIGINS: SHOP,
    ORDER_SECRET,
    DECISION_URL: decisionUrl,
    WEBHOOK_SECRET,
    DECISIONS_TOKEN,
    PORT: '0',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'bbc-gateway-')),
    ...extra,
  };
}

/** A checkout as the browser package posts it; with `order`, its Order-Token (else `token` as given, or none). */
export async function postCheckout(url: string, order: { order?: string; token?: string; from?: string } = {}) {
  const token =
    order.token ??
    (order.order === undefined
      ? undefined
      : await mintOrderToken(ORDER_SECRET, { customerInternalReference: order.order }));
  // A blackbox of its own: the endpoint refuses one already used for another key.
  const key = crypto.randomUUID();
  return fetch(`${url}/device-risk`, {
    method: 'POST',
    headers: {
      origin: SHOP,
      'content-type': 'application/json',
      'idempotency-key': key,
      ...(token === undefined ? {} : { 'order-token': token }),
      ...(order.from === undefined ? {} : { 'x-forwarded-for': order.from }),
    },
    body: JSON.stringify({ blackbox: blackboxOf(key) }),
  });
}
