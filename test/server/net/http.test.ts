// The kit's small shared pieces: JSON answers, body reading capped in size and in time (and
// the handlers that read through it), plain client addresses, and the reading of a workflow
// details answer.
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  BODY_TIMEOUT_MS,
  BodyTimeoutError,
  bodyTimedOut,
  isBodyTimeout,
  json,
  plainAddress,
  readCapped,
  readLimited,
  refuse,
} from '../../../src/server/net/http.js';
import { createCallbackHandler, createDeviceRiskHandler, type DeviceRiskClient } from '../../../src/server/index.js';
import { postOf, slowStream } from '../../support/slow-body.js';
import { FINAL_STATUSES, parseDetails } from '../../../src/server/api/result.js';

const IDS = { accountId: 'a-1', workflowExecutionId: 'w-1' };

afterEach(() => {
  vi.useRealTimers();
});

describe('http.ts', () => {
  it('json and refuse: JSON, never cached, extra headers kept', async () => {
    const answer = refuse(503, 'store_unavailable', 'later', { 'retry-after': '2' });
    expect(answer.status).toBe(503);
    expect(answer.headers.get('content-type')).toBe('application/json');
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.headers.get('retry-after')).toBe('2');
    expect(await answer.json()).toEqual({ error: { code: 'store_unavailable', message: 'later' } });
    expect(await json([1], 200).json()).toEqual([1]);
  });

  it('readCapped refuses by Content-Length before reading, and by counting when the header lies', async () => {
    // 10 bytes announced as 100: refused by the header alone.
    const announced = new Request('https://x.example/', {
      method: 'POST',
      body: 'x'.repeat(10),
      headers: { 'content-length': '100' },
    });
    expect(await readCapped(announced, 50)).toBeUndefined();
    expect(
      await readCapped(
        new Request('https://x.example/', {
          method: 'POST',
          body: 'x'.repeat(10),
          headers: { 'content-length': '10' },
        }),
        50,
      ),
    ).toHaveLength(10);
    const small = new Request('https://x.example/', { method: 'POST', body: 'x'.repeat(60) });
    expect(await readCapped(small, 50)).toBeUndefined();
    expect(
      await readCapped(new Request('https://x.example/', { method: 'POST', body: 'x'.repeat(50) }), 50),
    ).toHaveLength(50);
  });

  it('readCapped joins the chunks in order; a request without a body is empty', async () => {
    const chunks = ['ab', 'cd', 'ef'].map((s) => new TextEncoder().encode(s));
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        controller.close();
      },
    });
    expect(
      await readLimited(new Request('https://x.example/', { method: 'POST', body, duplex: 'half' } as RequestInit), 6),
    ).toBe('abcdef');
    const empty = await readCapped(new Request('https://x.example/'), 10);
    expect(empty).toBeInstanceOf(Uint8Array);
    expect(empty).toHaveLength(0);
  });

  it('readCapped gives up on a body that trickles in: BodyTimeoutError at its limit, the body cancelled', async () => {
    const slow = slowStream(20);
    const started = Date.now();
    const error = await readCapped(postOf('https://x.example/', slow.stream), 1024, 300).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BodyTimeoutError);
    expect(error).toMatchObject({ code: 'body_timeout', status: 408, timeoutMs: 300 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(slow.cancelled).toBe(true);
    // readLimited passes its limit on.
    const text = slowStream(20);
    await expect(readLimited(postOf('https://x.example/', text.stream), 1024, 100)).rejects.toBeInstanceOf(
      BodyTimeoutError,
    );
    expect(text.cancelled).toBe(true);
  });

  it('readCapped gives up on a body that never sends a byte, and when its signal aborts', async () => {
    let cancelled: unknown;
    const stalled = new ReadableStream<Uint8Array>({ cancel: (reason) => void (cancelled = reason) });
    await expect(readCapped(postOf('https://x.example/', stalled), 10, 50)).rejects.toBeInstanceOf(BodyTimeoutError);
    expect(cancelled).toBeInstanceOf(BodyTimeoutError);
    const controller = new AbortController();
    const reading = readCapped(postOf('https://x.example/', new ReadableStream()), 10, 60_000, controller.signal);
    controller.abort(new Error('gone'));
    await expect(reading).rejects.toThrow('gone');
    const aborted = AbortSignal.abort(new Error('before'));
    await expect(readCapped(postOf('https://x.example/', new ReadableStream()), 10, 60_000, aborted)).rejects.toThrow(
      'before',
    );
  });

  it('BodyTimeoutError: typed, recognised across copies of the kit, answered 408 with the connection closed', async () => {
    const error = new BodyTimeoutError(250);
    expect(error).toMatchObject({ name: 'BodyTimeoutError', code: 'body_timeout', status: 408, timeoutMs: 250 });
    expect(error.message).toBe('[blackbox-capture/server] the request body did not arrive within 250 ms');
    expect(isBodyTimeout(error)).toBe(true);
    // Another bundle's class: the same name and code.
    expect(isBodyTimeout(Object.assign(new Error('x'), { name: 'BodyTimeoutError', code: 'body_timeout' }))).toBe(true);
    expect(isBodyTimeout(Object.assign(new Error('x'), { name: 'BodyTimeoutError', code: 'other' }))).toBe(false);
    expect(isBodyTimeout(Object.assign(new Error('x'), { name: 'Error', code: 'body_timeout' }))).toBe(false);
    expect(isBodyTimeout({ name: 'BodyTimeoutError', code: 'body_timeout' })).toBe(false);
    const answer = bodyTimedOut(error);
    expect(answer.status).toBe(408);
    expect(answer.headers.get('connection')).toBe('close');
    expect(await answer.json()).toEqual({
      error: { code: 'body_timeout', message: 'The body did not arrive within 250 ms' },
    });
  });

  it('a body of exactly the limit, announced so, is read; a time limit past what setTimeout takes does not fire at once', async () => {
    const exact = new Request('https://x.example/', {
      method: 'POST',
      body: 'x'.repeat(50),
      headers: { 'content-length': '50' },
    });
    expect(await readCapped(exact, 50)).toHaveLength(50);
    const later = new ReadableStream<Uint8Array>({
      start(controller) {
        setTimeout(() => {
          controller.enqueue(new Uint8Array([1]));
          controller.close();
        }, 30);
      },
    });
    expect(await readCapped(postOf('https://x.example/', later), 10, 2 ** 40)).toEqual(new Uint8Array([1]));
  });

  it('readCapped leaves no listener on its signal once the body is read', async () => {
    const controller = new AbortController();
    await readCapped(new Request('https://x.example/', { method: 'POST', body: 'ok' }), 10, 1000, controller.signal);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('a body that arrives in time is read whole, and leaves no timer behind', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    expect(await readLimited(new Request('https://x.example/', { method: 'POST', body: '{"a":1}' }), 100, 50)).toBe(
      '{"a":1}',
    );
    expect(vi.getTimerCount()).toBe(0);
  });

  it.each([
    ['::ffff:10.20.30.40', '10.20.30.40'],
    ['::FFFF:192.0.2.1', '192.0.2.1'],
    ['192.0.2.1', '192.0.2.1'],
    ['::1', '::1'],
    ['2001:db8::ffff:10.20.30.40', '2001:db8::ffff:10.20.30.40'],
    ['::ffff:10.20.30.40.50', '::ffff:10.20.30.40.50'],
    ['::ffff:10.20.30', '::ffff:10.20.30'],
    ['::ffff:a.b.c.d', '::ffff:a.b.c.d'],
  ])('plainAddress(%s) is %s', (address, plain) => {
    expect(plainAddress(address)).toBe(plain);
  });
});

describe('parseDetails', () => {
  it('the final statuses are exactly the three after which nothing changes', () => {
    expect(FINAL_STATUSES).toEqual(['PROCESSED', 'SESSION_EXPIRED', 'TOKEN_EXPIRED']);
  });

  it.each([
    ['no object', null, /workflow object/],
    ['an array', [{ workflow: { status: 'PROCESSED' } }], /workflow object/],
    ['a workflow that is a string', { workflow: 'PROCESSED' }, /workflow object/],
    ['a workflow that is null', { workflow: null }, /workflow object/],
    ['no status', { workflow: {} }, /workflow\.status/],
    ['an empty status', { workflow: { status: '' } }, /workflow\.status/],
    ['a status that is a number', { workflow: { status: 3 } }, /workflow\.status/],
  ])('%s is invalid_response', (_, body, message) => {
    expect(() => parseDetails(body, IDS)).toThrow(
      expect.objectContaining({
        code: 'invalid_response',
        operation: 'details',
        message: expect.stringMatching(message),
      }),
    );
  });

  it('reads the documented shape', () => {
    const body = {
      workflow: { status: 'PROCESSED' },
      decision: { type: 'WARNING', details: { label: 'SUSPICIOUS' }, risk: { score: 55 } },
      capabilities: {
        deviceRiskVerification: [
          'not an object',
          {
            decision: { type: 'REJECTED', details: { label: 'HIGH_RISK' } },
            data: { deviceAlerts: ['IP Mismatch', 7, 'Global'], browser: 'Chrome', trueIP: '198.51.100.1' },
          },
        ],
      },
    };
    expect(parseDetails(body, IDS)).toEqual({
      ...IDS,
      status: 'PROCESSED',
      decision: { type: 'WARNING', label: 'SUSPICIOUS', score: 55 },
      deviceRisk: {
        decision: { type: 'REJECTED', label: 'HIGH_RISK' },
        alerts: ['IP Mismatch', 'Global'],
        device: { browser: 'Chrome', trueIP: '198.51.100.1' },
      },
      raw: body,
    });
  });

  it('whatever is missing or of another type reads as NOT_EXECUTED, an empty label, no score, no alerts', () => {
    const body = {
      workflow: { status: 'PROCESSED' },
      decision: { type: 5, details: 'OK', risk: { score: '55' } },
      capabilities: {
        deviceRiskVerification: [
          { decision: { type: ['PASSED'], details: { label: 3 } }, data: { deviceAlerts: 'IP Mismatch' } },
        ],
      },
    };
    expect(parseDetails(body, IDS)).toEqual({
      ...IDS,
      status: 'PROCESSED',
      decision: { type: 'NOT_EXECUTED', label: '' },
      deviceRisk: { decision: { type: 'NOT_EXECUTED', label: '' }, alerts: [], device: {} },
      raw: body,
    });
    const bare = parseDetails(
      {
        workflow: { status: 'PROCESSED' },
        decision: 'PASSED',
        capabilities: { deviceRiskVerification: [{ decision: 'PASSED', data: ['x'] }] },
      },
      IDS,
    );
    expect(bare.decision).toEqual({ type: 'NOT_EXECUTED', label: '' });
    expect(bare.deviceRisk).toEqual({ decision: { type: 'NOT_EXECUTED', label: '' }, alerts: [], device: {} });
    const decisionWithoutDetails = parseDetails(
      {
        workflow: { status: 'PROCESSED' },
        capabilities: { deviceRiskVerification: [{ decision: { type: 'PASSED' }, data: { deviceAlerts: ['a'] } }] },
      },
      IDS,
    );
    expect(decisionWithoutDetails.deviceRisk).toEqual({
      decision: { type: 'PASSED', label: '' },
      alerts: ['a'],
      device: {},
    });
  });

  it('no Device Risk capability: deviceRisk is undefined', () => {
    for (const capabilities of [
      undefined,
      'x',
      { deviceRiskVerification: {} },
      { deviceRiskVerification: ['x', 3] },
      { deviceRiskVerification: [] },
    ]) {
      expect(parseDetails({ workflow: { status: 'INITIATED' }, capabilities }, IDS).deviceRisk).toBeUndefined();
    }
  });
});

describe('the endpoint and the callback receiver read their bodies within BODY_TIMEOUT_MS', () => {
  const stalled = () => new ReadableStream<Uint8Array>();
  const cut = async (answer: Promise<Response>) => {
    const outcome = answer.then(
      (response: Response) => response,
      (error: unknown) => error,
    );
    await vi.advanceTimersByTimeAsync(BODY_TIMEOUT_MS - 1);
    const early = await Promise.race([outcome, Promise.resolve('waiting')]);
    await vi.advanceTimersByTimeAsync(1);
    return { early, late: await outcome };
  };
  /** Cut: the handler's own 408 body_timeout (as a fetch-style framework gets it), said to onError. */
  const isCut = async (late: unknown) =>
    late instanceof Response &&
    late.status === 408 &&
    late.headers.get('connection') === 'close' &&
    ((await late.json()) as { error: { code: string } }).error.code === 'body_timeout';

  it('createDeviceRiskHandler', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const handler = createDeviceRiskHandler({
      answer: 'checked',
      client: {} as DeviceRiskClient,
      allowedOrigins: ['https://shop.example'],
      resolveCustomer: () => ({ customerInternalReference: 'order-1' }),
      onError: (error) => void told.push(error),
    });
    const told: unknown[] = [];
    const { early, late } = await cut(
      Promise.resolve(handler(postOf('https://shop.example/blackbox', stalled(), { origin: 'https://shop.example' }))),
    );
    expect(early).toBe('waiting');
    expect(await isCut(late)).toBe(true);
    expect(told).toEqual([expect.any(BodyTimeoutError)]);
  });

  it('createCallbackHandler', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const handler = createCallbackHandler({
      client: { retrievalOrigin: 'https://retrieval.test', clientId: 'c' } as DeviceRiskClient,
      allowedSources: 'any',
      onResult: () => {},
      onError: (error) => void told.push(error),
    });
    const told: unknown[] = [];
    const { early, late } = await cut(Promise.resolve(handler(postOf('https://shop.test/callbacks', stalled()))));
    expect(early).toBe('waiting');
    expect(await isCut(late)).toBe(true);
    expect(told).toEqual([expect.any(BodyTimeoutError)]);
  });
});
