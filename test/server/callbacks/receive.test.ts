// Receiving a callback over HTTP, alone: the checks before any write, and the record with its
// pending entry once they pass.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pendingList } from '../../../src/server/callbacks/pending.js';
import { callbackReceiver, readCallback } from '../../../src/server/callbacks/receive.js';
import { callbackTasks } from '../../../src/server/callbacks/tasks.js';
import { MAX_UNRECORDED, unrecordedCallbacks } from '../../../src/server/callbacks/unrecorded.js';
import type { CallbackResult } from '../../../src/server/callbacks/types.js';
import { callbackBody, EXECUTION, settingsFor, stubClient } from '../../support/callbacks.js';

/** No callback held in memory, and none taken: the receiver as it was before it could hold one. */
const holdsNone = { holds: () => false, take: () => false };

const post = (body: unknown, type = 'application/json') =>
  new Request('https://shop.test/callbacks', {
    method: 'POST',
    headers: { 'content-type': type },
    body: JSON.stringify(body),
  });

describe('readCallback', () => {
  it('gives the callback and whether it carries the kit tag, writing nothing', async () => {
    const settings = settingsFor({ client: stubClient({ vouches: async () => true }) });
    const read = await readCallback(settings, post(callbackBody()));
    expect(read).toEqual({ callback: callbackBody(), tagged: true });
  });

  it('answers a refusal and tells onError: a media type that is not JSON is 415', async () => {
    const errors: unknown[] = [];
    const read = await readCallback(
      settingsFor({ onError: (e) => errors.push(e) }),
      post(callbackBody(), 'text/plain'),
    );
    expect(read).toBeInstanceOf(Response);
    expect((read as Response).status).toBe(415);
    expect(errors).toMatchObject([{ code: 'callback_refused', status: 415 }]);
  });

  it('gives an invalid shape its reason without the package prefix', async () => {
    const read = (await readCallback(settingsFor(), post({ nope: 1 }))) as Response;
    expect(await read.json()).toEqual({
      error: { code: 'invalid_callback', message: 'the callback lacks a callbackSentAt date' },
    });
  });
});

describe('readCallback and a body that does not arrive', () => {
  afterEach(() => void vi.useRealTimers());
  const stalled = (error?: Error) =>
    new Request('https://shop.test/callbacks', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new ReadableStream({ pull: (controller) => (error ? controller.error(error) : new Promise(() => {})) }),
      duplex: 'half',
    } as RequestInit);

  it('cuts a body that stalls at its time limit: 408 body_timeout, the connection closed, told', async () => {
    vi.useFakeTimers();
    const errors: unknown[] = [];
    const read = readCallback(settingsFor({ onError: (e) => errors.push(e) }), stalled());
    await vi.advanceTimersByTimeAsync(10_000);
    const answer = (await read) as Response;
    expect(answer.status).toBe(408);
    expect(answer.headers.get('connection')).toBe('close');
    expect(errors).toMatchObject([{ code: 'body_timeout' }]);
  });

  it('lets any other failure of the body through to the adapter', async () => {
    await expect(readCallback(settingsFor(), stalled(new Error('socket reset')))).rejects.toThrow('socket reset');
  });
});

describe('callbackReceiver', () => {
  it('lists, records and answers 200, then hands the key on; a copy is a duplicate', async () => {
    const settings = settingsFor();
    const pending = pendingList(settings.store, settings.namespace, settings.recordTtlMs, settings.now);
    const received: string[] = [];
    const receive = callbackReceiver(settings, pending, holdsNone, (key) => received.push(key));
    expect(await (await receive(post(callbackBody()))).json()).toEqual({ received: true });
    expect(await (await receive(post(callbackBody()))).json()).toEqual({ received: true, duplicate: true });
    const key = `client-1:callback:${callbackBody().workflowExecution.id}:PROCESSED`;
    expect(received).toEqual([key, key]);
    expect((await pending.entries()).map((e) => e.key)).toEqual([key]);
    expect(JSON.parse((await settings.store.get(key))!)).toMatchObject({
      state: 'pending',
      attempts: 0,
      tagged: false,
    });
  });

  it('answers 503 store_unavailable with Retry-After when the store is away, and hands nothing on', async () => {
    const settings = settingsFor();
    const errors: unknown[] = [];
    settings.report = (e) => errors.push(e);
    const away = { ...settings.store, setIfAbsent: () => Promise.reject(new Error('store down')) };
    const pending = pendingList(away, settings.namespace, settings.recordTtlMs, settings.now);
    const received: string[] = [];
    const answer = await callbackReceiver({ ...settings, store: away }, pending, holdsNone, (key) =>
      received.push(key),
    )(post(callbackBody()));
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('5');
    expect(received).toEqual([]);
    expect(errors).toHaveLength(1);
  });
});

describe('callbackReceiver and statuses that are not final', () => {
  it.each(['ACQUIRED', 'INITIATED', 'SOME_NEW_STATUS'])(
    'answers %s 200, ignored: nothing recorded, nothing handed on, nothing told',
    async (status) => {
      const errors: unknown[] = [];
      const settings = settingsFor({ onError: (e) => errors.push(e) });
      const pending = pendingList(settings.store, settings.namespace, settings.recordTtlMs, settings.now);
      const received: string[] = [];
      const answer = await callbackReceiver(settings, pending, holdsNone, (key) => received.push(key))(
        post(callbackBody({ status })),
      );
      expect(answer.status).toBe(200);
      expect(await answer.json()).toEqual({ received: true, ignored: true });
      expect(received).toEqual([]);
      expect(await pending.entries()).toEqual([]);
      expect(errors).toEqual([]);
    },
  );
});

describe('callbackReceiver and a store that cannot record (no resend is documented)', () => {
  /** A store whose writes fail while `down` is true. */
  function flakyStore() {
    const settings = settingsFor();
    const real = settings.store;
    const state = { down: true };
    const gate =
      <A extends unknown[], R>(write: (...args: A) => Promise<R>) =>
      (...args: A) =>
        state.down ? Promise.reject(new Error('store down')) : write(...args);
    const store = {
      ...real,
      set: gate(real.set.bind(real)),
      setIfAbsent: gate(real.setIfAbsent.bind(real)),
      compareAndSet: gate(real.compareAndSet.bind(real)),
    };
    return { real, store, state };
  }

  function receiverOn(
    store: ReturnType<typeof flakyStore>['store'],
    onResult: (r: CallbackResult) => void | Promise<void>,
  ) {
    const errors: Array<{ code?: string }> = [];
    const settings = { ...settingsFor({ onResult, retryDelayMs: 1, maxRetryDelayMs: 2 }), store };
    settings.report = (e) => errors.push(e as { code?: string });
    const tasks = callbackTasks(settings.report);
    const pending = pendingList(store, settings.namespace, settings.recordTtlMs, settings.now);
    const received: string[] = [];
    const receive = callbackReceiver(settings, pending, unrecordedCallbacks(settings, tasks), (key) =>
      received.push(key),
    );
    return { receive, tasks, errors, received };
  }

  it('answers 503 and still delivers the decision from memory; a copy meanwhile is a duplicate', async () => {
    const { store, state, real } = flakyStore();
    const results: CallbackResult[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const { receive, tasks, errors, received } = receiverOn(store, (r) => {
      results.push(r);
      return held;
    });
    const answer = await receive(post(callbackBody()));
    expect(answer.status).toBe(503);
    expect(received).toEqual([]);
    expect(errors).toMatchObject([{}, { code: 'store_unavailable' }]);
    // A copy while the first is held in memory: a duplicate, not a second onResult.
    state.down = false;
    expect(await (await receive(post(callbackBody()))).json()).toEqual({ received: true, duplicate: true });
    release();
    await tasks.idle();
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ workflowExecutionId: EXECUTION, status: 'PROCESSED' });
    // Delivered: its record says done, so a copy recorded later calls nothing again.
    const key = `client-1:callback:${EXECUTION}:PROCESSED`;
    expect(JSON.parse((await real.get(key))!)).toMatchObject({ state: 'done' });
    expect(await (await receive(post(callbackBody()))).json()).toEqual({ received: true, duplicate: true });
  });

  it('retries the details read from memory with backoff, and writes done once the store is back', async () => {
    const { store, state, real } = flakyStore();
    let reads = 0;
    const results: CallbackResult[] = [];
    const settingsClient = stubClient({
      details: async () => {
        reads++;
        if (reads < 3) throw Object.assign(new Error('retrieval away'), { code: 'network_error' });
        return { status: 'PROCESSED' } as never;
      },
    });
    const errorsSeen: unknown[] = [];
    const settings = {
      ...settingsFor({
        client: settingsClient,
        onResult: (r) => void results.push(r),
        retryDelayMs: 1,
        maxRetryDelayMs: 2,
      }),
      store,
      report: (e: unknown) => void errorsSeen.push(e),
    };
    const ownTasks = callbackTasks(settings.report);
    const pending = pendingList(store, settings.namespace, settings.recordTtlMs, settings.now);
    const own = callbackReceiver(settings, pending, unrecordedCallbacks(settings, ownTasks), () => {});
    expect((await own(post(callbackBody()))).status).toBe(503);
    setTimeout(() => (state.down = false), 20);
    await ownTasks.idle();
    expect(reads).toBe(3);
    expect(results).toHaveLength(1);
    expect(JSON.parse((await real.get(`client-1:callback:${EXECUTION}:PROCESSED`))!)).toMatchObject({ state: 'done' });
    expect(errorsSeen.filter((e) => (e as Error).message === 'retrieval away')).toHaveLength(2);
  });

  it('gives up past retryForMs with result_undelivered, and lets go of the callback', async () => {
    const { store } = flakyStore();
    let now = 1_000;
    const errors: Array<{ code?: string }> = [];
    const settings = {
      ...settingsFor({
        client: stubClient({
          details: async () => {
            now += 10_000;
            throw new Error('retrieval away');
          },
        }),
        retryDelayMs: 1,
        maxRetryDelayMs: 1,
        retryForMs: 25_000,
        now: () => now,
      }),
      store,
      report: (e: unknown) => void errors.push(e as { code?: string }),
    };
    const tasks = callbackTasks(settings.report);
    const unrecorded = unrecordedCallbacks(settings, tasks);
    const pending = pendingList(store, settings.namespace, settings.recordTtlMs, settings.now);
    expect((await callbackReceiver(settings, pending, unrecorded, () => {})(post(callbackBody()))).status).toBe(503);
    await tasks.idle();
    expect(errors.at(-1)).toMatchObject({ code: 'result_undelivered' });
    expect(unrecorded.holds(`client-1:callback:${EXECUTION}:PROCESSED`)).toBe(false);
  });

  it('an execution the service does not know is told unknown_execution, not retried', async () => {
    const { store } = flakyStore();
    let reads = 0;
    const errors: Array<{ code?: string }> = [];
    const settings = {
      ...settingsFor({
        client: stubClient({
          details: async () => {
            reads++;
            throw Object.assign(new Error('404'), {
              name: 'DeviceRiskError',
              code: 'request_rejected',
              status: 404,
              operation: 'details',
            });
          },
        }),
      }),
      store,
      report: (e: unknown) => void errors.push(e as { code?: string }),
    };
    const tasks = callbackTasks(settings.report);
    const pending = pendingList(store, settings.namespace, settings.recordTtlMs, settings.now);
    await callbackReceiver(settings, pending, unrecordedCallbacks(settings, tasks), () => {})(post(callbackBody()));
    await tasks.idle();
    expect(reads).toBe(1);
    expect(errors.at(-1)).toMatchObject({ code: 'unknown_execution' });
  });

  it(`holds at most ${MAX_UNRECORDED} callbacks; past that the 503 stands alone`, async () => {
    const { store } = flakyStore();
    const settings = { ...settingsFor({ onResult: () => new Promise<void>(() => {}) }), store, report: () => {} };
    const tasks = callbackTasks(settings.report);
    const unrecorded = unrecordedCallbacks(settings, tasks);
    for (let i = 0; i < MAX_UNRECORDED; i++)
      expect(unrecorded.take(`k${i}`, { callback: callbackBody() } as never)).toBe(true);
    expect(unrecorded.take('one-more', { callback: callbackBody() } as never)).toBe(false);
    expect(unrecorded.holds('one-more')).toBe(false);
    await tasks.close();
  });
});
