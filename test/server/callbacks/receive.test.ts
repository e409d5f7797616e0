// Receiving a callback over HTTP, alone: the checks before any write, and the record with its
// pending entry once they pass.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pendingList } from '../../../src/server/callbacks/pending.js';
import { callbackReceiver, readCallback } from '../../../src/server/callbacks/receive.js';
import { callbackBody, settingsFor, stubClient } from '../../support/callbacks.js';

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
    const receive = callbackReceiver(settings, pending, (key) => received.push(key));
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
    const answer = await callbackReceiver({ ...settings, store: away }, pending, (key) => received.push(key))(
      post(callbackBody()),
    );
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('5');
    expect(received).toEqual([]);
    expect(errors).toHaveLength(1);
  });
});
