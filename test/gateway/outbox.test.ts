import { mkdtempSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSqliteStore } from '../../src/server/sqlite/store.js';
import { createOutbox, retryDelay, type Outbox } from '../../src/gateway/outbox.js';
import { decisionEvent } from '../../src/gateway/webhook.js';
import { undeliveredRow } from '../../src/gateway/extra-routes.js';
import { createMemoryStore } from '../../src/server/index.js';
import { closeServers, serve } from '../support/http.js';

const KEY = new Uint8Array(24).fill(3);
const SECRET = `whsec_${Buffer.from(KEY).toString('base64')}`;
const event = (execution: string, order = `order-${execution}`) =>
  decisionEvent(
    { accountId: 'acc', workflowExecutionId: execution, status: 'PROCESSED' },
    { customerInternalReference: order },
    {
      accountId: 'acc',
      workflowExecutionId: execution,
      status: 'PROCESSED',
      decision: { type: 'PASSED', label: 'OK' },
      deviceRisk: undefined,
      raw: {},
    },
    0,
  );

/** The shop: answers each POST with the next status of `statuses` (then 200), verifying each signature. */
async function shop(statuses: number[] = []) {
  const received: Array<{ id: string; body: unknown }> = [];
  const url = await serve((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const verified = new Webhook(SECRET).verify(body, req.headers as Record<string, string>);
      received.push({ id: req.headers['webhook-id'] as string, body: verified });
      res.writeHead(statuses.shift() ?? 200).end();
    });
  });
  return { url: `${url}/decisions`, received };
}

/** A shop that never answers: the POST ends when its signal aborts. */
const hanging = (_url: string, init: RequestInit) =>
  new Promise<Response>((_resolve, reject) =>
    init.signal!.addEventListener('abort', () => reject(init.signal!.reason)),
  );

const outboxes: Outbox[] = [];
afterEach(async () => {
  for (const outbox of outboxes.splice(0)) await outbox.close();
  await closeServers();
});
const lines: string[] = [];
function outboxOn(store: ReturnType<typeof createMemoryStore>, url: string, extra = {}) {
  const outbox = createOutbox({
    store,
    url,
    key: KEY,
    retryDelayMs: 20,
    maxRetryDelayMs: 40,
    intervalMs: 20,
    onError: (l) => lines.push(l),
    ...extra,
  });
  outboxes.push(outbox);
  return outbox;
}

describe('the outbox', () => {
  it('POSTs each decision once, signed, and keeps it for GET /decisions', async () => {
    const { url, received } = await shop();
    const outbox = outboxOn(createMemoryStore(), url);
    expect(await outbox.add(event('e1'))).toBe(true);
    await expect.poll(() => received.length).toBe(1);
    expect(received[0]).toEqual({ id: 'msg_e1', body: event('e1') });
    // The same execution again (the callback after the queued check): nothing more.
    expect(await outbox.add(event('e1'))).toBe(false);
    outbox.start();
    await new Promise((r) => setTimeout(r, 150));
    expect(received).toHaveLength(1);
    expect(await outbox.latest('order-e1')).toMatchObject({
      id: 'msg_e1',
      attempts: 1,
      deliveredAt: expect.any(Number),
    });
    expect(await outbox.latest('order-none')).toBeUndefined();
  });

  it('retries with backoff until the shop answers 2xx, and says why each attempt failed', async () => {
    const { url, received } = await shop([500, 503, 302]);
    lines.length = 0;
    const outbox = outboxOn(createMemoryStore(), url);
    outbox.start();
    await outbox.add(event('e2'));
    await expect.poll(() => received.length).toBe(4);
    expect(new Set(received.map((r) => r.id))).toEqual(new Set(['msg_e2']));
    await expect.poll(async () => (await outbox.latest('order-e2'))?.deliveredAt).toBeDefined();
    expect(lines).toEqual([
      expect.stringMatching(/^decision msg_e2 not delivered to http:\/\/127\.0\.0\.1:\d+ \(HTTP 500, attempt 1\)/),
      expect.stringContaining('(HTTP 503, attempt 2)'),
      expect.stringContaining('(HTTP 302, attempt 3)'),
    ]);
    await new Promise((r) => setTimeout(r, 150));
    expect(received).toHaveLength(4);
  });

  it('survives a restart: a decision undelivered when the process stopped is delivered by the next', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'bbc-outbox-')), 'data.sqlite');
    const down = await shop(Array(1000).fill(503));
    const first = outboxOn(createSqliteStore(path), down.url);
    await first.add(event('e3'));
    await first.add(event('e4'));
    await expect.poll(() => down.received.length).toBeGreaterThanOrEqual(2);
    await first.close();
    const up = await shop();
    const second = outboxOn(createSqliteStore(path), up.url);
    second.start();
    await expect.poll(() => up.received.map((r) => r.id).sort()).toEqual(['msg_e3', 'msg_e4']);
    await new Promise((r) => setTimeout(r, 150));
    expect(up.received).toHaveLength(2);
  });

  it('leaves a decision another instance is sending to it, until its lease lapses', async () => {
    const { url, received } = await shop();
    const store = createMemoryStore();
    let clock = Date.now();
    const now = () => clock;
    // The other instance's POST hangs (until its own time limit): it holds the lease meanwhile.
    const other = outboxOn(store, 'http://127.0.0.1:9/', { now, fetch: hanging, timeoutMs: 1000 });
    await other.add(event('e5'));
    const mine = outboxOn(store, url, { now });
    await mine.pump();
    expect(received).toHaveLength(0);
    clock += 3001;
    await mine.pump();
    expect(received.map((r) => r.id)).toEqual(['msg_e5']);
  });

  it('counts a shop that does not answer in time as failed', async () => {
    lines.length = 0;
    const outbox = outboxOn(createMemoryStore(), 'http://127.0.0.1:9/', {
      fetch: hanging,
      timeoutMs: 30,
    });
    await outbox.add(event('e6'));
    await expect.poll(() => lines[0]).toContain('(timeout, attempt 1)');
  });

  it('says outbox_unavailable while its store fails, ok once it answers again', async () => {
    const store = createMemoryStore();
    let failing = false;
    const flaky = {
      ...store,
      get: (key: string) => (failing ? Promise.reject(new Error('store away')) : store.get(key)),
    };
    const outbox = outboxOn(flaky as typeof store, (await shop()).url);
    await outbox.pump();
    expect(outbox.health()).toBe('ok');
    failing = true;
    await outbox.pump();
    expect(outbox.health()).toBe('outbox_unavailable');
    failing = false;
    await outbox.pump();
    expect(outbox.health()).toBe('ok');
  });

  it('counts what waits and since when, and sends DECISION_URL credentials as Authorization', async () => {
    const headers: Array<string | undefined> = [];
    let down = true;
    const url = await serve((req: IncomingMessage, res) => {
      headers.push(req.headers.authorization);
      req.resume().on('end', () => res.writeHead(down ? 503 : 204).end());
    });
    const outbox = outboxOn(createMemoryStore(), url, { authorization: 'Basic c2hvcDpwdw==' });
    expect(await outbox.figures()).toEqual({ depth: 0, oldestAt: undefined });
    const before = Date.now();
    await outbox.add(event('e7'));
    await expect.poll(() => headers.length).toBeGreaterThanOrEqual(1);
    const waiting = await outbox.figures();
    expect(waiting.depth).toBe(1);
    expect(waiting.oldestAt).toBeGreaterThanOrEqual(before);
    down = false;
    outbox.start();
    await expect.poll(async () => (await outbox.figures()).depth).toBe(0);
    expect(new Set(headers)).toEqual(new Set(['Basic c2hvcDpwdw==']));
  });
});

describe("the status page's row of decisions not delivered", () => {
  it('says how many wait and the oldest age, none as 0, and unknown when the store did not answer', () => {
    expect(undeliveredRow({ depth: 3, ageSeconds: 41 })).toEqual([
      'Decisions not delivered (the outbox)',
      '3, the oldest 41 s old',
    ]);
    expect(undeliveredRow({ depth: 0, ageSeconds: 0 })[1]).toBe('0');
    expect(undeliveredRow(undefined)[1]).toBe("unknown: the outbox's store did not answer within 2 s");
  });
});

describe('retryDelay', () => {
  afterEach(() => vi.restoreAllMocks());

  it('doubles from 1 s with jitter, but never waits longer than the decision has waited so far', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.999);
    // The 8th attempt may wait up to 128 s; a decision 20 s old waits 20 s at most.
    expect(retryDelay(8, 3_600_000)).toBeCloseTo(127_872, -1);
    expect(retryDelay(8, 20_000)).toBe(20_000);
    // Never under the first delay, and a timestamp that cannot be read leaves the doubling alone up to it.
    expect(retryDelay(8, 0)).toBe(1000);
    expect(retryDelay(8, Number.NaN)).toBe(1000);
    expect(retryDelay(2, 60_000, { retryDelayMs: 10, maxRetryDelayMs: 15 })).toBeCloseTo(14.985);
  });
});
