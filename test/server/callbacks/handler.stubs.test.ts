// The callback receiver's answers and checks, pinned one by one on a stub client: the
// documented body shape, each refusal's status and code, and the retry schedule.
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createCallbackHandler,
  createMemoryStore,
  type CallbackHandlerOptions,
  type CallbackResult,
  type DeviceRiskClient,
  DeviceRiskError,
  type Store,
} from '../../../src/server/index.js';
import { pendingList } from '../../../src/server/callbacks/pending.js';
import { ACCOUNT, callbackBody, EXECUTION, RETRIEVAL } from '../../support/callbacks.js';

afterEach(() => {
  vi.useRealTimers();
});

/** callbackBody with `changes` over it, `execution` over its workflowExecution and `account` over its account. */
const body = (
  changes: Record<string, unknown> = {},
  execution: Record<string, unknown> = {},
  account: Record<string, unknown> = {},
) => {
  const documented = callbackBody(execution);
  return { ...documented, account: { ...documented.account, ...account }, ...changes };
};

/** The callback of execution `id` of ACCOUNT. */
const bodyOf = (id: string, extra: Record<string, unknown> = {}, status = 'PROCESSED') =>
  body(extra, { id, status, href: `${RETRIEVAL}/api/v1/accounts/${ACCOUNT}/workflow-executions/${id}` });

/** A memory store that can list the keys it holds (for checking what a flood leaves behind). */
function listingStore(): Store & { live: () => Promise<string[]> } {
  const memory = createMemoryStore();
  const seen = new Set<string>();
  const note =
    <A extends [string, ...unknown[]], R>(call: (...args: A) => R) =>
    (...args: A): R => {
      seen.add(args[0]);
      return call(...args);
    };
  return {
    ...memory,
    set: note(memory.set),
    setIfAbsent: note(memory.setIfAbsent),
    compareAndSet: note(memory.compareAndSet),
    live: async () =>
      (await Promise.all([...seen].map(async (k) => ((await memory.get(k)) === undefined ? '' : k)))).filter(Boolean),
  };
}

/** The reference the stub client vouches for, as the kit's own tag. */
const TAGGED = 'bbc1.tagged';
/** Executions the stub service does not know for this tenant: its reads answer 404. */
const unknown = new Set<string>();
const notFound = (operation: string) =>
  new DeviceRiskError('request_rejected', `${operation} answered 404`, { status: 404, operation });

function receiver(extra: Partial<CallbackHandlerOptions> = {}) {
  const results: CallbackResult[] = [];
  const details: string[] = [];
  const statuses: string[] = [];
  const client = {
    retrievalOrigin: RETRIEVAL,
    clientId: 'client-1',
    details: async (ids: { workflowExecutionId: string }) => {
      details.push(ids.workflowExecutionId);
      if (unknown.has(ids.workflowExecutionId)) throw notFound('details');
      return { status: 'PROCESSED' };
    },
    status: async (ids: { workflowExecutionId: string }) => {
      statuses.push(ids.workflowExecutionId);
      if (unknown.has(ids.workflowExecutionId)) throw notFound('status');
      return 'TOKEN_EXPIRED';
    },
    vouches: async (reference: unknown) => reference === TAGGED,
  } as unknown as DeviceRiskClient;
  const handler = createCallbackHandler({
    client,
    allowedSources: 'any',
    onResult: (r) => void results.push(r),
    ...extra,
  });
  return { handler, results, details, statuses };
}

/** An onResult that notes each call in `calls` and fails ("busy") on the first `times`. */
const busyFor =
  <T>(times: number, calls: T[], note: () => T) =>
  () => {
    calls.push(note());
    if (calls.length <= times) throw new Error('busy');
  };

/** A sweep and the work it started, run to their end. */
const swept = async (handler: Pick<ReturnType<typeof receiver>['handler'], 'sweep' | 'idle'>) => {
  await handler.sweep();
  await handler.idle();
};

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
    ['a status not of the service form', body({}, { status: 'in progress' })],
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

  it('an intermediate status (ACQUIRED) is answered 200 and ignored: nothing called, nothing told', async () => {
    const errors: unknown[] = [];
    const { handler, results } = receiver({ onError: (e) => errors.push(e) });
    const response = await handler(send(body({}, { status: 'ACQUIRED' })));
    expect([response.status, await response.json()]).toEqual([200, { received: true, ignored: true }]);
    await handler.idle();
    expect(results).toEqual([]);
    expect(errors).toEqual([]);
    // The final one that follows is handled as ever.
    expect((await handler(send(body()))).status).toBe(200);
    await handler.idle();
    expect(results).toHaveLength(1);
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
    '%s is told without reading details (there are none), after one status read that places it',
    async (status) => {
      const { handler, results, details, statuses } = receiver();
      expect((await handler(send(body({}, { status })))).status).toBe(200);
      await handler.idle();
      expect(details).toEqual([]);
      expect(statuses).toEqual([EXECUTION]);
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

  it('every refusal is told to onError with its status: a wrong set-up is never silent', async () => {
    const errors: Array<{ code: string; status: number; message: string; operation: string }> = [];
    const { handler } = receiver({ allowedSources: ['192.0.2.1'], onError: (e) => errors.push(e as never) });
    await handler(send(body()));
    await handler(send(body()), { clientAddress: '198.51.100.9' });
    await handler(new Request('https://shop.test/callbacks'), { clientAddress: '192.0.2.1' });
    await handler(send(body(), {}), { clientAddress: '192.0.2.1' });
    await handler(send(body({ padding: 'x'.repeat(17_000) })), { clientAddress: '192.0.2.1' });
    await handler(send(body({}, { href: 'https://elsewhere.test/x' })), { clientAddress: '192.0.2.1' });
    expect(errors.map((e) => [e.code, e.status, e.operation])).toEqual([
      ['callback_refused', 403, 'callback'],
      ['callback_refused', 403, 'callback'],
      ['callback_refused', 405, 'callback'],
      ['callback_refused', 415, 'callback'],
      ['callback_refused', 413, 'callback'],
      ['invalid_callback', 400, 'callback'],
    ]);
    expect(errors[0]!.message).toContain('403 source_not_allowed: no caller address was given');
    expect(errors[1]!.message).toContain('its caller address 198.51.100.9 is not allowed');
    expect(errors[2]!.message).toContain('405 method_not_allowed');
    expect(errors[5]!.message).toContain('400 invalid_callback: the callback has a workflowExecution.href off');
  });

  it('without onError, a refusal is one console.error line with its code and why', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      await receiver({ allowedSources: ['192.0.2.1'] }).handler(send(body()), { clientAddress: '198.51.100.9' });
      expect(logged.mock.calls).toEqual([
        [
          expect.stringMatching(
            /^\[blackbox-capture\/server\] .*198\.51\.100\.9 is not allowed.* \(callback_refused\)$/,
          ),
        ],
      ]);
    } finally {
      logged.mockRestore();
    }
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

  it('a store that cannot record is 503 store_unavailable with Retry-After 5, told, and past a lease delivered from memory', async () => {
    const failing = { ...createMemoryStore(), setIfAbsent: async () => Promise.reject(new Error('down')) } as Store;
    const errors: Array<{ code?: string; message?: string }> = [];
    const { handler, results } = receiver({
      store: failing,
      leaseMs: 1,
      retryDelayMs: 1,
      onError: (e) => errors.push(e as never),
    });
    const response = await handler(send(body()));
    expect([response.status, (await codeOf(response)).code, response.headers.get('retry-after')]).toEqual([
      503,
      'store_unavailable',
      '5',
    ]);
    expect(errors).toMatchObject([{ code: 'store_unavailable' }, { code: 'store_unavailable' }]);
    expect(errors[1]!.message).toContain('this instance keeps it');
    // The service documents no resend: the decision reaches onResult all the same.
    await handler.idle();
    expect(results).toHaveLength(1);
    await handler.close();
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
    await handler.close();
  });

  it('a retry that a store failure cannot record is still made, and the store failure is told too', async () => {
    vi.useFakeTimers();
    const inner = createMemoryStore();
    let failSets = false;
    const store: Store = {
      ...inner,
      compareAndSet: async (...args) =>
        failSets ? Promise.reject(new Error('store down')) : inner.compareAndSet(...args),
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
    await handler.close();
  });

  it('close() stops the retries waiting', async () => {
    vi.useFakeTimers();
    const calls: number[] = [];
    const { handler } = receiver({
      retryDelayMs: 50,
      onResult: busyFor(Infinity, calls, () => 1),
      onError: () => {},
    });
    await handler(send(body()));
    await vi.advanceTimersByTimeAsync(0);
    await handler.close();
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
    await handler.close();
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
      details: async () => ({ status: 'PROCESSED' }),
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

describe('callbacks never lost: the pending list and the sweep', () => {
  // Two handlers on one store stand for two instances of a fleet.
  const listed = (store: Store) => pendingList(store, 'client-1:callback', 86_400_000, Date.now).entries();
  /** A store this instance reaches until it "dies": then every call hangs, as to a dead process. */
  function reachable(inner: Store) {
    let dead = false;
    const hang = () => new Promise<never>(() => {});
    const view = Object.fromEntries(
      Object.entries(inner).map(([name, call]) => [
        name,
        (...args: unknown[]) => (dead ? hang() : (call as (...a: unknown[]) => Promise<unknown>)(...args)),
      ]),
    ) as unknown as Store;
    return { view, die: () => (dead = true) };
  }
  const undelivered = (errors: unknown[]) =>
    errors.filter((e) => (e as { code?: string }).code === 'result_undelivered');

  /**
   * An instance that dies inside onResult (its store out of reach from then on), and a second
   * on the same store with `extra`; `calls` has 'a' for the first's call, the ids of the second's.
   */
  async function diedInOnResult(extra: Partial<CallbackHandlerOptions> = {}) {
    vi.useFakeTimers();
    const store = createMemoryStore();
    const a = reachable(store);
    const calls: string[] = [];
    const first = receiver({
      store: a.view,
      storeTimeoutMs: 50,
      leaseMs: 1000,
      onError: () => {},
      onResult: () => new Promise(() => calls.push('a')),
    });
    await first.handler(send(body()));
    await vi.advanceTimersByTimeAsync(0);
    a.die();
    const second = receiver({
      store,
      leaseMs: 1000,
      onError: () => {},
      onResult: (r) => void calls.push(r.workflowExecutionId),
      ...extra,
    });
    return { store, calls, first, second };
  }

  /**
   * On a clock the test moves (no timers run): an instance whose onResult failed on EXECUTION, now
   * closed; `next()` starts another instance on the same store, recording the ids it is told.
   */
  async function failedAndClosed() {
    const clock = { now: 1_000_000 };
    const now = () => clock.now;
    const store = createMemoryStore({ now });
    const calls: string[] = [];
    const options = { store, now, leaseMs: 1000, sweepIntervalMs: 5000, onError: () => {} };
    const first = receiver({
      ...options,
      onResult: busyFor(Infinity, calls, () => 'a'),
    });
    await first.handler(send(body()));
    await first.handler.idle();
    await first.handler.close();
    const next = () => receiver({ ...options, onResult: (r) => void calls.push(r.workflowExecutionId) });
    return { clock, calls, next };
  }

  it('an instance that dies inside onResult: another sweeps it a lease later and calls onResult with the ids', async () => {
    const { store, calls, first, second } = await diedInOnResult();
    await vi.advanceTimersByTimeAsync(990);
    await second.handler.sweep();
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(10);
    await swept(second.handler);
    expect(calls).toEqual(['a', EXECUTION]);
    expect(await listed(store)).toEqual([]);
    await swept(second.handler);
    expect(calls).toHaveLength(2);
    // The dead instance's close cannot reach its store: not waited for (fake timers hold its time limit).
    void first.handler.close();
    await second.handler.close();
  });

  it('a retry whose instance died is swept by another a lease after it was due, keeping the attempts', async () => {
    vi.useFakeTimers();
    const store = createMemoryStore();
    const calls: string[] = [];
    const first = receiver({
      store,
      leaseMs: 1000,
      retryDelayMs: 400,
      onError: () => {},
      onResult: busyFor(Infinity, calls, () => 'a'),
    });
    await first.handler(send(body()));
    await first.handler.idle();
    await first.handler.close();
    const errors: unknown[] = [];
    const second = receiver({
      store,
      leaseMs: 1000,
      retryDelayMs: 400,
      onError: (e) => errors.push(e),
      onResult: () => {
        calls.push('b');
        throw new Error('still busy');
      },
    });
    await vi.advanceTimersByTimeAsync(1399);
    await second.handler.sweep();
    expect(calls).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(1);
    await swept(second.handler);
    expect(calls).toEqual(['a', 'b']);
    // The second attempt failed: its own timer takes the third, 800 ms later (the backoff kept).
    await vi.advanceTimersByTimeAsync(799);
    expect(calls).toEqual(['a', 'b']);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toEqual(['a', 'b', 'b']);
    expect(errors.map((e) => (e as Error).message)).toEqual(['still busy', 'still busy']);
    await second.handler.close();
  });

  it('a sweep leaves alone a callback whose retry this instance has set, even past its time', async () => {
    vi.useFakeTimers();
    let clock = 1_000_000;
    const now = () => clock;
    const store = createMemoryStore({ now });
    const calls: number[] = [];
    const { handler } = receiver({
      store,
      now,
      leaseMs: 1000,
      retryDelayMs: 400,
      onError: () => {},
      onResult: busyFor(1, calls, () => clock),
    });
    await handler(send(body()));
    await handler.idle();
    clock += 10_000;
    await swept(handler);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(400);
    await handler.idle();
    expect(calls).toHaveLength(2);
    await handler.close();
  });

  it('a copy that arrives while a retry waits keeps the backoff: nothing is called before it', async () => {
    vi.useFakeTimers();
    const calls: number[] = [];
    const started = Date.now();
    const { handler } = receiver({
      retryDelayMs: 100,
      onError: () => {},
      onResult: busyFor(1, calls, () => Date.now() - started),
    });
    await handler(send(body()));
    await vi.advanceTimersByTimeAsync(10);
    expect(await (await handler(send(body()))).json()).toEqual({ received: true, duplicate: true });
    await vi.advanceTimersByTimeAsync(200);
    expect(calls).toEqual([0, 100]);
    await handler.close();
  });

  it('every instance sweeps every sweepIntervalMs once a callback came, and on a callback an interval after the last; close() stops it', async () => {
    const { calls, first, second } = await diedInOnResult({ sweepIntervalMs: 5000 });
    const OTHER = '66666666-7777-4888-9999-bbbbbbbbbbbb';
    const other = bodyOf(OTHER);
    // Its arrival sweeps at once: the dead instance's callback is not due yet.
    await second.handler(send(other));
    await second.handler.idle();
    expect(calls).toEqual(['a', OTHER]);
    await vi.advanceTimersByTimeAsync(4999);
    expect(calls).toEqual(['a', OTHER]);
    await vi.advanceTimersByTimeAsync(1);
    await second.handler.idle();
    expect(calls).toEqual(['a', OTHER, EXECUTION]);
    await second.handler.close();
    void first.handler.close();
  });

  it('on a runtime that runs no timers between requests, a callback an interval after the last sweep sweeps', async () => {
    const { clock, calls, next } = await failedAndClosed();
    const second = next();
    const execution = (id: string) => bodyOf(id);
    const [X, Y] = ['66666666-7777-4888-9999-bbbbbbbbbbbb', '66666666-7777-4888-9999-cccccccccccc'];
    await second.handler(send(execution(X)));
    await second.handler.idle();
    clock.now += 4999;
    await second.handler(send(execution(Y)));
    await second.handler.idle();
    expect(calls).toEqual(['a', X, Y]);
    clock.now += 1;
    const Z = '66666666-7777-4888-9999-dddddddddddd';
    await second.handler(send(execution(Z)));
    await second.handler.idle();
    expect(calls.sort()).toEqual(['a', X, Y, Z, EXECUTION].sort());
    await second.handler.close();
  });

  it('gives up retryForMs after the arrival: onError hears result_undelivered with the ids, once; the record is kept as failed', async () => {
    vi.useFakeTimers();
    const store = createMemoryStore();
    const errors: unknown[] = [];
    const calls: number[] = [];
    const { handler } = receiver({
      store,
      retryDelayMs: 100,
      maxRetryDelayMs: 100,
      retryForMs: 1000,
      onError: (e) => errors.push(e),
      onResult: busyFor(Infinity, calls, () => Date.now()),
    });
    await handler(send(body()));
    await vi.advanceTimersByTimeAsync(999);
    expect([calls.length, undelivered(errors)]).toEqual([10, []]);
    await vi.advanceTimersByTimeAsync(1);
    await handler.idle();
    expect(calls).toHaveLength(10);
    const [error] = undelivered(errors) as DeviceRiskError[];
    expect(undelivered(errors)).toHaveLength(1);
    expect(error!.message).toContain(EXECUTION);
    expect(error!.message).toContain(ACCOUNT);
    expect(await listed(store)).toEqual([]);
    const record = JSON.parse((await store.get(`client-1:callback:${EXECUTION}:PROCESSED:${ACCOUNT}`))!) as {
      state: string;
    };
    expect(record.state).toBe('failed');
    await vi.advanceTimersByTimeAsync(10_000);
    expect((await (await handler(send(body()))).json()) as unknown).toEqual({ received: true, duplicate: true });
    await handler.idle();
    await swept(handler);
    expect([calls.length, undelivered(errors).length]).toEqual([10, 1]);
    await handler.close();
  });

  it('a retry timer that fires before the clock reaches its time (a clock slewed slow) still tries', async () => {
    vi.useFakeTimers();
    const started = Date.now();
    // A clock running at 90 % of the timers' pace: each timer fires "early" by it.
    const now = () => started + Math.floor((Date.now() - started) * 0.9);
    const calls: number[] = [];
    const { handler } = receiver({
      now,
      retryDelayMs: 100,
      onError: () => {},
      onResult: busyFor(2, calls, () => Date.now() - started),
    });
    await handler(send(body()));
    await vi.advanceTimersByTimeAsync(400);
    expect(calls).toEqual([0, 100, 300]);
    await handler.close();
  });

  it('a copy that arrives when the retry is due is handled at once', async () => {
    let clock = 1_000_000;
    const now = () => clock;
    const calls: number[] = [];
    const { handler } = receiver({
      now,
      store: createMemoryStore({ now }),
      retryDelayMs: 60_000,
      onError: () => {},
      onResult: busyFor(1, calls, () => clock),
    });
    await handler(send(body()));
    await handler.idle();
    clock += 59_999;
    await handler(send(body()));
    await handler.idle();
    expect(calls).toHaveLength(1);
    clock += 1;
    await handler(send(body()));
    await handler.idle();
    expect(calls).toEqual([1_000_000, 1_060_000]);
    await handler.close();
  });

  it('a retry whose record expired meanwhile calls nothing and reports nothing more', async () => {
    vi.useFakeTimers();
    const errors: unknown[] = [];
    const calls: number[] = [];
    const { handler } = receiver({
      retryDelayMs: 3000,
      retryForMs: 1000,
      recordTtlMs: 2000,
      onError: (e) => errors.push(e),
      onResult: busyFor(Infinity, calls, () => Date.now()),
    });
    await handler(send(body()));
    await vi.advanceTimersByTimeAsync(3000);
    await handler.idle();
    expect(calls).toHaveLength(1);
    expect(errors.map((e) => (e as Error).message)).toEqual(['busy']);
    await handler.close();
  });

  it('one sweep timer however many callbacks arrive: close() stops it, and nothing reads the store after', async () => {
    vi.useFakeTimers();
    const inner = createMemoryStore();
    let reads = 0;
    const store: Store = {
      ...inner,
      get: (key) => {
        reads++;
        return inner.get(key);
      },
    };
    const { handler } = receiver({ store, sweepIntervalMs: 1000 });
    const OTHER = '66666666-7777-4888-9999-bbbbbbbbbbbb';
    await handler(send(body()));
    await handler(send(bodyOf(OTHER)));
    await vi.advanceTimersByTimeAsync(0);
    await handler.idle();
    await handler.close();
    reads = 0;
    await vi.advanceTimersByTimeAsync(5000);
    expect(reads).toBe(0);
  });

  it('a closed instance sweeps no more, even when a callback arrives', async () => {
    const { clock, calls, next } = await failedAndClosed();
    const second = next();
    await second.handler.close();
    clock.now += 10_000;
    const OTHER = '66666666-7777-4888-9999-bbbbbbbbbbbb';
    const other = bodyOf(OTHER);
    expect((await second.handler(send(other))).status).toBe(200);
    await second.handler.idle();
    // Recorded for the fleet, handled by no closed instance: a live one's sweep takes it.
    expect(calls).toEqual(['a']);
    // A lease after its arrival, another instance steps in.
    clock.now += 1000;
    const third = next();
    await swept(third.handler);
    await third.handler.close();
    // The live instance takes both: the first instance's failed one (due) and the one it got after close.
    expect(calls[0]).toBe('a');
    expect(calls.slice(1).sort()).toEqual([EXECUTION, OTHER].sort());
  });

  it('retryForMs must be positive and less than recordTtlMs; sweepIntervalMs positive', () => {
    for (const bad of [{ retryForMs: 0 }, { retryForMs: 1000, recordTtlMs: 1000 }, { sweepIntervalMs: 0 }])
      expect(() => receiver(bad)).toThrow(expect.objectContaining({ code: 'invalid_configuration' }));
    expect(() => receiver({ retryForMs: 999, recordTtlMs: 1000 })).not.toThrow();
  });

  it('a callback that cannot be listed is 503, recorded once the store takes it, and told once; a resend calls nothing', async () => {
    const inner = createMemoryStore();
    let failLists = 1;
    const store: Store = {
      ...inner,
      setIfAbsent: async (key, ...rest) =>
        key.includes(':pending:') && failLists-- > 0
          ? Promise.reject(new Error('store down'))
          : inner.setIfAbsent(key, ...rest),
    };
    const { handler, results } = receiver({ store, retryDelayMs: 1, onError: () => {} });
    expect((await handler(send(body()))).status).toBe(503);
    await handler.idle();
    expect(results).toHaveLength(1);
    expect(JSON.parse((await inner.get(`client-1:callback:${EXECUTION}:PROCESSED:${ACCOUNT}`))!)).toMatchObject({
      state: 'done',
    });
    expect(await (await handler(send(body()))).json()).toEqual({ received: true, duplicate: true });
    await handler.idle();
    expect(results).toHaveLength(1);
    await handler.close();
  });

  it('a delivered result is taken off the list; a list entry left behind is swept away without a call', async () => {
    const inner = createMemoryStore();
    let failRemoves = false;
    const store: Store = {
      ...inner,
      compareAndDelete: async (key, ...rest) =>
        key.includes(':pending:') && failRemoves
          ? Promise.reject(new Error('store down'))
          : inner.compareAndDelete(key, ...rest),
    };
    const errors: unknown[] = [];
    const { handler, results } = receiver({ store, onError: (e) => errors.push(e) });
    await handler(send(body()));
    await handler.idle();
    expect(await listed(store)).toEqual([]);
    failRemoves = true;
    const OTHER = '66666666-7777-4888-9999-bbbbbbbbbbbb';
    await handler(send(bodyOf(OTHER)));
    await handler.idle();
    expect(results).toHaveLength(2);
    expect(errors).toHaveLength(1);
    expect(await listed(store)).toHaveLength(1);
    failRemoves = false;
    await swept(handler);
    expect(await listed(store)).toEqual([]);
    expect(results).toHaveLength(2);
    await handler.close();
  });

  it('an entry whose record never came is dropped a lease after it was listed, unless listed again since', async () => {
    vi.useFakeTimers();
    const store = createMemoryStore();
    const list = pendingList(store, 'client-1:callback', 86_400_000, Date.now);
    await list.add('client-1:callback:gone:PROCESSED');
    const { handler, results } = receiver({ store, leaseMs: 1000 });
    await vi.advanceTimersByTimeAsync(999);
    await handler.sweep();
    expect(await list.entries()).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await handler.sweep();
    expect(await list.entries()).toEqual([]);
    expect(results).toHaveLength(0);
    await handler.close();
  });

  /**
   * Options for instances on one memory store whose compareAndSet fails ("store down") while
   * `refuse` says so; the instances record the calls to onResult and the errors they hear.
   */
  function refusingWrites(refuse: (key: string, value: string) => boolean) {
    const inner = createMemoryStore();
    const store: Store = {
      ...inner,
      compareAndSet: async (key, expected, value, ttl) =>
        refuse(key, value) ? Promise.reject(new Error('store down')) : inner.compareAndSet(key, expected, value, ttl),
    };
    const calls: number[] = [];
    const errors: unknown[] = [];
    const options = {
      store,
      leaseMs: 1000,
      onError: (e: unknown) => errors.push(e),
      onResult: () => void calls.push(1),
    };
    return { calls, errors, options };
  }

  it('"done" is written through a store away for a while: onResult is not called again', async () => {
    vi.useFakeTimers();
    let failDone = 0;
    const { calls, errors, options } = refusingWrites((_key, value) => value.includes('"done"') && failDone-- > 0);
    const first = receiver(options);
    failDone = 3;
    await first.handler(send(body()));
    await vi.advanceTimersByTimeAsync(300);
    await first.handler.idle();
    expect([calls.length, errors.length, failDone]).toEqual([1, 0, -1]);
    const second = receiver(options);
    await vi.advanceTimersByTimeAsync(5000);
    await swept(second.handler);
    expect(calls).toHaveLength(1);
    await first.handler.close();
    await second.handler.close();
  });

  it('"done" not written within a lease: onError hears it, and another instance calls onResult again (the documented double)', async () => {
    vi.useFakeTimers();
    let failDone = true;
    const { calls, errors, options } = refusingWrites(
      (key, value) => failDone && (value.includes('"done"') || value === 'told' || key.endsWith(':lease')),
    );
    const first = receiver(options);
    await first.handler(send(body()));
    await vi.advanceTimersByTimeAsync(1100);
    await first.handler.idle();
    // Neither the told marker nor the record's "done" could be written.
    expect(errors.map((e) => (e as Error).message)).toEqual([expect.stringContaining('told marker'), 'store down']);
    failDone = false;
    const second = receiver(options);
    await vi.advanceTimersByTimeAsync(1000);
    await swept(second.handler);
    expect(calls).toHaveLength(2);
    // The dead instance's close cannot reach its store: not waited for (fake timers hold its time limit).
    void first.handler.close();
    await second.handler.close();
  });
});

describe('callbacks for executions the shop never made (any tenant may point its callbackUrl here)', () => {
  const idOf = (n: number) => `66666666-7777-4888-9999-${String(n).padStart(12, '0')}`;
  const callbackFor = bodyOf;
  afterEach(() => unknown.clear());

  it('a genuine callback arriving while a copy naming another account is placed is still told', async () => {
    const other = '99999999-2222-4333-8444-555555555555';
    let refuse!: () => void;
    const refused = new Promise<void>((resolve) => (refuse = resolve));
    const results: string[] = [];
    const client = {
      retrievalOrigin: RETRIEVAL,
      clientId: 'client-1',
      async details(ids: { accountId: string }) {
        // The copy's read: held, then refused (the account is not this tenant's).
        if (ids.accountId === other) {
          await refused;
          throw notFound('details');
        }
        return { status: 'PROCESSED' };
      },
    } as unknown as DeviceRiskClient;
    const handler = createCallbackHandler({
      client,
      allowedSources: 'any',
      store: createMemoryStore(),
      onResult: (r) => void results.push(r.workflowExecutionId),
      onError: () => {},
    });
    const genuine = callbackBody();
    const copy = {
      ...genuine,
      workflowExecution: {
        ...genuine.workflowExecution,
        href: `${RETRIEVAL}/api/v1/accounts/${other}/workflow-executions/${EXECUTION}`,
      },
      account: { id: other, href: `${RETRIEVAL}/api/v1/accounts/${other}` },
    };
    expect((await handler(send(copy))).status).toBe(200);
    // Not answered `duplicate` by the copy's record: placed, and told.
    const answer = await handler(send(genuine));
    expect([answer.status, await answer.text()]).not.toContain('{"duplicate":true}');
    refuse();
    await handler.idle();
    await swept(handler);
    expect(results).toEqual([EXECUTION]);
    await handler.close();
  });

  it('a 404 from the details read is final: one read, no retry, no onResult, told as unknown_execution, no record left', async () => {
    const store = listingStore();
    const errors: DeviceRiskError[] = [];
    const { handler, results, details } = receiver({
      store,
      onError: (e) => void errors.push(e as DeviceRiskError),
    });
    const id = idOf(1);
    unknown.add(id);
    expect((await handler(send(callbackFor(id)))).status).toBe(200);
    await handler.idle();
    await swept(handler);
    expect(details).toEqual([id]);
    expect(results).toEqual([]);
    expect(errors.map((e) => e.code)).toEqual(['unknown_execution']);
    expect(await store.live()).toEqual([]);
    await handler.close();
  });

  it('an expiry for an execution the service does not know never reaches onResult; one it knows does', async () => {
    const errors: DeviceRiskError[] = [];
    const { handler, results, statuses } = receiver({ onError: (e) => void errors.push(e as DeviceRiskError) });
    unknown.add(idOf(2));
    await handler(send(callbackFor(idOf(2), {}, 'TOKEN_EXPIRED')));
    await handler(send(callbackFor(idOf(3), {}, 'TOKEN_EXPIRED')));
    await handler.idle();
    expect(statuses.sort()).toEqual([idOf(2), idOf(3)]);
    expect(results.map((r) => r.workflowExecutionId)).toEqual([idOf(3)]);
    expect(errors.map((e) => e.code)).toEqual(['unknown_execution']);
    await handler.close();
  });

  it("an expiry with the kit's own reference is told without a read", async () => {
    const { handler, results, statuses } = receiver();
    await handler(send(callbackFor(idOf(4), { userReference: TAGGED }, 'SESSION_EXPIRED')));
    await handler.idle();
    expect(statuses).toEqual([]);
    expect(results.map((r) => r.status)).toEqual(['SESSION_EXPIRED']);
    await handler.close();
  });

  it('a flood of untagged callbacks is refused past its limit before any write; tagged ones still get in', async () => {
    const writes: string[] = [];
    const memory = createMemoryStore();
    const store: Store = {
      ...memory,
      setIfAbsent: (key, value, ttl) => {
        writes.push(key);
        return memory.setIfAbsent(key, value, ttl);
      },
    };
    const errors: DeviceRiskError[] = [];
    const { handler, results } = receiver({
      store,
      untaggedCallbacks: { burst: 3, perMinute: 1 },
      onError: (e) => void errors.push(e as DeviceRiskError),
    });
    const answers: Response[] = [];
    for (let n = 10; n < 20; n++) {
      unknown.add(idOf(n));
      answers.push(await handler(send(callbackFor(idOf(n)))));
    }
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 503, 503, 503, 503, 503, 503, 503]);
    expect((await codeOf(answers[3]!)).code).toBe('too_many_callbacks');
    expect(Number(answers[3]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const recordWrites = () =>
      writes.filter((k) => !k.includes(':pending:') && !k.endsWith(':lease') && !k.includes(':told:'));
    expect(recordWrites()).toHaveLength(3);
    expect(errors.filter((e) => e.code === 'callback_refused')).toHaveLength(7);
    // The shop's own callback (the kit's tag) is never crowded out.
    const mine = await handler(send(callbackFor(idOf(30), { userReference: TAGGED })));
    expect(mine.status).toBe(200);
    await handler.idle();
    expect(results.map((r) => r.workflowExecutionId)).toEqual([idOf(30)]);
    await handler.close();
  });

  it('untaggedCallbacks and onResultTimeoutMs are checked', () => {
    for (const bad of [
      { untaggedCallbacks: { burst: 0, perMinute: 1 } },
      { untaggedCallbacks: { burst: 1, perMinute: Number.NaN } },
      { onResultTimeoutMs: 0 },
    ])
      expect(() => receiver(bad as Partial<CallbackHandlerOptions>)).toThrow(
        expect.objectContaining({ code: 'invalid_configuration' }),
      );
  });
});

describe('nothing outlives its owner', () => {
  it('an onResult that hangs past onResultTimeoutMs fails (result_handler_timeout), its signal aborts, the lease goes, and it is retried', async () => {
    const errors: DeviceRiskError[] = [];
    const signals: AbortSignal[] = [];
    let calls = 0;
    const store = listingStore();
    const { handler } = receiver({
      store,
      onResultTimeoutMs: 50,
      retryDelayMs: 20,
      onError: (e) => void errors.push(e as DeviceRiskError),
      onResult: (_result, { signal }) => {
        signals.push(signal);
        // The first call never settles; the second returns.
        if (++calls === 1) return new Promise<void>(() => {});
      },
    });
    await handler(send(body()));
    await vi.waitFor(() => expect(calls).toBe(2), { timeout: 5000, interval: 10 });
    await handler.idle();
    expect(errors.map((e) => e.code)).toEqual(['result_handler_timeout']);
    expect(signals[0]!.aborted).toBe(true);
    // Delivered: no lease is left in the store.
    expect((await store.live()).filter((k) => k.endsWith(':lease'))).toEqual([]);
    await handler.close();
  });

  it('close() aborts a hung onResult and releases its lease at once, so that another instance takes the callback over', async () => {
    const store = createMemoryStore();
    const delivered: string[] = [];
    let aborted: AbortSignal | undefined;
    const first = receiver({
      store,
      leaseMs: 60_000,
      onResult: (_r, { signal }) => {
        aborted = signal;
        return new Promise<void>(() => {});
      },
    });
    await first.handler(send(body()));
    await vi.waitFor(() => expect(aborted).toBeDefined(), { interval: 5 });
    await first.handler.close();
    expect(aborted!.aborted).toBe(true);
    const second = receiver({ store, leaseMs: 60_000, onResult: (r) => void delivered.push(r.workflowExecutionId) });
    // A copy of the callback: the record is pending, no lease holds it, so it is handled now.
    await second.handler(send(body()));
    await second.handler.idle();
    expect(delivered).toEqual([EXECUTION]);
    await second.handler.close();
  });
});
