/**
 * A shop of docs/gateway.md#back-ends-in-other-languages seen from outside: its settings, its
 * page's order token, and a checkout through its front in a browser, waited for until the
 * signed decision is in the back end's decisions.jsonl (test/support/backends.ts). Shared by
 * test/docs/gateway-backends.test.ts and test/docs/gateway-fronts.test.ts.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { Emulator } from '../../src/emulator/index.js';
import type { BackendSettings, RunningBackend } from './backends.js';
import type { EnginePage } from './engines.mjs';
import { offWebhook } from './openapi.js';

/** A Standard Webhooks key of `bytes` random bytes. */
export const webhookSecret = (bytes: number) => 'whsec_' + randomBytes(bytes).toString('base64');

/** A back end's settings; LOADER_URL is the emulator's, once it runs. */
export const shopSettings = (): BackendSettings => ({
  ORDER_SECRET: randomBytes(32).toString('base64url'),
  WEBHOOK_SECRET: webhookSecret(24),
  LOADER_URL: '',
});

/** The order token's claims when its HS256 signature holds under `key`; throws otherwise. */
export function verifiedClaims(token: string, key: string): { sub: string; exp: number } {
  const [head, claims, signature] = token.split('.') as [string, string, string];
  const expected = createHmac('sha256', key).update(`${head}.${claims}`).digest('base64url');
  if (signature !== expected) throw new Error('the order token is not signed with ORDER_SECRET');
  expect(JSON.parse(Buffer.from(head, 'base64url').toString())).toEqual({ alg: 'HS256', typ: 'JWT' });
  return JSON.parse(Buffer.from(claims, 'base64url').toString()) as { sub: string; exp: number };
}

/** The order token a page carries: the script tag's `data-order-token`, or the `post` option's `Order-Token` header. */
export const orderTokenOf = (page: string) =>
  (/ data-order-token="([\w.-]+)"/.exec(page) ?? /'Order-Token': "([\w.-]+)"/.exec(page))?.[1];

export type Decision = {
  data: {
    customerInternalReference: string;
    workflowExecutionId: string;
    status: string;
    decision: { type: string } | null;
  };
};

/**
 * Opens the shop's page at `origin` in `page` and waits until the back end recorded the
 * decision of that page's order, once; checks it as the webhook's schema and the service saw
 * it (one blackbox, from the loader). `said`: what to show if it never comes.
 */
export async function checkoutThrough(
  page: EnginePage,
  origin: string,
  shop: RunningBackend,
  context: { emulator: Emulator; orderSecret: string; said: () => string },
): Promise<Decision> {
  await page.goto(origin + '/');
  const html = await page.evaluate(() => document.documentElement.outerHTML);
  const order = verifiedClaims(orderTokenOf(html)!, context.orderSecret).sub;
  const told = () => (shop.decisions() as Decision[]).filter((d) => d.data.customerInternalReference === order);
  await expect.poll(() => told().length, { timeout: 90_000, message: `${context.said()}\n${shop.output()}` }).toBe(1);
  const [event] = told() as [Decision];
  expect(offWebhook(event)).toEqual([]);
  expect(event.data.status).toBe('PROCESSED');
  expect(event.data.decision?.type).toMatch(/^[A-Z_]+$/);
  // The blackbox the page posted is the one the service received, from the real loader.
  const sent = context.emulator.inspect.transactions().find((t) => t.customerInternalReference === order);
  expect(sent?.blackboxes).toHaveLength(1);
  return event;
}
