// The callback receiver's answers and checks, pinned one by one on a stub client: the
// documented body shape, each refusal's status and code, and the retry schedule.
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createCallbackHandler,
  createMemoryStore,
  type CallbackHandlerOptions,
  type CallbackResult,
  type DeviceRiskClient,
  type Store,
} from '../src/server/index.js';

const RETRIEVAL = 'https://retrieval.test';
const ACCOUNT = '11111111-2222-4333-8444-555555555555';
const EXECUTION = '66666666-7777-4888-9999-aaaaaaaaaaaa';
afterEach(() => {
  vi.useRealTimers();
});

const body = (
  changes: Record<string, unknown> = {},
  execution: Record<string, unknown> = {},
  account: Record<string, unknown> = {},
) => ({
  callbackSentAt: '2026-11-23T10:00:00.000Z',
  userReference: 'user-1',
  workflowExecution: {
    id: EXECUTION,
    href: `${RETRIEVAL}/api/v1/accounts/${ACCOUNT}/workflow-executions/${EXECUTION}`,
    definitionKey: 10020,
    status: 'PROCESSED',
    ...execution,
  },
  account: { id: ACCOUNT, href: `${RETRIEVAL}/api/v1/accounts/${ACCOUNT}`, ...account },
  ...changes,
});

function receiver(extra: Partial<CallbackHandlerOptions> = {}) {
  const results: CallbackResult[] = [];
  const details: string[] = [];
  const client = {
    retrievalOrigin: RETRIEVAL,
    clientId: 'client-1',
    details: async (ids: { workflowExecutionId: string }) => {
      details.push(ids.workflowExecutionId);
      return { status: 'PROCESSED' };
    },
  } as unknown as DeviceRiskClient;
  const handler = createCallbackHandler({
    client,
    allowedSources: 'any',
    onResult: (r) => void results.push(r),
    ...extra,
  });
  return { handler, results, details };
}

const send = (payload: unknown, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  new Request('https://shop.test/callbacks', {
    method: 'POST',
    headers,
    body: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });
const codeOf = async (response: Response) =>
  ((await response.clone().json()) as { error: { code: string; message: string } }).error;

describe('the documented callback body', () => {
  it.each([
    ['null', null],
    ['an array', [body()]],
    ['a JSON string', '"text"'],
    ['no callbackSentAt', body({ callbackSentAt: undefined })],
    ['a callbackSentAt that is no date', body({ callbackSentAt: 'yesterday' })],
    ['a userReference that is a number', body({ userReference: 5 })],
    ['no workflowExecution', body({ workflowExecution: undefined })],
    ['an execution id that is a number', body({}, { id: 5 })],
    ['an execution id that is no UUID', body({}, { id: 'x' + EXECUTION })],
    ['an execution id with a tail', body({}, { id: EXECUTION + '0' })],
    ['no account', body({ account: undefined })],
    ['an account id that is a number', body({}, {}, { id: 7 })],
    ['an account id that is no UUID', body({}, {}, { id: 'acc' })],
    ['a status that is not final', body({}, { status: 'INITIATED' })],
    ['no definitionKey', body({}, { definitionKey: undefined })],
    ['a definitionKey that is an object', body({}, { definitionKey: {} })],
    [
      'an execution href off the retrieval host',
      body({}, { href: `https://evil.test/api/v1/accounts/${ACCOUNT}/workflow-executions/${EXECUTION}` }),
    ],
    [
      'an execution href of another execution',
      body({}, { href: `${RETRIEVAL}/api/v1/accounts/${ACCOUNT}/workflow-executions/${ACCOUNT}` }),
    ],
    ['an execution href that is no URL', body({}, { href: 'not a url' })],
    ['an execution href that is a number', body({}, { href: 5 })],
    [
      'an execution href with a query',
      body({}, { href: `${RETRIEVAL}/api/v1/accounts/${ACCOUNT}/workflow-executions/${EXECUTION}?x=1` }),
    ],
    [
      'an execution href with credentials',
      body({}, { href: `https://u:p@retrieval.test/api/v1/accounts/${ACCOUNT}/workflow-executions/${EXECUTION}` }),
    ],
    ['an account href of another account', body({}, {}, { href: `${RETRIEVAL}/api/v1/accounts/${EXECUTION}` })],
    ['an account href off the retrieval host', body({}, {}, { href: `https://evil.test/api/v1/accounts/${ACCOUNT}` })],
  ])('%s is 400 invalid_callback, its message without the package prefix; nothing is called', async (_, payload) => {
    const { handler, results } = receiver();
    const response = await handler(send(payload));
    expect(response.status).toBe(400);
    const error = await codeOf(response);
    expect(error.code).toBe('invalid_callback');
    expect(error.message).toMatch(/^the callback /);
    await handler.idle();
    expect(results).toEqual([]);
  });

  it('a body that is not JSON is 400 invalid_callback', async () => {
    const response = await receiver().handler(send('{nope'));
    expect([response.status, (await codeOf(response)).code]).toEqual([400, 'invalid_callback']);
  });

  it.each([
    ['no userReference', body({ userReference: undefined })],
    ['a string definitionKey', body({}, { definitionKey: 'kyx' })],
    [
      'upper-case UUIDs',
      body(
        {},
        {
          id: EXECUTION.toUpperCase(),
          href: `${RETRIEVAL}/api/v1/accounts/${ACCOUNT}/workflow-executions/${EXECUTION.toUpperCase()}`,
        },
      ),
    ],
  ])('accepts %s', async (_, payload) => {
    const { handler, results } = receiver();
    expect((await handler(send(payload))).status).toBe(200);
    await handler.idle();
    expect(results).toHaveLength(1);
  });

  it.each(['SESSION_EXPIRED', 'TOKEN_EXPIRED'])(
    '%s is told without reading details (there are none)',
    async (status) => {
      const { handler, results, details } = receiver();
      expect((await handler(send(body({}, { status })))).status).toBe(200);
      await handler.idle();
      expect(details).toEqual([]);
      expect(results).toEqual([
        expect.objectContaining({ status, accountId: ACCOUNT, workflowExecutionId: EXECUTION }),
      ]);
      expect(results[0]).not.toHaveProperty('details');
    },
  );
});

describe('refusals before the body', () => {
  it('a GET is 405 method_not_allowed naming POST', async () => {
    const response = await receiver().handler(new Request('https://shop.test/callbacks'));
    expect([response.status, (await codeOf(response)).code, response.headers.get('allow')]).toEqual([
      405,
      'method_not_allowed',
      'POST',
    ]);
  });

  it('a source the rule refuses is 403 source_not_allowed; a function rule gets the request and context', async () => {
    const seen: unknown[] = [];
    const { handler } = receiver({
      allowedSources: (request, context) => {
        seen.push(request.method, context?.clientAddress);
        return false;
      },
    });
    const response = await handler(send(body()), { clientAddress: '192.0.2.1' });
    expect([response.status, (await codeOf(response)).code]).toEqual([403, 'source_not_allowed']);
    expect(seen).toEqual(['POST', '192.0.2.1']);
  });

  it('an address list without a known client address refuses', async () => {
    const { handler } = receiver({ allowedSources: ['192.0.2.1'] });
    expect((await handler(send(body()))).status).toBe(403);
    expect((await handler(send(body()), {})).status).toBe(403);
  });

  it.each([
    ['no content type', {}],
    ['text/plain', { 'content-type': 'text/plain' }],
    ['a type that only contains json in a word', { 'content-type': 'application/jsonx' }],
  ])('%s is 415 unsupported_media_type', async (_, headers) => {
    const response = await receiver().handler(send(body(), headers));
    expect([response.status, (await codeOf(response)).code]).toEqual([415, 'unsupported_media_type']);
  });

  it('application/vnd.api+json is JSON too', async () => {
    expect((await receiver().handler(send(body(), { 'content-type': 'application/vnd.api+json' }))).status).toBe(200);
  });

  it('a body over maxBodyBytes is 413 body_too_large; the default is 16 KB', async () => {
    const small = await receiver({ maxBodyBytes: 100 }).handler(send(body()));
    expect([small.status, (await codeOf(small)).code]).toEqual([413, 'body_too_large']);
    const padded = body({ padding: 'x'.repeat(16 * 1024) });
    expect((await receiver().handler(send(padded))).status).toBe(413);
    expect((await receiver().handler(send(body({ padding: 'x'.repeat(15 * 1024) })))).status).toBe(200);
  });

  it('a store that cannot record is 503 store_unavailable with Retry-After 5, told to onError', async () => {
    const failing = { ...createMemoryStore(), setIfAbsent: async () => Promise.reject(new Error('down')) } as Store;
    const errors: unknown[] = [];
    const response = await receiver({ store: failing, onError: (e) => errors.push(e) }).handler(send(body()));
    expect([response.status, (await codeOf(response)).code, response.headers.get('retry-after')]).toEqual([
      503,
      'store_unavailable',
      '5',
    ]);
    expect(errors).toHaveLength(1);
    expect((await receiver({ store: failing }).handler(send(body()))).status).toBe(503);
  });

  it('needs onResult and allowedSources', () => {
    const client = { retrievalOrigin: RETRIEVAL, clientId: 'c' } as unknown as DeviceRiskClient;
    expect(() => createCallbackHandler({ client, allowedSources: 'any' } as never)).toThrow(
      expect.objectContaining({ code: 'invalid_configuration' }),
    );
    expect(() => createCallbackHandler({ client, onResult: () => {} } as never)).toThrow(
      expect.objectContaining({ code: 'invalid_configuration' }),
    );
  });
});

describe('retries of a failing onResult', () => {
  it('wait retryDelayMs, doubling, capped at maxRetryDelayMs; each failure told to onError; the attempts are kept in the store', async () => {
    vi.useFakeTimers();
    const store = createMemoryStore();
    let failures = 4;
    const calls: number[] = [];
    const errors: unknown[] = [];
    const { handler } = receiver({
      store,
      retryDelayMs: 100,
      maxRetryDelayMs: 300,
      onError: (e) => errors.push(e),
      onResult: () => {
        calls.push(Date.now());
        if (failures-- > 0) throw new Error('busy');
      },
    });
    const started = Date.now();
    await handler(send(body()));
    await vi.advanceTimersByTimeAsync(0);
    for (const [step, expected] of [
      [99, 1],
      [1, 2],
      [199, 2],
      [1, 3],
      [299, 3],
      [1, 4],
      [299, 4],
      [1, 5],
    ] as const) {
      await vi.advanceTimersByTimeAsync(step);
      expect(calls.length, `at ${Date.now() - started} ms`).toBe(expected);
    }
    expect(calls.map((t) => t - started)).toEqual([0, 100, 300, 600, 900]);
    expect(errors).toHaveLength(4);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls).toHaveLength(5);
    handler.close();
  });

  it('a retry that a store failure cannot record is still made, and the store failure is told too', async () => {
    vi.useFakeTimers();
    const inner = createMemoryStore();
    let failSets = false;
    const store: Store = {
      ...inner,
      set: async (...args) => (failSets ? Promise.reject(new Error('store down')) : inner.set(...args)),
    };
    let failures = 1;
    const errors: unknown[] = [];
    const calls: number[] = [];
    const { handler } = receiver({
      store,
      retryDelayMs: 50,
      onError: (e) => errors.push(e),
      onResult: () => {
        calls.push(Date.now());
        if (failures-- > 0) {
          failSets = true;
          throw new Error('busy');
        }
        failSets = false;
      },
    });
    await handler(send(body()));
    await vi.advanceTimersByTimeAsync(60);
    expect(calls).toHaveLength(2);
    expect(errors.map((e) => (e as Error).message)).toEqual(['busy', 'store down']);
    handler.close();
  });

  it('close() stops the retries waiting', async () => {
    vi.useFakeTimers();
    const calls: number[] = [];
    const { handler } = receiver({
      retryDelayMs: 50,
      onResult: () => {
        calls.push(1);
        throw new Error('busy');
      },
      onError: () => {},
    });
    await handler(send(body()));
    await vi.advanceTimersByTimeAsync(0);
    handler.close();
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toHaveLength(1);
  });

  it('after close() a failure schedules nothing more', async () => {
    vi.useFakeTimers();
    const calls: number[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { handler } = receiver({
      retryDelayMs: 50,
      onResult: async () => {
        calls.push(1);
        await gate;
        throw new Error('busy');
      },
      onError: () => {},
    });
    await handler(send(body()));
    await vi.advanceTimersByTimeAsync(0);
    handler.close();
    release();
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toHaveLength(1);
  });

  it('a duplicate while the first is handled says so, and calls nothing again', async () => {
    const { handler, results } = receiver();
    const first = await handler(send(body()));
    const second = await handler(send(body()));
    expect(await first.json()).toEqual({ received: true });
    expect(await second.json()).toEqual({ received: true, duplicate: true });
    await handler.idle();
    expect(results).toHaveLength(1);
  });

  it('callbacks of two clients on one store are kept apart', async () => {
    const store = createMemoryStore();
    const a = receiver({ store });
    const other = {
      retrievalOrigin: RETRIEVAL,
      clientId: 'client-2',
      details: async () => ({}),
    } as unknown as DeviceRiskClient;
    const results: unknown[] = [];
    const b = createCallbackHandler({
      client: other,
      allowedSources: 'any',
      store,
      onResult: (r) => void results.push(r),
    });
    await a.handler(send(body()));
    expect(await (await b(send(body()))).json()).toEqual({ received: true });
    await a.handler.idle();
    await b.idle();
    expect([a.results.length, results.length]).toEqual([1, 1]);
  });
});

describe('callback ids compare as UUIDs: case-insensitively', () => {
  it('the same execution in upper case is a duplicate: onResult is called once', async () => {
    const { handler, results } = receiver();
    const upper = (id: string) => id.toUpperCase();
    const loud = body(
      {},
      {
        id: upper(EXECUTION),
        href: `${RETRIEVAL}/api/v1/accounts/${upper(ACCOUNT)}/workflow-executions/${upper(EXECUTION)}`,
      },
      { id: upper(ACCOUNT), href: `${RETRIEVAL}/api/v1/accounts/${upper(ACCOUNT)}` },
    );
    expect(await (await handler(send(body()))).json()).toEqual({ received: true });
    expect(await (await handler(send(loud))).json()).toEqual({ received: true, duplicate: true });
    await handler.idle();
    expect(results).toHaveLength(1);
  });
});
