// Receiving a callback over HTTP, alone: the checks before any write, and the record with its
// pending entry once they pass.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pendingList } from '../../../src/server/callbacks/pending.js';
import { callbackReceiver, readCallback } from '../../../src/server/callbacks/receive.js';
import { callbackTasks } from '../../../src/server/callbacks/tasks.js';
import { MAX_UNRECORDED, unrecordedCallbacks } from '../../../src/server/callbacks/unrecorded.js';
import type { CallbackHandlerOptions, CallbackResult } from '../../../src/server/callbacks/types.js';
import { ACCOUNT, callbackBody, EXECUTION, settingsFor, stubClient } from '../../support/callbacks.js';

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
    const key = `client-1:callback:${callbackBody().workflowExecution.id}:PROCESSED:${callbackBody().account.id}`;
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
  const KEY = `client-1:callback:${EXECUTION}:PROCESSED:${ACCOUNT}`;

  /** A store whose writes fail while `down` is true. */
  function flakyStore() {
    const real = settingsFor().store;
    /** `upAfter`: the store comes back by itself after that many refused writes. */
    const state = { down: true, refused: 0, upAfter: Infinity };
    const gate =
      <A extends unknown[], R>(write: (...args: A) => Promise<R>) =>
      (...args: A) => {
        if (state.down && ++state.refused > state.upAfter) state.down = false;
        return state.down ? Promise.reject(new Error('store down')) : write(...args);
      };
    const store = {
      ...real,
      set: gate(real.set.bind(real)),
      setIfAbsent: gate(real.setIfAbsent.bind(real)),
      compareAndSet: gate(real.compareAndSet.bind(real)),
    };
    return { real, store, state };
  }

  /** The receiver and its unrecorded callbacks on `store`, as the handler puts them together. */
  function receiverOn(store: ReturnType<typeof flakyStore>['store'], options: Partial<CallbackHandlerOptions> = {}) {
    const errors: Array<{ code?: string; message?: string }> = [];
    const settings = {
      ...settingsFor({ retryDelayMs: 1, maxRetryDelayMs: 2, ...options }),
      store,
      report: (e: unknown) => void errors.push(e as never),
    };
    const tasks = callbackTasks(settings.report);
    const pending = pendingList(store, settings.namespace, settings.recordTtlMs, settings.now);
    const received: string[] = [];
    const hand = (key: string) => void received.push(key);
    const unrecorded = unrecordedCallbacks(settings, tasks, pending, hand);
    return {
      receive: callbackReceiver(settings, pending, unrecorded, hand),
      unrecorded,
      tasks,
      errors,
      received,
      pending,
    };
  }

  it('answers 503, keeps the callback and records it once the store is back: handed on once, as if on arrival', async () => {
    const { store, state, real } = flakyStore();
    const { receive, tasks, errors, received, pending, unrecorded } = receiverOn(store);
    const answer = await receive(post(callbackBody()));
    expect(answer.status).toBe(503);
    expect(errors).toMatchObject([{ code: 'store_unavailable' }, { code: 'store_unavailable' }]);
    expect(unrecorded.holds(KEY)).toBe(true);
    // A copy while this instance holds it: a duplicate, never a second record.
    expect(await (await receive(post(callbackBody()))).json()).toEqual({ received: true, duplicate: true });
    state.down = false;
    await tasks.idle();
    expect(received).toEqual([KEY]);
    expect(JSON.parse((await real.get(KEY))!)).toMatchObject({ state: 'pending' });
    expect((await pending.entries()).map((e) => e.key)).toEqual([KEY]);
    expect(unrecorded.holds(KEY)).toBe(false);
  });

  it('a store away for several tries but back within the lease: recorded and handed on, nothing told from memory', async () => {
    const { store, state, real } = flakyStore();
    const results: CallbackResult[] = [];
    const { receive, tasks, received } = receiverOn(store, { leaseMs: 60_000, onResult: (r) => void results.push(r) });
    // The arrival's two writes and four retries refused, then the store takes the record.
    state.upAfter = 6;
    expect((await receive(post(callbackBody()))).status).toBe(503);
    await tasks.idle();
    expect(received).toEqual([KEY]);
    expect(results).toEqual([]);
    expect(JSON.parse((await real.get(KEY))!)).toMatchObject({ state: 'pending' });
  });

  it('the done record written after delivery waits for the store too', async () => {
    const { store, state, real } = flakyStore();
    const results: CallbackResult[] = [];
    const { receive, tasks } = receiverOn(store, {
      leaseMs: 0,
      onResult: (r) => {
        results.push(r);
        // Still away for the first writes of `done`: it is tried again until the store takes it.
        state.upAfter = state.refused + 3;
      },
    });
    expect((await receive(post(callbackBody()))).status).toBe(503);
    await tasks.idle();
    expect(results).toHaveLength(1);
    expect(JSON.parse((await real.get(KEY))!)).toMatchObject({ state: 'done' });
  });

  it('a copy recorded elsewhere meanwhile wins: this instance hands nothing on', async () => {
    const { store, state, real } = flakyStore();
    const results: CallbackResult[] = [];
    const { receive, tasks, received } = receiverOn(store, { onResult: (r) => void results.push(r) });
    expect((await receive(post(callbackBody()))).status).toBe(503);
    await real.set(KEY, JSON.stringify({ state: 'pending' }), 60_000);
    state.down = false;
    await tasks.idle();
    expect(received).toEqual([]);
    expect(results).toEqual([]);
  });

  it('past a lease of the store away: delivered from memory, the read retried, done written once the store is back', async () => {
    const { store, state, real } = flakyStore();
    let reads = 0;
    const results: CallbackResult[] = [];
    const { receive, tasks, errors, received } = receiverOn(store, {
      leaseMs: 1,
      onResult: (r) => void results.push(r),
      client: stubClient({
        details: async () => {
          reads++;
          if (reads < 3) throw new Error('retrieval away');
          state.down = false;
          return { status: 'PROCESSED' } as never;
        },
      }),
    });
    expect((await receive(post(callbackBody()))).status).toBe(503);
    await tasks.idle();
    expect(reads).toBe(3);
    expect(results).toHaveLength(1);
    expect(received).toEqual([]);
    expect(JSON.parse((await real.get(KEY))!)).toMatchObject({ state: 'done' });
    expect(errors.filter((e) => e.message === 'retrieval away')).toHaveLength(2);
  });

  it('past a lease of the store away: delivered from memory without the order it cannot read, rather than not at all', async () => {
    const { store: writesRefused, state, real } = flakyStore();
    // Its reads of the order refused too while it is down.
    const store = {
      ...writesRefused,
      get: (key: string) =>
        state.down && key.includes(':order:') ? Promise.reject(new Error('store down')) : real.get(key),
    };
    const results: CallbackResult[] = [];
    // The checks' memory of orders (told.ts) on it too.
    const { receive, tasks } = receiverOn(store, {
      store,
      leaseMs: 1,
      onResult: (r) => {
        results.push(r);
        state.down = false;
      },
      client: stubClient({ details: async () => ({ status: 'PROCESSED' }) as never }),
    });
    expect((await receive(post(callbackBody()))).status).toBe(503);
    await tasks.idle();
    expect(results).toHaveLength(1);
    expect(results[0]!.customerInternalReference).toBeUndefined();
    expect(JSON.parse((await real.get(KEY))!)).toMatchObject({ state: 'done' });
  });

  it('gives up past retryForMs with result_undelivered, and lets go of the callback', async () => {
    const { store } = flakyStore();
    let now = 1_000;
    let reads = 0;
    const { receive, tasks, errors, unrecorded } = receiverOn(store, {
      leaseMs: 0,
      retryForMs: 20_000,
      now: () => now,
      client: stubClient({
        details: async () => {
          reads++;
          now += 10_000;
          throw new Error('retrieval away');
        },
      }),
    });
    expect((await receive(post(callbackBody()))).status).toBe(503);
    await tasks.idle();
    // Received at 1 s: reads at 1 s and 11 s; at 21 s exactly retryForMs has passed.
    expect(reads).toBe(2);
    expect(errors.at(-1)).toMatchObject({ code: 'result_undelivered' });
    expect(errors.at(-1)!.message).toContain('failed for 2 attempts');
    expect(unrecorded.holds(KEY)).toBe(false);
  });

  it('an execution the service does not know is told unknown_execution, not retried', async () => {
    const { store } = flakyStore();
    let reads = 0;
    const notFound = Object.assign(new Error('404'), {
      name: 'DeviceRiskError',
      code: 'request_rejected',
      status: 404,
      operation: 'details',
    });
    const { receive, tasks, errors } = receiverOn(store, {
      leaseMs: 0,
      client: stubClient({
        details: async () => {
          reads++;
          throw notFound;
        },
      }),
    });
    await receive(post(callbackBody()));
    await tasks.idle();
    expect(reads).toBe(1);
    expect(errors.at(-1)).toMatchObject({ code: 'unknown_execution', status: 404, operation: 'callback' });
  });

  it(`holds at most ${MAX_UNRECORDED} callbacks; past that the 503 stands alone`, async () => {
    const { store } = flakyStore();
    const { unrecorded, tasks } = receiverOn(store);
    const record = { callback: callbackBody() } as never;
    for (let i = 0; i < MAX_UNRECORDED; i++) expect(unrecorded.take(`k${i}`, record)).toBe(true);
    expect(unrecorded.take('one-more', record)).toBe(false);
    expect(unrecorded.holds('one-more')).toBe(false);
    await tasks.close();
  });
});
