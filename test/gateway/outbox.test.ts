import { mkdtempSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSqliteStore } from '../../src/server/sqlite/store.js';
import type { LogFields } from '../../src/gateway/log.js';
import { createOutbox, OUTBOX_RETRY_FOR_MS, OUTBOX_TTL_MS, retryDelay, type Outbox } from '../../src/gateway/outbox.js';
import { decisionEvent, failureEvent } from '../../src/gateway/webhook.js';
import { undeliveredRow } from '../../src/gateway/extra-routes.js';
import { createMemoryStore, DeviceRiskError } from '../../src/server/index.js';
import { counterValues } from '../../src/server/status/tally.js';
import { closeServers, serve } from '../support/http.js';

const KEY = new Uint8Array(24).fill(3);
/** The gateway's count of decisions given up, in this process. */
const givenUpCount = () =>
  counterValues()
    .filter((counter) => counter.metric === 'webhooksGivenUp')
    .reduce((sum, counter) => sum + counter.value, 0);
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

/**
 * A memory store that fills up right after the outbox's next claim (`fullAfterClaim`): from then
 * on every write is refused (store_full) until `heal`.
 */
function fillingStore(now: () => number) {
  const memory = createMemoryStore({ now });
  let full = false;
  let fillAtClaim = false;
  const refuse = () => Promise.reject(Object.assign(new Error('database or disk is full'), { code: 'store_full' }));
  const store = {
    ...memory,
    compareAndSet: async (...args: Parameters<typeof memory.compareAndSet>) => {
      if (full) return refuse();
      const done = await memory.compareAndSet(...args);
      // A record's claim: its new text names its owner's lease.
      if (fillAtClaim && args[2].includes('"leaseUntil"')) [full, fillAtClaim] = [true, false];
      return done;
    },
    compareAndDelete: (...args: Parameters<typeof memory.compareAndDelete>) =>
      full ? refuse() : memory.compareAndDelete(...args),
    set: (...args: Parameters<typeof memory.set>) => (full ? refuse() : memory.set(...args)),
    setIfAbsent: (...args: Parameters<typeof memory.setIfAbsent>) => (full ? refuse() : memory.setIfAbsent(...args)),
  } as typeof memory;
  return {
    store,
    memory,
    fullAfterClaim: () => void (fillAtClaim = true),
    heal: () => void (full = false),
  };
}

const outboxes: Outbox[] = [];
afterEach(async () => {
  for (const outbox of outboxes.splice(0)) await outbox.close();
  await closeServers();
});
const lines: string[] = [];
const fields: Array<LogFields | undefined> = [];
function outboxOn(store: ReturnType<typeof createMemoryStore>, url: string, extra = {}) {
  const outbox = createOutbox({
    store,
    url,
    key: KEY,
    retryDelayMs: 20,
    maxRetryDelayMs: 40,
    intervalMs: 20,
    onError: (l, f) => {
      lines.push(l);
      fields.push(f);
    },
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
    fields.length = 0;
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
    // Each a warning with its result as the code, and its order: an alert on warnings sees the shop's receiver down.
    expect(fields.map((f) => [f?.level, f?.event, f?.code, f?.reference])).toEqual([
      ['warn', 'webhook', 'http_5xx', 'order-e2'],
      ['warn', 'webhook', 'http_5xx', 'order-e2'],
      ['warn', 'webhook', 'http_3xx', 'order-e2'],
    ]);
    await new Promise((r) => setTimeout(r, 150));
    expect(received).toHaveLength(4);
  });

  it('a receiver down for six days: the decision is given up, told as an error, not listed, and shown a day more', async () => {
    // A receiver that answers 503 without reading the signature (whose time this test moves on).
    const received: string[] = [];
    const url = await serve((req: IncomingMessage, res) => {
      received.push(String(req.headers['webhook-id']));
      req.resume().on('end', () => res.writeHead(503).end());
    });
    const store = createMemoryStore();
    const clock = { now: Date.now() };
    lines.length = 0;
    fields.length = 0;
    const outbox = outboxOn(store, url, { now: () => clock.now });
    await outbox.add(event('e9'));
    // Its first try, at once; then its next waits (each try told: the lines count them).
    await expect.poll(() => fields.length).toBe(1);
    // A minute short of six days: tried, and tried again after its wait (the test's, 40 ms at most).
    clock.now += OUTBOX_RETRY_FOR_MS - 60_000;
    await outbox.pump();
    expect(fields).toHaveLength(2);
    expect(fields.at(-1)).toMatchObject({ level: 'warn', code: 'http_5xx' });
    // Six days: its last try, then given up, and counted (the metric an alert reads).
    const givenUpBefore = givenUpCount();
    clock.now += 60_000;
    await outbox.pump();
    expect(fields).toHaveLength(3);
    expect(givenUpCount()).toBe(givenUpBefore + 1);
    expect(fields.at(-1)).toEqual({
      level: 'error',
      event: 'webhook',
      code: 'webhook_given_up',
      reference: 'order-e9',
    });
    expect(lines.at(-1)).toMatch(
      /^decision msg_e9 given up: not delivered to .* in 144 hours \(HTTP 503, 3 attempts\)/,
    );
    expect(await outbox.figures()).toEqual({ depth: 0, oldestAt: undefined });
    expect(await outbox.latest('order-e9')).toMatchObject({ givenUpAt: clock.now, lastError: 'HTTP 503' });
    // Never tried again, whoever pumps.
    const posts = received.length;
    clock.now += 3_600_000;
    await outbox.pump();
    expect(received).toHaveLength(posts);
    expect(fields).toHaveLength(3);
    expect(givenUpCount()).toBe(givenUpBefore + 1);
  });

  it('a backlog all due at once is tried a few at a time, letting the process answer between', async () => {
    const store = createMemoryStore();
    // Kept while the receiver refused each: 100 records, each due again at once.
    const away = outboxOn(store, 'https://shop.example/hooks', {
      retryDelayMs: 0,
      maxRetryDelayMs: 0,
      fetch: async () => new Response(null, { status: 503 }),
    });
    for (let i = 0; i < 100; i++) await away.add(event(`b${i}`));
    await away.close();
    let inFlight = 0;
    let most = 0;
    const back = outboxOn(store, 'https://shop.example/hooks', {
      fetch: async () => {
        most = Math.max(most, ++inFlight);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight--;
        return new Response(null, { status: 204 });
      },
    });
    await back.pump();
    expect(most).toBe(32);
    expect(await back.figures()).toEqual({ depth: 0, oldestAt: undefined });
    await back.close();
  });

  describe('two instances, one store that stalls', () => {
    const T0 = 1_800_000_000_000;
    /** A decision kept at T0 whose first try failed, and a clock a second short of its six days. */
    async function nearGivingUp() {
      const clock = { now: T0 };
      const memory = createMemoryStore({ now: () => clock.now });
      const first = outboxOn(memory, 'https://shop.example/hooks', {
        now: () => clock.now,
        fetch: async () => new Response(null, { status: 500 }),
      });
      await first.add(event('x1', 'o1'));
      await first.close();
      clock.now = T0 + OUTBOX_RETRY_FOR_MS - 1_000;
      return { clock, memory };
    }

    it('a claim that lands past most of its lease posts nothing: the other instance delivers, once', async () => {
      const { clock, memory } = await nearGivingUp();
      const posts: string[] = [];
      // A's claim write answers 25 s late (a Redis reconnecting: its commands wait).
      const late = {
        ...memory,
        compareAndSet: async (...args: Parameters<typeof memory.compareAndSet>) => {
          if (args[2].includes('"leaseUntil"')) clock.now += 25_000;
          return memory.compareAndSet(...args);
        },
      } as typeof memory;
      lines.length = 0;
      /** An instance on `store` whose receiver answers `status`, each POST noted as `name`. */
      const instance = (store: typeof memory, name: string, status: number) =>
        outboxOn(store, 'https://shop.example/hooks', {
          now: () => clock.now,
          fetch: async () => {
            posts.push(name);
            return new Response(null, { status });
          },
        });
      const a = instance(late, 'A', 503);
      await a.pump();
      clock.now += 6_000;
      const b = instance(memory, 'B', 204);
      await b.pump();
      expect(posts).toEqual(['B']);
      expect((await b.latest('o1'))?.deliveredAt).toBeDefined();
      expect(lines.filter((line) => line.includes('given up'))).toEqual([]);
      await Promise.all([a.close(), b.close()]);
    });

    it('an instance whose record another took while it posted says no give-up: the other delivered', async () => {
      const { clock, memory } = await nearGivingUp();
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let posting!: () => void;
      const posted = new Promise<void>((resolve) => (posting = resolve));
      lines.length = 0;
      const givenUpBefore = givenUpCount();
      const a = outboxOn(memory, 'https://shop.example/hooks', {
        now: () => clock.now,
        fetch: async () => {
          posting();
          await held;
          return new Response(null, { status: 503 });
        },
      });
      const pumping = a.pump();
      await posted;
      // A's lease lapses while its POST hangs (its time limit is the test's fetch's).
      clock.now += 31_000;
      const b = outboxOn(memory, 'https://shop.example/hooks', {
        now: () => clock.now,
        fetch: async () => new Response(null, { status: 204 }),
      });
      await b.pump();
      release();
      await pumping;
      expect((await b.latest('o1'))?.deliveredAt).toBeDefined();
      expect(lines.filter((line) => line.includes('given up'))).toEqual([]);
      expect(givenUpCount()).toBe(givenUpBefore);
      await Promise.all([a.close(), b.close()]);
    });
  });

  it("a delivery whose record cannot be marked (the disk full): the store's failure and the possible resend are told", async () => {
    const { url, received } = await shop();
    const memory = createMemoryStore();
    let cas = 0;
    const store = {
      ...memory,
      // The claim goes through; the mark of delivery is refused.
      compareAndSet: (...args: Parameters<typeof memory.compareAndSet>) =>
        ++cas === 2
          ? Promise.reject(Object.assign(new Error('database or disk is full'), { code: 'store_full' }))
          : memory.compareAndSet(...args),
    };
    lines.length = 0;
    fields.length = 0;
    const outbox = outboxOn(store as typeof memory, url);
    await outbox.add(event('e10'));
    await expect.poll(() => fields.length).toBe(2);
    expect(received).toHaveLength(1);
    expect(fields).toEqual([
      { level: 'error', event: 'error', code: 'store_full' },
      { level: 'warn', event: 'webhook', code: 'delivered_unmarked', reference: 'order-e10' },
    ]);
    expect(lines[1]).toBe(
      'decision msg_e10 delivered, but not marked so: not sent again; GET /decisions may show it undelivered',
    );
    // Not sent again: off the pending list.
    await outbox.pump();
    expect(received).toHaveLength(1);
    expect(await outbox.figures()).toEqual({ depth: 0, oldestAt: undefined });
  });

  it.each([
    ['marked once it takes writes, never sent again', {}, ['msg_e11']],
    ['past maxUnmarked, said to be sent again, and sent again', { maxUnmarked: 0 }, ['msg_e11', 'msg_e11']],
  ])('a delivery the store refuses to mark or unlist (full since the claim): %s', async (_, extra, sent) => {
    const { url, received } = await shop();
    let clock = Date.now();
    const { store, fullAfterClaim, heal } = fillingStore(() => clock);
    fullAfterClaim();
    lines.length = 0;
    const outbox = outboxOn(store, url, { now: () => clock, ...extra });
    await outbox.add(event('e11'));
    await expect.poll(() => lines.some((line) => line.includes('delivered, but not marked'))).toBe(true);
    expect(lines.find((line) => line.includes('not marked'))).toMatch(
      sent.length === 1
        ? /marked when the store takes writes again, and not sent again by this process/
        : /more than 0 wait for their mark: it may be sent again, under the same webhook-id/,
    );
    // Still full: each pump tries the mark alone, never a POST; the refusal told.
    clock += 31_000;
    const told = lines.length;
    await outbox.pump();
    expect(lines.slice(told)).toEqual(['outbox: Error database or disk is full']);
    // The operator frees room; the claim's lease (3 × 10 s) has long lapsed.
    heal();
    clock += 31_000;
    await outbox.pump();
    await outbox.pump();
    expect(received.map((r) => r.id)).toEqual(sent);
    expect((await outbox.latest('order-e11'))?.deliveredAt).toBeDefined();
    expect(await outbox.figures()).toEqual({ depth: 0, oldestAt: undefined });
  });

  it('a store that refuses the mark but takes a claim (a page rewritten in place): never sent again', async () => {
    const { url, received } = await shop();
    let clock = Date.now();
    const memory = createMemoryStore({ now: () => clock });
    let picky = true;
    const refuse = () => Promise.reject(Object.assign(new Error('database or disk is full'), { code: 'store_full' }));
    // What grows is refused: the delivered mark and the pending list's change; a claim's rewrite is taken.
    const store = {
      ...memory,
      compareAndSet: (...args: Parameters<typeof memory.compareAndSet>) =>
        picky && (args[2].includes('"deliveredAt"') || args[0].includes(':pending:'))
          ? refuse()
          : memory.compareAndSet(...args),
      compareAndDelete: (...args: Parameters<typeof memory.compareAndDelete>) =>
        picky && args[0].includes(':pending:') ? refuse() : memory.compareAndDelete(...args),
    } as typeof memory;
    const outbox = outboxOn(store, url, { now: () => clock });
    await outbox.add(event('e14'));
    await expect.poll(() => lines.some((line) => line.includes('msg_e14 delivered, but not marked'))).toBe(true);
    // Past the claim's lease, the store still picky: the mark is tried, never a second POST.
    clock += 31_000;
    await outbox.pump();
    await outbox.pump();
    expect(received.map((r) => r.id)).toEqual(['msg_e14']);
    picky = false;
    await outbox.pump();
    await outbox.pump();
    expect(received.map((r) => r.id)).toEqual(['msg_e14']);
    expect((await outbox.latest('order-e14'))?.deliveredAt).toBeDefined();
    expect((await outbox.figures()).depth).toBe(0);
  });

  it('a store that refuses every mark: one line per code each 10 s, and one mark tried per pump', async () => {
    const { url, received } = await shop();
    let clock = Date.now();
    const memory = createMemoryStore({ now: () => clock });
    let marksTried = 0;
    let full = true;
    const refuse = () => Promise.reject(Object.assign(new Error('database or disk is full'), { code: 'store_full' }));
    const store = {
      ...memory,
      compareAndSet: (...args: Parameters<typeof memory.compareAndSet>) => {
        if (args[2].includes('"deliveredAt"')) marksTried++;
        return full && (args[2].includes('"deliveredAt"') || args[0].includes(':pending:'))
          ? refuse()
          : memory.compareAndSet(...args);
      },
      compareAndDelete: (...args: Parameters<typeof memory.compareAndDelete>) =>
        full && args[0].includes(':pending:') ? refuse() : memory.compareAndDelete(...args),
    } as typeof memory;
    lines.length = 0;
    const outbox = outboxOn(store, url, { now: () => clock });
    await outbox.add(event('e15'));
    await outbox.add(event('e16'));
    await expect.poll(() => lines.filter((line) => line.includes('delivered, but not marked'))).toHaveLength(2);
    // Each delivery's mark refused: the first refusal said, the second held back.
    expect(lines.filter((line) => line.includes('disk is full'))).toEqual(['outbox: Error database or disk is full']);
    // Two wait for their mark; each pump tries one, refused, and says so once in 10 s.
    clock += 31_000;
    [lines.length, marksTried] = [0, 0];
    for (let i = 0; i < 3; i++) await outbox.pump();
    expect(marksTried).toBe(3);
    expect(lines).toEqual([
      // The pending list's refusal held back before: its count said as its window is swept.
      expect.stringMatching(/^outbox: store_unavailable .*pending .*; retry shortly$/),
      'outbox: Error database or disk is full (and 1 more like it in the last 10 s)',
    ]);
    clock += 10_000;
    await outbox.pump();
    expect(lines.slice(1)).toEqual([
      'outbox: Error database or disk is full (and 1 more like it in the last 10 s)',
      'outbox: Error database or disk is full (and 2 more like it in the last 10 s)',
    ]);
    // Room again: one pump marks both, and takes both off the pending list; none sent again.
    full = false;
    await outbox.pump();
    expect((await outbox.figures()).depth).toBe(0);
    expect(received.map((r) => r.id)).toEqual(['msg_e15', 'msg_e16']);
  });

  it('a store failure held back and never followed is said as the outbox closes', async () => {
    const { url } = await shop();
    const memory = createMemoryStore();
    const refuse = () => Promise.reject(Object.assign(new Error('database or disk is full'), { code: 'store_full' }));
    const store = {
      ...memory,
      compareAndSet: (...args: Parameters<typeof memory.compareAndSet>) =>
        args[2].includes('"deliveredAt"') ? refuse() : memory.compareAndSet(...args),
    } as typeof memory;
    lines.length = 0;
    const outbox = outboxOn(store, url);
    await outbox.add(event('e17'));
    await outbox.add(event('e18'));
    await expect.poll(() => lines.filter((line) => line.includes('delivered, but not marked'))).toHaveLength(2);
    expect(lines.filter((line) => line.includes('disk is full'))).toEqual(['outbox: Error database or disk is full']);
    await outbox.close();
    expect(lines.filter((line) => line.includes('disk is full'))).toEqual([
      'outbox: Error database or disk is full',
      'outbox: Error database or disk is full',
    ]);
  });

  it('a remembered delivery another instance took meanwhile is forgotten, its entry left to it, room made', async () => {
    const { url, received } = await shop();
    let clock = Date.now();
    const { store, memory, fullAfterClaim, heal } = fillingStore(() => clock);
    const outbox = outboxOn(store, url, { now: () => clock, maxUnmarked: 1 });
    lines.length = 0;
    fullAfterClaim();
    await outbox.add(event('e12'));
    await expect.poll(() => lines.filter((line) => line.includes('not marked'))).toHaveLength(1);
    // The store takes writes again, and another instance, past the lease, has the record now.
    heal();
    const key = 'gateway:outbox:decision:e12';
    const record = JSON.parse((await memory.get(key))!) as Record<string, unknown>;
    await memory.set(key, JSON.stringify({ ...record, owner: 'another', leaseUntil: clock + 60_000 }), 60_000);
    await outbox.pump();
    // Its entry left to the other instance.
    expect((await outbox.figures()).depth).toBe(1);
    // Forgotten here: the next delivery the store will not mark is remembered, not past maxUnmarked.
    fullAfterClaim();
    await outbox.add(event('e13'));
    await expect.poll(() => lines.filter((line) => line.includes('not marked'))).toHaveLength(2);
    expect(lines.filter((line) => line.includes('not marked'))[1]).toMatch(/marked when the store takes writes again/);
    heal();
    clock += 31_000;
    await outbox.pump();
    await outbox.pump();
    expect(received.map((r) => r.id)).toEqual(['msg_e12', 'msg_e13']);
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
    // Its lease: three times its POST's time limit, to the millisecond.
    clock += 2999;
    await mine.pump();
    expect(received).toHaveLength(0);
    clock += 1;
    await mine.pump();
    expect(received.map((r) => r.id)).toEqual(['msg_e5']);
  });

  it('counts a shop that does not answer in time as failed', async () => {
    lines.length = 0;
    const timeouts = () =>
      counterValues().find((c) => c.metric === 'webhooks' && c.labels.result === 'timeout')?.value ?? 0;
    const before = timeouts();
    const outbox = outboxOn(createMemoryStore(), 'http://127.0.0.1:9/', {
      fetch: hanging,
      timeoutMs: 30,
    });
    await outbox.add(event('e6'));
    await expect.poll(() => lines[0]).toContain('(timeout, attempt 1)');
    expect(timeouts()).toBe(before + 1);
  });

  it('says outbox_unavailable while its store fails, ok once it answers again', async () => {
    const store = createMemoryStore();
    let failing = false;
    const flaky = {
      ...store,
      get: (key: string) => (failing ? Promise.reject(new Error('store away')) : store.get(key)),
    };
    lines.length = 0;
    const outbox = outboxOn(flaky as typeof store, (await shop()).url);
    expect(outbox.health()).toBe('ok');
    await outbox.pump();
    expect(outbox.health()).toBe('ok');
    failing = true;
    await outbox.pump();
    expect(outbox.health()).toBe('outbox_unavailable');
    expect(lines).toEqual([expect.stringMatching(/^outbox: .*the shared store failed/)]);
    failing = false;
    await outbox.pump();
    expect(outbox.health()).toBe('ok');
  });

  it('says outbox_unavailable while its store reads but refuses every claim (a full disk), ok once it takes them', async () => {
    const { url, received } = await shop();
    const memory = createMemoryStore();
    let full = false;
    const store = {
      ...memory,
      compareAndSet: (...args: Parameters<typeof memory.compareAndSet>) =>
        full ? Promise.reject(new DeviceRiskError('store_full', 'the disk is full')) : memory.compareAndSet(...args),
    } as typeof memory;
    const outbox = outboxOn(store, url);
    full = true;
    await outbox.add(event('e20'));
    await outbox.pump();
    expect(outbox.health()).toBe('outbox_unavailable');
    full = false;
    await outbox.pump();
    expect(outbox.health()).toBe('ok');
    expect(received.map((r) => r.id)).toEqual(['msg_e20']);
  });

  it('stays ok while some of its tries go through (one claim refused now and then: a fleet contending)', async () => {
    const { url } = await shop([503, 503, 503, 503]);
    const memory = createMemoryStore();
    const store = {
      ...memory,
      compareAndSet: (...args: Parameters<typeof memory.compareAndSet>) =>
        args[0].endsWith(':e22')
          ? Promise.reject(new DeviceRiskError('store_unavailable', 'contended'))
          : memory.compareAndSet(...args),
    } as typeof memory;
    let clock = Date.now();
    const outbox = outboxOn(store, url, { now: () => clock });
    await outbox.add(event('e21'));
    await outbox.add(event('e22'));
    clock += 60_000;
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

describe('the outbox, on a scripted shop and a clock of its own', () => {
  /** A shop answering each POST with the next of `answers` (a status, or an error thrown), then 204. */
  function scripted(answers: Array<number | Error> = []) {
    const posts: Array<{ url: string; init: RequestInit }> = [];
    const fetch = async (url: string, init?: RequestInit) => {
      posts.push({ url, init: init! });
      const answer = answers.shift() ?? 204;
      if (answer instanceof Error) throw answer;
      return new Response(answer === 204 ? null : 'body', { status: answer });
    };
    return { posts, fetch: fetch as unknown as typeof globalThis.fetch };
  }
  const webhooks = (result: string) =>
    counterValues().find((counter) => counter.metric === 'webhooks' && counter.labels.result === result)?.value ?? 0;

  it('POSTs JSON as the gateway, without Authorization unless given, never following a redirect', async () => {
    const shop = scripted();
    const outbox = outboxOn(createMemoryStore(), 'https://shop.example/hooks', { fetch: shop.fetch });
    await outbox.add(event('h1'));
    await expect.poll(() => shop.posts.length).toBe(1);
    const { url, init } = shop.posts[0]!;
    expect(url).toBe('https://shop.example/hooks');
    expect(init).toMatchObject({ method: 'POST', redirect: 'manual', body: JSON.stringify(event('h1')) });
    expect(init.signal).toBeInstanceOf(AbortSignal);
    const headers = init.headers as Record<string, string>;
    expect(headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'blackbox-capture-gateway',
      'webhook-id': 'msg_h1',
    });
    expect(headers).not.toHaveProperty('authorization');
  });

  it('counts each attempt by its result, and tells a network error without its details', async () => {
    const shop = scripted([new TypeError('fetch failed'), 404, 503, 204]);
    const before = ['network_error', 'http_4xx', 'http_5xx', 'delivered'].map(webhooks);
    lines.length = 0;
    let clock = 1_000_000;
    const outbox = outboxOn(createMemoryStore(), 'https://shop.example/hooks', { fetch: shop.fetch, now: () => clock });
    await outbox.add(event('h2'));
    for (let i = 0; i < 3; i++) {
      await expect.poll(() => shop.posts.length).toBe(i + 1);
      clock += 60_000;
      await outbox.pump();
    }
    await expect.poll(async () => (await outbox.latest('order-h2'))?.deliveredAt).toBe(clock);
    expect(['network_error', 'http_4xx', 'http_5xx', 'delivered'].map(webhooks)).toEqual(before.map((n) => n + 1));
    expect(lines).toEqual([
      expect.stringMatching(
        /^decision msg_h2 not delivered to https:\/\/shop\.example \(network error, attempt 1\); next try in \d+ s$/,
      ),
      expect.stringContaining('(HTTP 404, attempt 2)'),
      expect.stringContaining('(HTTP 503, attempt 3)'),
    ]);
    expect(await outbox.latest('order-h2')).toMatchObject({ attempts: 4, lastError: 'HTTP 503' });
    expect(await outbox.latest('order-h2')).not.toHaveProperty('owner');
  });

  it("counts a shop's status by its class, and one past 599 with the 5xx: the label keeps to its list", async () => {
    const statuses = [399, 400, 500, 999];
    const posts: number[] = [];
    // A status past 599 comes from fetch, never from new Response(): a stand-in with what the outbox reads.
    const fetch = (async () => {
      const status = statuses[posts.length] ?? 204;
      posts.push(status);
      return status > 599 ? { status, body: null } : new Response(status === 204 ? null : 'body', { status });
    }) as unknown as typeof globalThis.fetch;
    const results = ['http_3xx', 'http_4xx', 'http_5xx', 'delivered'];
    const before = results.map(webhooks);
    let clock = 1_000_000;
    const outbox = outboxOn(createMemoryStore(), 'https://shop.example/hooks', { fetch, now: () => clock });
    await outbox.add(event('h15'));
    for (let i = 0; i < statuses.length; i++) {
      await expect.poll(() => posts.length).toBe(i + 1);
      clock += 60_000;
      await outbox.pump();
    }
    await expect.poll(async () => (await outbox.latest('order-h15'))?.deliveredAt).toBe(clock);
    expect(results.map(webhooks)).toEqual(before.map((n, i) => n + [1, 1, 2, 1][i]!));
  });

  it('tries a failed decision again only once its time has come, within the backoff', async () => {
    const shop = scripted([500]);
    let clock = 1_000_000;
    const outbox = outboxOn(createMemoryStore(), 'https://shop.example/hooks', {
      fetch: shop.fetch,
      now: () => clock,
      retryDelayMs: 1000,
      maxRetryDelayMs: 1000,
    });
    await outbox.add(event('h3'));
    await expect.poll(async () => (await outbox.latest('order-h3'))?.lastError).toBe('HTTP 500');
    const { nextAt } = (await outbox.latest('order-h3'))!;
    expect(nextAt).toBeGreaterThanOrEqual(clock);
    expect(nextAt).toBeLessThanOrEqual(clock + 1000);
    clock = nextAt - 1;
    await outbox.pump();
    expect(shop.posts).toHaveLength(1);
    clock = nextAt;
    await outbox.pump();
    expect(shop.posts).toHaveLength(2);
  });

  it('keeps one record per execution whatever its case, and none by order for an order-less event', async () => {
    const shop = scripted();
    const store = createMemoryStore();
    const outbox = outboxOn(store, 'https://shop.example/hooks', { fetch: shop.fetch });
    expect(await outbox.add(event('Exec-Upper'))).toBe(true);
    expect(await outbox.add(event('exec-upper'))).toBe(false);
    const orderless = { ...event('h4'), data: { ...event('h4').data, customerInternalReference: '' } };
    expect(await outbox.add(orderless as typeof orderless)).toBe(true);
    expect(await store.get('gateway:outbox:order:')).toBeUndefined();
    await expect.poll(() => shop.posts.length).toBe(2);
  });

  it.each([
    ['its listing on the pending list', 'gateway:outbox:pending:'],
    ["its order's entry", 'gateway:outbox:order:'],
  ])(
    "an add cut off after its record (%s refused) is kept by the caller's next add: listed, sent once",
    async (_, cut) => {
      const shop = scripted();
      const memory = createMemoryStore();
      let refuse = true;
      /** The first write under `cut` fails, as a store away for one write, or a process killed there. */
      const once =
        <A extends unknown[], R>(write: (key: string, ...rest: A) => Promise<R>) =>
        async (key: string, ...rest: A): Promise<R> => {
          if (refuse && key.startsWith(cut)) {
            refuse = false;
            throw new Error('store away for one write');
          }
          return write(key, ...rest);
        };
      const store = {
        ...memory,
        set: once(memory.set.bind(memory)),
        setIfAbsent: once(memory.setIfAbsent.bind(memory)),
      };
      const outbox = outboxOn(store, 'https://shop.example/hooks', { fetch: shop.fetch });
      await expect(outbox.add(event('cut-1'))).rejects.toThrow();
      // The caller, told of the failure, adds again: already kept, and now listed.
      expect(await outbox.add(event('cut-1'))).toBe(false);
      await expect.poll(() => shop.posts.length).toBe(1);
      expect((await outbox.latest('order-cut-1'))?.deliveredAt).toBeDefined();
      // Once delivered, an add again changes nothing: no second POST.
      expect(await outbox.add(event('cut-1'))).toBe(false);
      await outbox.pump();
      expect(shop.posts).toHaveLength(1);
      expect(await outbox.figures()).toEqual({ depth: 0, oldestAt: undefined });
    },
  );

  it.each([
    ['tried once', { attempts: 1 }],
    ['being sent (leased)', { owner: 'another-instance', leaseUntil: Number.MAX_SAFE_INTEGER }],
    ['delivered', { attempts: 1, deliveredAt: 1 }],
  ])('an add again of a record %s lists nothing: only one never tried may be unlisted', async (_, state) => {
    const memory = createMemoryStore();
    const listings: string[] = [];
    const store = {
      ...memory,
      setIfAbsent: async (key: string, value: string, ttlMs: number) => {
        if (key.startsWith('gateway:outbox:pending:')) listings.push(key);
        return memory.setIfAbsent(key, value, ttlMs);
      },
      compareAndSet: async (key: string, expected: string, value: string, ttlMs: number) => {
        if (key.startsWith('gateway:outbox:pending:')) listings.push(key);
        return memory.compareAndSet(key, expected, value, ttlMs);
      },
    };
    const closed = outboxOn(store, 'https://shop.example/hooks', { fetch: scripted().fetch });
    await closed.close();
    expect(await closed.add(event('again-1'))).toBe(true);
    expect(listings).toHaveLength(1);
    // Never tried (the closed outbox sends nothing): listed again, in case its listing was lost.
    expect(await closed.add(event('again-1'))).toBe(false);
    expect(listings).toHaveLength(2);
    const key = 'gateway:outbox:decision:again-1';
    await memory.set(key, JSON.stringify({ ...JSON.parse((await memory.get(key))!), ...state }), 60_000);
    expect(await closed.add(event('again-1'))).toBe(false);
    expect(listings).toHaveLength(2);
  });

  it('an order-less record added again gets no entry by order', async () => {
    const store = createMemoryStore();
    const closed = outboxOn(store, 'https://shop.example/hooks', { fetch: scripted().fetch });
    await closed.close();
    const orderless = { ...event('h7'), data: { ...event('h7').data, customerInternalReference: '' } };
    expect(await closed.add(orderless as typeof orderless)).toBe(true);
    expect(await closed.add(orderless as typeof orderless)).toBe(false);
    expect(await store.get('gateway:outbox:order:')).toBeUndefined();
    expect((await closed.figures()).depth).toBe(1);
  });

  it.each([
    ['its failure, then its expiry', ['failure', 'expiry']],
    ['its expiry, then its failure', ['expiry', 'failure']],
  ] as const)(
    'an order ended unchecked twice (%s): the first is its one outcome, the other logged',
    async (_, ends) => {
      const shop = scripted();
      lines.length = 0;
      const outbox = outboxOn(createMemoryStore(), 'https://shop.example/hooks', { fetch: shop.fetch });
      const of = {
        failure: failureEvent({ customerInternalReference: 'order-x', reason: 'request_rejected' }, 0),
        expiry: decisionEvent(
          { accountId: 'acc', workflowExecutionId: 'exec-x', status: 'SESSION_EXPIRED' },
          { customerInternalReference: 'order-x' },
          undefined,
          0,
        ),
      };
      expect(await outbox.add(of[ends[0]])).toBe(true);
      // The first again (its caller's retry) is the same ending: kept once, not refused.
      expect(await outbox.add(of[ends[0]])).toBe(false);
      expect(await outbox.add(of[ends[1]])).toBe(false);
      await expect.poll(() => shop.posts.length).toBe(1);
      expect(JSON.parse(shop.posts[0]!.init.body as string)).toMatchObject({ type: of[ends[0]].type });
      expect(lines).toEqual([expect.stringMatching(/order order-x has ended unchecked already, told once/)]);
      // A decision (PROCESSED) for the order is the truth, whatever came before: sent.
      expect(await outbox.add(event('exec-y', 'order-x'))).toBe(true);
      await expect.poll(() => shop.posts.length).toBe(2);
    },
  );

  it('a decision kept but never listed (the write cut off), then its order failed: the decision is listed and sent, the failure not', async () => {
    const shop = scripted();
    const memory = createMemoryStore();
    let full = true;
    const refuse = () => Promise.reject(Object.assign(new Error('database or disk is full'), { code: 'store_full' }));
    const pendingRefused = (key: string) => full && key.includes(':pending:');
    const store = {
      ...memory,
      setIfAbsent: (...args: Parameters<typeof memory.setIfAbsent>) =>
        pendingRefused(args[0]) ? refuse() : memory.setIfAbsent(...args),
      compareAndSet: (...args: Parameters<typeof memory.compareAndSet>) =>
        pendingRefused(args[0]) ? refuse() : memory.compareAndSet(...args),
    } as typeof memory;
    lines.length = 0;
    const outbox = outboxOn(store, 'https://shop.example/hooks', { fetch: shop.fetch });
    // The queued check's onResult: its record and the order's entry kept, its listing refused, again.
    await expect(outbox.add(event('exec-u', 'order-u'))).rejects.toThrow();
    await expect(outbox.add(event('exec-u', 'order-u'))).rejects.toThrow();
    // Given up (result_undelivered): the decision it has must be on its way before the failure is
    // dropped for it; its listing refused, the failure's teller is told so, and tries again.
    const failure = failureEvent({ customerInternalReference: 'order-u', reason: 'result_undelivered' }, 0);
    await expect(outbox.add(failure)).rejects.toThrow();
    full = false;
    expect(await outbox.add(failure)).toBe(false);
    expect(lines.at(-1)).toMatch(/not sent: order order-u has its decision, told/);
    await outbox.pump();
    await expect
      .poll(() => shop.posts.map((post) => JSON.parse(post.init.body as string).type))
      .toEqual(['device_risk.decision']);
  });

  it('a failure read while a decision of its order is being kept is not sent after it', async () => {
    const shop = scripted();
    const memory = createMemoryStore();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const holding = new Promise<void>((resolve) => (reached = resolve));
    // The decision's pointer of its order is written last: held until the failure has looked for it.
    const store = {
      ...memory,
      set: async (...args: Parameters<typeof memory.set>) => {
        if (args[0].includes(':order:')) {
          reached();
          await held;
        }
        return memory.set(...args);
      },
    } as typeof memory;
    lines.length = 0;
    const outbox = outboxOn(store, 'https://shop.example/hooks', { fetch: shop.fetch });
    const deciding = outbox.add(event('exec-r', 'order-r'));
    await holding;
    expect(
      await outbox.add(failureEvent({ customerInternalReference: 'order-r', reason: 'result_not_ready' }, 0)),
    ).toBe(false);
    release();
    expect(await deciding).toBe(true);
    await outbox.pump();
    await expect
      .poll(() => shop.posts.map((post) => JSON.parse(post.init.body as string).type))
      .toEqual(['device_risk.decision']);
    expect(lines).toEqual([expect.stringMatching(/^msg_failed_\w+ not sent: order order-r has its decision, told/)]);
  });

  it('an order with its decision told ends unchecked never after: its failure and its expiry are logged, not sent', async () => {
    const shop = scripted();
    lines.length = 0;
    fields.length = 0;
    const outbox = outboxOn(createMemoryStore(), 'https://shop.example/hooks', { fetch: shop.fetch });
    expect(await outbox.add(event('exec-z', 'order-z'))).toBe(true);
    expect(await outbox.add(failureEvent({ customerInternalReference: 'order-z', reason: 'blackbox_stale' }, 0))).toBe(
      false,
    );
    const expiry = decisionEvent(
      { accountId: 'acc', workflowExecutionId: 'exec-z2', status: 'TOKEN_EXPIRED' },
      { customerInternalReference: 'order-z' },
      undefined,
      0,
    );
    expect(await outbox.add(expiry)).toBe(false);
    await expect.poll(() => shop.posts.length).toBe(1);
    expect(lines).toEqual([
      expect.stringMatching(/^msg_failed_\w+ not sent: order order-z has its decision, told/),
      'msg_exec-z2 not sent: order order-z has its decision, told (one outcome per order)',
    ]);
    expect(fields).toEqual([
      { event: 'webhook', code: 'one_outcome', reference: 'order-z' },
      { event: 'webhook', code: 'one_outcome', reference: 'order-z' },
    ]);
    expect((await outbox.latest('order-z'))?.event).toEqual(event('exec-z', 'order-z'));
  });

  it('drops from its pending list a record gone or already delivered, without a POST', async () => {
    const shop = scripted();
    const store = createMemoryStore();
    const closedOne = outboxOn(store, 'https://shop.example/hooks', { fetch: shop.fetch });
    await closedOne.close();
    // Closed: kept, not sent.
    await closedOne.add(event('h5'));
    await closedOne.add(event('h6'));
    await closedOne.pump();
    expect(shop.posts).toHaveLength(0);
    expect((await closedOne.figures()).depth).toBe(2);
    await store.delete('gateway:outbox:decision:h5');
    const h6 = JSON.parse((await store.get('gateway:outbox:decision:h6'))!) as object;
    await store.set('gateway:outbox:decision:h6', JSON.stringify({ ...h6, deliveredAt: 1 }), 60_000);
    const outbox = outboxOn(store, 'https://shop.example/hooks', { fetch: shop.fetch });
    await outbox.pump();
    expect(shop.posts).toHaveLength(0);
    expect(await outbox.figures()).toEqual({ depth: 0, oldestAt: undefined });
  });

  it('figures: the oldest of those waiting', async () => {
    let clock = 5000;
    const store = createMemoryStore();
    const closedOne = outboxOn(store, 'https://shop.example/hooks', { now: () => clock });
    await closedOne.close();
    await closedOne.add(event('h7'));
    clock = 4000;
    await closedOne.add(event('h8'));
    clock = 6000;
    await closedOne.add(event('h9'));
    expect(await closedOne.figures()).toEqual({ depth: 3, oldestAt: 4000 });
  });

  it('says outbox_unavailable while a read of its store takes longer than a lease', async () => {
    const store = createMemoryStore();
    let clock = 1_000_000;
    let hang = false;
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const slow = {
      ...store,
      get: (key: string) => (hang ? answered.then(() => store.get(key)) : store.get(key)),
    };
    const outbox = outboxOn(slow as typeof store, 'https://shop.example/hooks', {
      now: () => clock,
      timeoutMs: 1000,
      fetch: scripted([500]).fetch,
    });
    await outbox.add(event('h10'));
    await expect.poll(async () => (await outbox.latest('order-h10'))?.lastError).toBe('HTTP 500');
    hang = true;
    clock += 3_600_000;
    void outbox.pump();
    expect(outbox.health()).toBe('ok');
    clock += 3000;
    expect(outbox.health()).toBe('ok');
    // Asked again meanwhile: the same pump, timed from its start.
    void outbox.pump();
    clock += 1;
    expect(outbox.health()).toBe('outbox_unavailable');
    // Answered at last: ok again.
    answer();
    await expect.poll(() => outbox.health()).toBe('ok');
  });

  it('tells a failure of an attempt (its store refusing) with its code, never throwing it', async () => {
    const store = createMemoryStore();
    const refusing = {
      ...store,
      compareAndSet: () => Promise.reject(new DeviceRiskError('store_full', 'the disk is full')),
    };
    lines.length = 0;
    const outbox = outboxOn(refusing as typeof store, 'https://shop.example/hooks', { fetch: scripted().fetch });
    await outbox.add(event('h11'));
    await expect.poll(() => lines).toEqual(['outbox: store_full [blackbox-capture/server] the disk is full']);
    const plain = { ...store, compareAndSet: () => Promise.reject(new Error('no code')) };
    const other = outboxOn(plain as typeof store, 'https://shop.example/hooks', { fetch: scripted().fetch });
    await other.add(event('h12'));
    // Any other error as the log tells it (errorEvent): its name and message.
    await expect.poll(() => lines).toContain('outbox: Error no code');
  });

  it('without onError, says each failure on the console, named', async () => {
    const said: unknown[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((line: unknown) => void said.push(line));
    try {
      const outbox = createOutbox({
        store: createMemoryStore(),
        url: 'https://shop.example/hooks',
        key: KEY,
        fetch: scripted([500]).fetch,
      });
      outboxes.push(outbox);
      await outbox.add(event('h13'));
      await expect
        .poll(() => said)
        .toEqual([expect.stringMatching(/^blackbox-capture gateway: decision msg_h13 not delivered/)]);
    } finally {
      spy.mockRestore();
    }
  });

  it('close() waits for the POSTs under way, and start() pumps at once and then every intervalMs', async () => {
    let answer!: (response: Response) => void;
    const posts: string[] = [];
    const fetch = ((url: string) => {
      posts.push(url);
      return new Promise<Response>((resolve) => (answer = resolve));
    }) as unknown as typeof globalThis.fetch;
    const store = createMemoryStore();
    const outbox = outboxOn(store, 'https://shop.example/hooks', { fetch });
    await outbox.add(event('h14'));
    await expect.poll(() => posts.length).toBe(1);
    let closed = false;
    const closing = outbox.close().then(() => (closed = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closed).toBe(false);
    answer(new Response(null, { status: 204 }));
    await closing;
    expect(JSON.parse((await store.get('gateway:outbox:decision:h14'))!)).toHaveProperty('deliveredAt');
  });
});

describe('the outbox, its timing', () => {
  it('waits a random share of the doubling backoff, told in whole seconds', async () => {
    const random = vi.spyOn(Math, 'random').mockReturnValue(0.999);
    try {
      let clock = 1_000_000;
      lines.length = 0;
      const posts: number[] = [];
      const fetch = (async () => {
        posts.push(clock);
        return new Response(null, { status: 503 });
      }) as unknown as typeof globalThis.fetch;
      const outbox = outboxOn(createMemoryStore(), 'https://shop.example/hooks', {
        fetch,
        now: () => clock,
        retryDelayMs: 2000,
        maxRetryDelayMs: 3000,
      });
      await outbox.add(event('t1'));
      await expect.poll(async () => (await outbox.latest('order-t1'))?.nextAt).toBe(clock + 1998);
      clock += 1998;
      await outbox.pump();
      await expect.poll(async () => (await outbox.latest('order-t1'))?.attempts).toBe(2);
      expect((await outbox.latest('order-t1'))?.nextAt).toBe(clock + 2997);
      expect(lines).toEqual([expect.stringMatching(/next try in 2 s$/), expect.stringMatching(/next try in 3 s$/)]);
    } finally {
      random.mockRestore();
    }
  });

  it('a 299 is delivered, a 200 too', async () => {
    for (const status of [299, 200]) {
      const fetch = (async () => new Response(null, { status })) as unknown as typeof globalThis.fetch;
      const outbox = outboxOn(createMemoryStore(), 'https://shop.example/hooks', { fetch });
      await outbox.add(event(`s${status}`));
      await expect.poll(async () => (await outbox.latest(`order-s${status}`))?.deliveredAt).toBeDefined();
    }
  });

  it('start() pumps at once, then every intervalMs, with one timer however often started', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const outbox = createOutbox({
        store: createMemoryStore(),
        url: 'https://shop.example/hooks',
        key: KEY,
        intervalMs: 50,
      });
      const pump = vi.spyOn(outbox, 'pump');
      outbox.start();
      outbox.start();
      expect(pump).toHaveBeenCalledTimes(2);
      vi.advanceTimersByTime(50);
      expect(pump).toHaveBeenCalledTimes(3);
      await outbox.close();
      vi.advanceTimersByTime(500);
      expect(pump).toHaveBeenCalledTimes(3);
    } finally {
      vi.useRealTimers();
    }
  });

  it('keeps a decision a week, delivered or not', async () => {
    let clock = 1_000_000;
    const store = createMemoryStore({ now: () => clock });
    // w1's receiver takes it; w2's never does.
    const outbox = outboxOn(store, 'https://shop.example/hooks', {
      now: () => clock,
      fetch: (async (_: string, init: RequestInit) =>
        new Response(null, {
          status: (init.body as string).includes('order-w2') ? 503 : 204,
        })) as unknown as typeof globalThis.fetch,
    });
    await outbox.add(event('w1'));
    await outbox.add(event('w2'));
    await expect.poll(async () => (await outbox.latest('order-w1'))?.deliveredAt).toBeDefined();
    await expect.poll(async () => (await outbox.latest('order-w2'))?.lastError).toBe('HTTP 503');
    clock += OUTBOX_TTL_MS - 1;
    expect(await outbox.latest('order-w1')).toMatchObject({ deliveredAt: expect.any(Number) });
    expect(await outbox.latest('order-w2')).toMatchObject({ attempts: 1, lastError: 'HTTP 503' });
    clock += 1;
    expect(await outbox.latest('order-w1')).toBeUndefined();
    expect(await outbox.latest('order-w2')).toBeUndefined();
  });

  it('an unknown order on the file store: no decision; a known one, its own', async () => {
    const outbox = outboxOn(
      createSqliteStore(join(mkdtempSync(join(tmpdir(), 'bbc-outbox-')), 'data.sqlite')),
      'https://shop.example/hooks',
      { fetch: (async () => new Response(null, { status: 204 })) as unknown as typeof globalThis.fetch },
    );
    await outbox.add(event('w3'));
    expect(await outbox.latest('order-w3')).toMatchObject({ id: 'msg_w3' });
    expect(await outbox.latest('order-none')).toBeUndefined();
  });
});
