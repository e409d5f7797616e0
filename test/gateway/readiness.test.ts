// GET /readyz's checks (src/gateway/readiness.ts) with fakes on a fake clock: each check's code,
// a store or queue that hangs answered within READY_PROBE_MS and asked once at a time, the
// client credentials tried from start on and told once per change, the route's answers.
// readiness.emulator.test.ts runs them in `serve` as a process.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { LogFields } from '../../src/gateway/log.js';
import type { Outbox } from '../../src/gateway/outbox.js';
import {
  createReadiness,
  READY_PROBE_MS,
  readyRoute,
  TOKEN_CHECK_MS,
  TOKEN_RETRY_MS,
  type Readiness,
} from '../../src/gateway/readiness.js';
import type { TokenSource } from '../../src/server/api/token-source.js';
import { DeviceRiskError } from '../../src/server/errors.js';
import type { CheckQueue } from '../../src/server/queue/queue.js';
import type { Store } from '../../src/server/store/store.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

/** A promise and its settlers, for a collaborator that answers when the test says. */
function pending<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((settle, fail) => {
    resolve = settle;
    reject = fail;
  });
  return { promise, resolve, reject };
}

function fixture() {
  const lines: Array<[string, LogFields | undefined]> = [];
  const store = { set: vi.fn((_key: string, _value: string, _ttlMs: number) => Promise.resolve()) };
  const queue = { counts: vi.fn(() => Promise.resolve({})) };
  const tokenSource = { getToken: vi.fn((_?: { signal?: AbortSignal }) => Promise.resolve('a-token')) };
  let outboxHealth: 'ok' | 'outbox_unavailable' = 'ok';
  const make = () =>
    createReadiness({
      store: store as unknown as Store,
      queue: queue as unknown as CheckQueue,
      tokenSource: tokenSource as unknown as TokenSource,
      outbox: { health: () => outboxHealth } as unknown as Outbox,
      log: (line, fields) => lines.push([line, fields]),
    });
  return {
    store,
    queue,
    tokenSource,
    lines,
    make,
    outboxFails: () => (outboxHealth = 'outbox_unavailable'),
  };
}

const readinesses: Readiness[] = [];
afterEach(() => {
  for (const readiness of readinesses.splice(0)) readiness.close();
});
const started = (f: ReturnType<typeof fixture>) => {
  const readiness = f.make();
  readinesses.push(readiness);
  return readiness;
};

describe('the readiness checks', () => {
  it('read ok for each once the first token is in, writing the store a key of its own that expires', async () => {
    const f = fixture();
    const readiness = started(f);
    await vi.advanceTimersByTimeAsync(0);
    expect(await readiness.checks()).toEqual({ store: 'ok', queue: 'ok', token: 'ok', outbox: 'ok' });
    // A write: a store that reads but takes no write accepts no checkout and keeps no outcome.
    expect(f.store.set).toHaveBeenCalledWith(expect.stringMatching(/^gateway:readyz:.+/), expect.any(String), 60_000);
    expect(f.queue.counts).toHaveBeenCalledTimes(1);
    // Tried at start, with a time limit of its own.
    expect(f.tokenSource.getToken).toHaveBeenCalledTimes(1);
    expect(f.tokenSource.getToken.mock.calls[0]![0]!.signal).toBeInstanceOf(AbortSignal);
    expect(f.lines).toEqual([]);
  });

  it('read token_pending before the service first answers', async () => {
    const f = fixture();
    f.tokenSource.getToken.mockReturnValue(new Promise(() => {}));
    const readiness = started(f);
    expect((await readiness.checks()).token).toBe('token_pending');
  });

  it('read store_unavailable and queue_unavailable for a store and a queue that reject', async () => {
    const f = fixture();
    f.store.set.mockRejectedValue(new Error('down'));
    f.queue.counts.mockRejectedValue(new Error('down'));
    f.outboxFails();
    const readiness = started(f);
    await vi.advanceTimersByTimeAsync(0);
    expect(await readiness.checks()).toEqual({
      store: 'store_unavailable',
      queue: 'queue_unavailable',
      token: 'ok',
      outbox: 'outbox_unavailable',
    });
  });

  it('read store_full for a store that reads but refuses a write for want of room (Redis at maxmemory, a full disk)', async () => {
    const f = fixture();
    f.store.set.mockRejectedValue(new DeviceRiskError('store_full', 'the store is full', { retryAfter: 1 }));
    const readiness = started(f);
    await vi.advanceTimersByTimeAsync(0);
    expect(await readiness.checks()).toMatchObject({ store: 'store_full', queue: 'ok' });
    // Any other of the kit's failures is the store away.
    f.store.set.mockRejectedValue(new DeviceRiskError('store_unavailable', 'the store is away', { retryAfter: 1 }));
    expect(await readiness.checks()).toMatchObject({ store: 'store_unavailable' });
  });

  it('answer within READY_PROBE_MS for a store that hangs, asking it once until it answers', async () => {
    const f = fixture();
    const hanging = pending<void>();
    f.store.set.mockReturnValue(hanging.promise);
    const readiness = started(f);
    const first = readiness.checks();
    await vi.advanceTimersByTimeAsync(READY_PROBE_MS - 1);
    let answered: Awaited<typeof first> | undefined;
    void first.then((checks) => (answered = checks));
    await vi.advanceTimersByTimeAsync(0);
    expect(answered).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(answered).toMatchObject({ store: 'store_unavailable', queue: 'ok' });
    // The next probe waits on the same call: one held, never one per probe.
    const second = readiness.checks();
    await vi.advanceTimersByTimeAsync(READY_PROBE_MS);
    expect((await second).store).toBe('store_unavailable');
    expect(f.store.set).toHaveBeenCalledTimes(1);
    // Answered at last: the next probe asks again, and reads ok.
    hanging.resolve();
    await vi.advanceTimersByTimeAsync(0);
    f.store.set.mockResolvedValue(undefined);
    expect((await readiness.checks()).store).toBe('ok');
    expect(f.store.set).toHaveBeenCalledTimes(2);
    // A probe that answered in time leaves no timer behind.
    expect(vi.getTimerCount()).toBe(1);
  });

  it('tell a rejected secret once, retry every TOKEN_RETRY_MS, and tell its return once', async () => {
    const f = fixture();
    const rejected = new DeviceRiskError('token_rejected', 'the service refused the client credentials (401)');
    f.tokenSource.getToken.mockRejectedValue(rejected);
    const readiness = started(f);
    await vi.advanceTimersByTimeAsync(0);
    expect((await readiness.checks()).token).toBe('token_rejected');
    expect(f.lines).toEqual([
      [
        'client credentials: token_rejected [blackbox-capture/server] the service refused the client credentials (401)',
        { level: 'error', event: 'credentials', code: 'token_rejected' },
      ],
    ]);
    await vi.advanceTimersByTimeAsync(TOKEN_RETRY_MS - 1);
    expect(f.tokenSource.getToken).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(f.tokenSource.getToken).toHaveBeenCalledTimes(2);
    // Failing again: not told again.
    expect(f.lines).toHaveLength(1);
    f.tokenSource.getToken.mockResolvedValue('a-token');
    await vi.advanceTimersByTimeAsync(TOKEN_RETRY_MS);
    expect((await readiness.checks()).token).toBe('ok');
    expect(f.lines[1]).toEqual(['client credentials: accepted again', { level: 'info', event: 'credentials' }]);
    // Once ok, tried every TOKEN_CHECK_MS, not every TOKEN_RETRY_MS.
    await vi.advanceTimersByTimeAsync(TOKEN_CHECK_MS - 1);
    expect(f.tokenSource.getToken).toHaveBeenCalledTimes(3);
    await vi.advanceTimersByTimeAsync(1);
    expect(f.tokenSource.getToken).toHaveBeenCalledTimes(4);
    expect(f.lines).toHaveLength(2);
  });

  it('read token_unavailable for a failure that is not the kit’s, told without a message', async () => {
    const f = fixture();
    f.tokenSource.getToken.mockRejectedValue(new TypeError('fetch failed'));
    const readiness = started(f);
    await vi.advanceTimersByTimeAsync(0);
    expect((await readiness.checks()).token).toBe('token_unavailable');
    expect(f.lines).toEqual([
      ['client credentials: token_unavailable', { level: 'error', event: 'credentials', code: 'token_unavailable' }],
    ]);
  });

  it('stop trying the credentials once closed', async () => {
    const f = fixture();
    const readiness = f.make();
    await vi.advanceTimersByTimeAsync(0);
    readiness.close();
    await vi.advanceTimersByTimeAsync(TOKEN_CHECK_MS * 3);
    expect(f.tokenSource.getToken).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('stop trying when closed while a try is under way', async () => {
    const f = fixture();
    const answer = pending<string>();
    f.tokenSource.getToken.mockReturnValue(answer.promise);
    const readiness = f.make();
    readiness.close();
    answer.resolve('a-token');
    await vi.advanceTimersByTimeAsync(TOKEN_CHECK_MS * 3);
    expect(f.tokenSource.getToken).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('GET /readyz', () => {
  const route = (checks: Record<string, string>, closing = false) =>
    readyRoute({ checks: () => Promise.resolve(checks), close: () => {} } as Readiness, () => closing).handler(
      new Request('http://gateway.test/readyz'),
    );
  const ok = { store: 'ok', queue: 'ok', token: 'ok', outbox: 'ok' };

  it('is GET and HEAD /readyz', () => {
    const { path, methods } = readyRoute({} as Readiness, () => false);
    expect([path, methods]).toEqual(['/readyz', ['GET', 'HEAD']]);
  });

  it('is 200 ready with every check ok, never cached', async () => {
    const answer = await route(ok);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.headers.get('retry-after')).toBeNull();
    expect(await answer.json()).toEqual({ status: 'ready', checks: ok });
  });

  it("is 503 not_ready with the first failing check's code, and a Retry-After", async () => {
    const checks = { ...ok, queue: 'queue_unavailable', token: 'token_rejected' };
    const answer = await route(checks);
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(await answer.json()).toEqual({ status: 'not_ready', code: 'queue_unavailable', checks });
  });

  it('is 503 shutting_down from SIGTERM on, even with every check ok', async () => {
    const answer = await route(ok, true);
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(await answer.json()).toEqual({ status: 'shutting_down', code: 'shutting_down', checks: ok });
  });
});
