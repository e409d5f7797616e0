/**
 * The shop back ends of docs/gateway.md in PHP, Python, Go and Java, each run by its own
 * toolchain (test/support/backends.ts): the page carries an order token the gateway accepts,
 * and a decision is recorded only when Standard Webhooks' signature holds (the standardwebhooks
 * package signs here); a tampered body, a stale or future timestamp and another secret are
 * refused, and nothing of them is recorded. A toolchain this machine lacks is skipped and
 * named; with CI set it fails the run.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { orderKey, verifyOrderToken } from '../../src/gateway/order-token.js';
import { availableBackends, codeLines, sourceOf, startBackend, type RunningBackend } from '../support/backends.js';
import { enginePaths, launch, type EnginePage } from '../support/engines.mjs';
import { freePort } from '../support/processes.mjs';
import { realLoaderSource } from '../support/real-loader.mjs';
import { snippet } from '../support/readme.js';
import {
  checkoutThrough,
  orderTokenOf,
  shopSettings,
  verifiedClaims,
  webhookSecret as secret,
} from '../support/gateway-shop.js';
import { startFront, startGatewayProcess } from '../support/shop-front.js';

/** LOADER_URL: the emulator's, serving the vendor's real loader 5.2.2. */
const SETTINGS = shopSettings();

/** Each back end's snippet in docs/gateway.md. */
const SNIPPETS = {
  php: 'gateway-php',
  python: 'gateway-python',
  go: 'gateway-go',
  java: 'gateway-java',
  ruby: 'gateway-ruby',
} as const;

const { present, missing } = availableBackends();
if (missing.length) console.warn(`skipped, toolchain missing: ${missing.join(', ')}`);
const chromium = existsSync(enginePaths().chromium);
if (!chromium && process.env.CI) throw new Error('CI is set and Chromium is missing (.ci/run installs it)');

let emulator: Emulator;
let page: EnginePage | undefined;
beforeAll(async () => {
  emulator = await startEmulator({ loaderSource: realLoaderSource() });
  SETTINGS.LOADER_URL = emulator.loaderUrl;
  if (chromium) page = await launch('chromium');
});
afterAll(async () => {
  await page?.close();
  await emulator?.close();
});

const decision = (order: string) => ({
  type: 'device_risk.decision',
  timestamp: new Date().toISOString(),
  data: {
    customerInternalReference: order,
    workflowExecutionId: '3c3b2b5e-6f0c-4a56-9a8e-0d5c2e4f1a11',
    accountId: 'b1f8c1d2-5a4e-4f7b-8c3d-2e1f0a9b8c7d',
    status: 'PROCESSED',
    decision: { type: 'PASSED', label: 'OK', score: 12 },
  },
});

/** Posts `body` to the back end's webhook, signed with `key` at `seconds` (Unix time). */
async function deliver(shop: RunningBackend, body: string, key = SETTINGS.WEBHOOK_SECRET, seconds?: number) {
  const id = 'msg_' + randomBytes(8).toString('hex');
  const at = new Date((seconds ?? Math.floor(Date.now() / 1000)) * 1000);
  const signature = new Webhook(key).sign(id, at, body);
  return fetch(shop.url + '/webhook', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': signature,
    },
    body,
  });
}

describe.each(present.map((backend) => [backend.name, backend] as const))('the %s back end', (name, backend) => {
  let shop: RunningBackend;
  beforeAll(async () => {
    shop = await startBackend(backend, SETTINGS);
  });
  afterAll(async () => {
    await shop?.close();
  });

  it('is in docs/gateway.md exactly as run, in at most 40 lines of its own code', () => {
    expect(snippet(SNIPPETS[name]).code).toBe(sourceOf(backend));
    expect(codeLines(sourceOf(backend))).toBeLessThanOrEqual(40);
  });

  it('renders the checkout page with the package and an order token signed with ORDER_SECRET', async () => {
    const page = await (await fetch(shop.url + '/')).text();
    if (name === 'php') {
      // The script tag alone: the loader, the POST and the order token as its attributes.
      expect(page).toContain(`<script src="/blackbox-capture.umd.js" data-loader-url="${SETTINGS.LOADER_URL}"`);
      expect(page).toMatch(/ data-post-url="\/device-risk" data-order-token="[\w.-]+"><\/script>/);
    } else {
      expect(page).toContain('<script src="/blackbox-capture.umd.js"></script>');
      expect(page).toContain(`loaderUrl: ${JSON.stringify(SETTINGS.LOADER_URL)}`);
    }
    const token = orderTokenOf(page);
    const claims = verifiedClaims(token!, SETTINGS.ORDER_SECRET);
    expect(claims.sub).toMatch(/^order-[\w-]+$/);
    const ahead = claims.exp - Date.now() / 1000;
    // The gateway takes an exp at most an hour ahead.
    expect(ahead).toBeGreaterThan(600);
    expect(ahead).toBeLessThanOrEqual(3600);
    expect(() => verifiedClaims(token!, 'another secret')).toThrow(/not signed/);
    // The gateway's own check takes it, as the order it names.
    expect(await verifyOrderToken(token!, await orderKey(SETTINGS.ORDER_SECRET))).toEqual({
      customerInternalReference: claims.sub,
    });
  });

  it('records a decision whose signature holds, and refuses every tampered one', async () => {
    const good = JSON.stringify(decision(`order-${name}-good`));
    // Seconds from now: a margin of 30 s past the 5 minutes, for a slow request.
    const tampered = [
      ['a body changed after signing', good.replace('PASSED', 'REJECTED'), SETTINGS.WEBHOOK_SECRET, 0],
      ['another secret', good, secret(24), 0],
      ['a timestamp over 5 minutes old', good, SETTINGS.WEBHOOK_SECRET, -330],
      ['a timestamp over 5 minutes ahead', good, SETTINGS.WEBHOOK_SECRET, 330],
    ] as const;
    for (const [why, body, key, offset] of tampered) {
      const at = Math.floor(Date.now() / 1000) + offset;
      const sent =
        key === SETTINGS.WEBHOOK_SECRET && body !== good ? await tamper(body, at) : await deliver(shop, body, key, at);
      expect(sent.status, why).toBe(401);
    }
    const unsigned = await fetch(shop.url + '/webhook', { method: 'POST', body: good });
    expect(unsigned.status).toBe(401);
    expect(shop.decisions()).toEqual([]);

    const answer = await deliver(shop, good);
    expect(answer.status).toBeGreaterThanOrEqual(200);
    expect(answer.status).toBeLessThan(300);
    expect(shop.decisions()).toEqual([JSON.parse(good)]);

    /** The good body's signature sent with another body. */
    async function tamper(body: string, at: number) {
      const id = 'msg_tampered';
      const signature = new Webhook(SETTINGS.WEBHOOK_SECRET).sign(id, new Date(at * 1000), good);
      return fetch(shop.url + '/webhook', {
        method: 'POST',
        headers: { 'webhook-id': id, 'webhook-timestamp': String(at), 'webhook-signature': signature },
        body,
      });
    }
  });

  it('takes a decision among several signatures, as Standard Webhooks lets a key rotate', async () => {
    const body = JSON.stringify(decision(`order-${name}-rotated`));
    const id = 'msg_rotated';
    const at = new Date();
    const stamp = String(Math.floor(at.getTime() / 1000));
    const signature = `${new Webhook(secret(24)).sign(id, at, body)} ${new Webhook(SETTINGS.WEBHOOK_SECRET).sign(id, at, body)}`;
    const answer = await fetch(shop.url + '/webhook', {
      method: 'POST',
      headers: { 'webhook-id': id, 'webhook-timestamp': stamp, 'webhook-signature': signature },
      body,
    });
    expect(answer.status).toBeLessThan(300);
    expect(shop.decisions()).toContainEqual(JSON.parse(body));
  });

  it.skipIf(!chromium)(
    "reaches a decision through the gateway in Chromium, with the vendor's real loader",
    async () => {
      const port = await freePort();
      const origin = `http://127.0.0.1:${port}`;
      const gateway = await startGatewayProcess(emulator, {
        ALLOWED_ORIGINS: origin,
        ORDER_SECRET: SETTINGS.ORDER_SECRET,
        DECISION_URL: shop.url + '/webhook',
        WEBHOOK_SECRET: SETTINGS.WEBHOOK_SECRET,
      });
      const front = await startFront(port, gateway.url, shop.url);
      try {
        // The built command serves the OpenAPI document the package ships (dist/openapi.json).
        const served = await fetch(gateway.url + '/openapi.json');
        expect(await served.text()).toBe(
          readFileSync(new URL('../../src/gateway/openapi.json', import.meta.url), 'utf8'),
        );
        await checkoutThrough(page!, origin, shop, {
          emulator,
          orderSecret: SETTINGS.ORDER_SECRET,
          said: gateway.output,
        });
      } finally {
        await new Promise((resolve) => front.close(resolve));
        await gateway.close();
      }
    },
    180_000,
  );
});
