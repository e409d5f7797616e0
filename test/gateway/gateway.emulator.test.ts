// The gateway in-process (what `npx blackbox-capture serve` starts) on the emulated service:
// checkouts posted with an Order-Token reach DECISION_URL as signed webhooks, once each;
// refusals are typed; a close with checkouts queued keeps them for the next start.
import { existsSync, mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { mintOrderToken } from '../../src/gateway/order-token.js';
import type { DecisionEvent } from '../../src/gateway/webhook.js';
import { callbackNamespace, recordKey } from '../../src/server/callbacks/record.js';
import type { CallbackBody } from '../../src/server/callbacks/types.js';
import { DATA_FILE } from '../../src/server/queue/default.js';
import {
  DECISIONS_TOKEN,
  drained,
  gatewayEnvironment,
  ORDER_SECRET,
  postCheckout,
  useGateway,
  webhookReceiver,
} from '../support/gateway.js';
import { freePort } from '../support/processes.mjs';
import { rowsOf } from '../support/sqlite.js';

const { startEmulator, inProcess } = useGateway();
const shop = webhookReceiver;
const environment = gatewayEnvironment;

const gatewayWith = (env: Record<string, string>, log: string[] = []) => inProcess(env, (line) => log.push(line));

/** A checkout with `token` as its Order-Token. */
const checkout = (gateway: Gateway, token: string | undefined) => postCheckout(gateway.url, { token });

/**
 * How far the gateway on `env` has gone with the service's callback `body`: its record's state
 * in the gateway's store (DATA_DIR's SQLite file, read as another process would). `done` once
 * its onResult returned or it found the decision told: what it told is in the outbox by then.
 */
function callbackState(env: Record<string, string>, clientId: string, body: unknown): string | undefined {
  const key = recordKey(callbackNamespace(clientId), body as CallbackBody);
  const [row] = rowsOf(join(env.DATA_DIR!, DATA_FILE), 'SELECT value FROM store_entries WHERE key = ?', key);
  return row === undefined ? undefined : (JSON.parse(row.value as string) as { state: string }).state;
}

describe('the gateway', () => {
  it('takes a checkout with its Order-Token to a signed decision at DECISION_URL, told once', async () => {
    const emulator = await startEmulator();
    emulator.decide('next', { type: 'REJECTED', label: 'HIGH_RISK', alerts: ['IP Mismatch'], score: 96 });
    const { url, received } = await shop();
    // The callback URL is the gateway's own: the service's callback brings the decision too.
    const port = await freePort();
    const log: string[] = [];
    // The admin listener: its /metrics says what the gateway has left to send (`drained`).
    const env = environment(emulator, url, {
      PORT: String(port),
      CALLBACK_URL: `http://127.0.0.1:${port}/callback`,
      ADMIN_PORT: '0',
    });
    const gateway = await gatewayWith(env, log);
    const answer = await checkout(
      gateway,
      await mintOrderToken(ORDER_SECRET, { customerInternalReference: 'order-1001', userReference: 'user-7' }),
    );
    expect(answer.status).toBe(202);
    await expect.poll(() => received.length, { timeout: 15_000 }).toBe(1);
    const [{ id, event }] = received as [{ id: string; event: DecisionEvent }];
    expect(event).toMatchObject({
      type: 'device_risk.decision',
      data: {
        customerInternalReference: 'order-1001',
        userReference: 'user-7',
        status: 'PROCESSED',
        decision: { type: 'REJECTED', label: 'HIGH_RISK', score: 96 },
      },
    });
    expect(id).toBe(`msg_${event.data.workflowExecutionId.toLowerCase()}`);
    const [transaction] = emulator.inspect.transactions();
    expect(transaction).toMatchObject({ customerInternalReference: 'order-1001' });
    await expect.poll(() => emulator.inspect.callbacks().map((c) => c.delivered)).toEqual([true]);

    // The poll of a shop without webhooks: behind its bearer.
    const decision = await fetch(`${gateway.url}/decisions/order-1001`, {
      headers: { authorization: `Bearer ${DECISIONS_TOKEN}` },
    });
    expect(decision.status).toBe(200);
    expect(await decision.json()).toMatchObject({ ...event, delivered: true, webhookId: id });
    const unauthorized = await fetch(`${gateway.url}/decisions/order-1001`, { headers: { authorization: 'Bearer x' } });
    expect(unauthorized.status).toBe(401);
    expect(await unauthorized.json()).toEqual({ error: { code: 'decisions_unauthorized' } });
    expect(log).toContain('refused a decisions poll: decisions_unauthorized');
    const unknown = await fetch(`${gateway.url}/decisions/order-0`, {
      headers: { authorization: `Bearer ${DECISIONS_TOKEN}` },
    });
    expect(unknown.status).toBe(404);
    // Still once (the callback and the queued check both brought it), once neither path can tell
    // it again: the service's one callback answered (the gateway answers once it has recorded it)
    // and handled (after the answer: what it told is in the outbox by then), then the queue and
    // the outbox empty. No callback since: the check that could make one has left the queue.
    await expect
      .poll(() => emulator.inspect.callbacks().map((c) => c.delivered && callbackState(env, emulator.clientId, c.body)))
      .toEqual(['done']);
    await drained(gateway.adminUrl!);
    expect(emulator.inspect.callbacks()).toHaveLength(1);
    expect(received).toHaveLength(1);
  });

  it('refuses a checkout without a good Order-Token: a typed 401, logged', async () => {
    const emulator = await startEmulator();
    const { url } = await shop();
    const log: string[] = [];
    const gateway = await gatewayWith(environment(emulator, url), log);
    const cases: Array<[string | undefined, string]> = [
      [undefined, 'order_token_missing'],
      ['a.b.c', 'order_token_invalid'],
      [
        await mintOrderToken('another-secret-of-32-characters!', { customerInternalReference: 'o' }),
        'order_token_invalid',
      ],
      [await mintOrderToken(ORDER_SECRET, { customerInternalReference: 'o' }, -10), 'order_token_expired'],
    ];
    for (const [token, code] of cases) {
      const answer = await checkout(gateway, token);
      expect(answer.status).toBe(401);
      expect((await answer.json()) as object).toMatchObject({ error: { code } });
      expect(log).toContain(`refused a checkout: ${code}`);
    }
    // Told once, in the door's words: the router does not log them again; the second forged
    // token within 10 s is held back (one line per kind each 10 s: a flood writes a few).
    expect(log.filter((line) => line.includes('order_token_'))).toEqual([
      'refused a checkout: order_token_missing',
      'refused a checkout: order_token_invalid',
      'refused a checkout: order_token_expired',
    ]);
    // A flood from one address: refused at the door, then past its checkouts (429): a line each.
    const statuses = new Set<number>();
    for (let i = 0; i < 40; i++) statuses.add((await checkout(gateway, undefined)).status);
    expect(statuses).toEqual(new Set([401, 429]));
    expect(log.filter((line) => line.includes('order_token_missing'))).toHaveLength(1);
    expect(log.filter((line) => line.includes('too_many_checkouts'))).toEqual([
      'refused POST /device-risk: 429 too_many_checkouts',
    ]);
    expect(emulator.inspect.transactions()).toHaveLength(0);
  });

  it('logs every refusal no handler words itself, one line per code each 10 s', async () => {
    const emulator = await startEmulator();
    const log: string[] = [];
    const gateway = await gatewayWith(environment(emulator, (await shop()).url), log);
    const token = await mintOrderToken(ORDER_SECRET, { customerInternalReference: 'order-elsewhere' });
    const elsewhere = () =>
      fetch(`${gateway.url}/device-risk`, {
        method: 'POST',
        headers: { origin: 'https://elsewhere.example', 'content-type': 'application/json', 'order-token': token },
        body: JSON.stringify({ blackbox: 'x' }),
      });
    for (let i = 0; i < 3; i++) expect((await elsewhere()).status).toBe(403);
    expect((await fetch(`${gateway.url}/wp-login.php`)).status).toBe(404);
    expect(log).toEqual(['refused POST /device-risk: 403 origin_not_allowed', 'refused GET unmatched: 404 not_found']);
    // Held back and never followed: said as the gateway closes, with their count.
    await gateway.close();
    expect(log.slice(2)).toEqual(['refused POST /device-risk: 403 origin_not_allowed (and 1 more like it, held back)']);
  });

  it("answers and logs what Node's parser refuses before any route: headers too large, a malformed request", async () => {
    const emulator = await startEmulator();
    const log: string[] = [];
    const gateway = await gatewayWith(environment(emulator, (await shop()).url), log);
    const { hostname, port } = new URL(gateway.url);
    /** What the gateway answers `raw`, as it comes on the wire, the connection closed after. */
    const exchange = (raw: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(raw));
        let answer = '';
        socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
        socket.on('close', () => resolve(answer));
        socket.on('error', reject);
      });
    const large = await exchange(`GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(large).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
    expect(large.endsWith('{"error":{"code":"headers_too_large"}}')).toBe(true);
    const malformed = await exchange('NOT A REQUEST\r\n\r\n');
    expect(malformed).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[^]*\{"error":\{"code":"bad_request"\}\}$/);
    expect(log).toEqual([
      'refused a request before any route: 431 headers_too_large (HPE_HEADER_OVERFLOW)',
      expect.stringMatching(/^refused a request before any route: 400 bad_request \(HPE_\w+\)$/),
    ]);
  });

  it('says a front it does not trust: X-Forwarded-For from a local address ignored, one line each 10 s', async () => {
    const emulator = await startEmulator();
    const log: string[] = [];
    const gateway = await gatewayWith(environment(emulator, (await shop()).url), log);
    for (let i = 0; i < 3; i++)
      await (await fetch(`${gateway.url}/healthz`, { headers: { 'x-forwarded-for': '203.0.113.7' } })).text();
    await (await fetch(`${gateway.url}/healthz`)).text();
    expect(log.filter((line) => line.includes('forward_ignored'))).toEqual([
      expect.stringMatching(
        /^forward_ignored: X-Forwarded-For from 127\.0\.0\.1 ignored, 127\.0\.0\.1 is not in TRUSTED_FRONTS/,
      ),
    ]);
  });

  it('serves /healthz, /openapi.json, the proxy, and answers other paths 404', async () => {
    const emulator = await startEmulator();
    const gateway = await gatewayWith(environment(emulator, (await shop()).url, { ADMIN_PORT: '0' }));
    expect(await (await fetch(`${gateway.url}/healthz`)).json()).toEqual({ status: 'ok' });
    const openapi = (await (await fetch(`${gateway.url}/openapi.json`)).json()) as { openapi: string };
    expect(openapi.openapi).toMatch(/^3\.1\./);
    const loader = await fetch(`${gateway.url}/iojs/general5/static_wdp.js`);
    expect(loader.status).toBe(200);
    const nowhere = await fetch(`${gateway.url}/admin`);
    expect(nowhere.status).toBe(404);
    expect(await nowhere.json()).toEqual({ error: { code: 'not_found' } });
    const wrong = await fetch(`${gateway.url}/healthz`, { method: 'POST' });
    expect(wrong.status).toBe(405);
    // The admin listener: its own port, with the status and metrics routes the public one lacks.
    expect(gateway.adminUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // blackbox-capture/server/status's page and metrics (test/server/status/).
    expect(await (await fetch(`${gateway.adminUrl}/status`)).text()).toContain('<h1>blackbox-capture status</h1>');
    expect(await (await fetch(`${gateway.adminUrl}/metrics`)).text()).toMatch(
      /^blackbox_capture_queue_depth\{instance="[^"]+",scope="instance"\} 0$/m,
    );
    expect((await fetch(`${gateway.url}/status`)).status).toBe(404);
  });

  it('answers /healthz 503 shutting_down from close() on, while the checks under way finish', async () => {
    const emulator = await startEmulator();
    emulator.faults.latency('upload', 1500);
    const gateway = await gatewayWith(environment(emulator, (await shop()).url, { PORT: '0' }));
    const token = await mintOrderToken(ORDER_SECRET, { customerInternalReference: 'order-h' });
    expect((await checkout(gateway, token)).status).toBe(202);
    await expect.poll(() => emulator.inspect.transactions().length).toBe(1);
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    const closed = gateway.close();
    const health = await fetch(`${gateway.url}/healthz`);
    expect(health.status).toBe(503);
    expect(health.headers.get('retry-after')).toBe('1');
    expect(await health.json()).toEqual({ status: 'shutting_down' });
    await closed;
  });

  it("an earlier version's journal it cannot take: said in the log, the journal kept, and the gateway serves", async () => {
    const emulator = await startEmulator();
    const { url } = await shop();
    const env = environment(emulator, url, { PORT: '0' });
    // Not a file: unreadable, as a journal the queue cannot all take (full) is kept (legacy.test.ts).
    mkdirSync(join(env.DATA_DIR, 'queue.jsonl'));
    const log: string[] = [];
    const gateway = await gatewayWith(env, log);
    expect(log.filter((line) => line.includes('EISDIR'))).toHaveLength(1);
    expect(existsSync(join(env.DATA_DIR, 'queue.jsonl'))).toBe(true);
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
  });

  it('closed with checkouts queued, keeps them: the next start checks each, and tells each decision once', async () => {
    // The service's account limit: 1 a second, so that a backlog waits.
    const emulator = await startEmulator({ accountRequestsPerSecond: 1 });
    const { url, received } = await shop();
    // Shoppers behind a trusted front, each from an address of its own (none meets the admission limit).
    // The admin listener: its /metrics says what the gateway has left to send (`drained`).
    const env = environment(emulator, url, { PORT: '0', TRUSTED_FRONTS: '127.0.0.1', ADMIN_PORT: '0' });
    const first = await gatewayWith(env);
    // Past the service's burst (the first few are created at once): the rest wait in the queue.
    const orders = Array.from({ length: 10 }, (_, i) => `order-${i}`);
    // The service refuses every account create until the first gateway is closed: none is
    // checked before, however long the posts take on a busy machine.
    emulator.faults.fail('accountCreate', { times: 1_000_000, status: 503 });
    for (const [i, order] of orders.entries()) {
      const answer = await postCheckout(first.url, { order, from: `203.0.113.${i + 1}` });
      expect(answer.status).toBe(202);
    }
    await first.close();
    const told = () => received.map((r) => r.event.data.customerInternalReference);
    expect(told()).toEqual([]);
    emulator.faults.clear();
    // Closed: a checkout now is refused with shutting_down (never accepted then lost).
    const second = await gatewayWith(env);
    await expect.poll(() => told().sort(), { timeout: 30_000 }).toEqual(orders);
    // Final once nothing is left to send: the queue (the first's checkouts too: one DATA_DIR), then the outbox.
    await drained(second.adminUrl!);
    expect(told()).toHaveLength(orders.length);
  }, 60_000);
});
