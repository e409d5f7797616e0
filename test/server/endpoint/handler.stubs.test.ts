// The endpoint's answers, each pinned by status, code and headers, on a stub client: every
// refusal before a call, and the mapping of every failure to what the browser should do.
import { describe, expect, it, vi } from 'vitest';
import { DeviceRiskTransaction } from '../../../src/server/api/device-risk-client.js';
import { DeviceRiskError } from '../../../src/server/errors.js';
import type { DeviceRiskClient } from '../../../src/server/index.js';
// The endpoint's run of the check, with its plumbing (progress, sleep), which the package does not export.
import { runCheck as runDeviceRiskCheck } from '../../../src/server/endpoint/check.js';
import { BLACKBOX, handlerWith, SHOP } from '../../support/kit.js';

const transaction = (n = 1, tokenExpiresAt = Date.now() + 300_000) =>
  new DeviceRiskTransaction({
    accountId: `acc-${n}`,
    workflowExecutionId: `wf-${n}`,
    credentialId: `cred-${n}`,
    uploadUrl: 'https://api.example/upload',
    finalizeUrl: 'https://api.example/finalize',
    tokenExpiresAt,
    token: `tx-token-${n}`,
  });

/** A client whose calls are recorded, and whose account create can be made to fail. */
function stubClient(overrides: Partial<DeviceRiskClient> = {}) {
  const calls: string[] = [];
  let n = 0;
  const client: DeviceRiskClient = {
    retrievalOrigin: 'https://retrieval.example',
    clientId: 'client-1',
    createAccount: async (body) => {
      calls.push(`create ${JSON.stringify(body)}`);
      return transaction(++n);
    },
    updateAccount: async (id, body) => {
      calls.push(`update ${id} ${JSON.stringify(body)}`);
      return transaction(++n);
    },
    uploadBlackbox: async (tx) => void calls.push(`upload ${tx.workflowExecutionId}`),
    finalize: async (tx) => void calls.push(`finalize ${tx.workflowExecutionId}`),
    status: async (tx) => {
      calls.push(`status ${tx.workflowExecutionId}`);
      return 'PROCESSED';
    },
    details: async (tx) => {
      calls.push(`details ${tx.workflowExecutionId}`);
      return { workflowExecutionId: tx.workflowExecutionId } as never;
    },
    waitForResult: async () => ({}) as never,
    transactionFrom: () => transaction(),
    sealTransaction: async (tx) => JSON.stringify({ ...tx.toJSON(), token: tx.token }),
    openTransaction: async (sealed) => new DeviceRiskTransaction(JSON.parse(sealed) as never),
    ...overrides,
  };
  return { client, calls };
}

const post = (body: unknown, headers: Record<string, string> = {}) =>
  new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': 'key-0000000001', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const codeOf = async (response: Response) =>
  ((await response.clone().json()) as { error: { code: string } }).error.code;

/** runDeviceRiskCheck of BLACKBOX for customer 'c' on `client`. */
const checkOfCustomerC = (client: DeviceRiskClient, options: Parameters<typeof runDeviceRiskCheck>[3]) =>
  runDeviceRiskCheck(client, BLACKBOX, { customerInternalReference: 'c' }, options);

/** The page's POST of BLACKBOX with `headers` over its own. */
const withHeaders = (headers: Record<string, string>) => post({ blackbox: BLACKBOX }, headers);
const withKey = (key: string) => withHeaders({ 'idempotency-key': key });

describe('refusals before any call: status and code', () => {
  it.each([
    ['a GET', new Request(`${SHOP}/device-risk`, { headers: { origin: SHOP } }), 405, 'method_not_allowed'],
    ['no Origin', withHeaders({ origin: '' }), 403, 'origin_not_allowed'],
    ['a foreign Origin', withHeaders({ origin: 'https://evil.example' }), 403, 'origin_not_allowed'],
    [
      'no Content-Type',
      new Request(`${SHOP}/device-risk`, {
        method: 'POST',
        headers: { origin: SHOP },
        body: new Blob([JSON.stringify({ blackbox: BLACKBOX })]),
      }),
      415,
      'unsupported_media_type',
    ],
    [
      'a JSON type that does not start the header',
      withHeaders({ 'content-type': 'text/plain; x=application/json' }),
      415,
      'unsupported_media_type',
    ],
    ['application/jsonp', withHeaders({ 'content-type': 'application/jsonp' }), 415, 'unsupported_media_type'],
    ['a body over the limit', post({ blackbox: BLACKBOX, pad: 'x'.repeat(17 * 1024) }), 413, 'body_too_large'],
    ['invalid JSON', post('{blackbox:'), 400, 'invalid_blackbox'],
    ['JSON null', post('null'), 400, 'invalid_blackbox'],
    ['no blackbox', post({ sessionId: BLACKBOX }), 400, 'invalid_blackbox'],
    ['a key of 7 characters', withKey('k'.repeat(7)), 400, 'invalid_idempotency_key'],
    ['a key of 201 characters', withKey('k'.repeat(201)), 400, 'invalid_idempotency_key'],
    ['a key with a space before valid characters', withKey('a b-valid-key-1'), 400, 'invalid_idempotency_key'],
    ['a key with a space after valid characters', withKey('valid-key-1 a'), 400, 'invalid_idempotency_key'],
  ])('%s: %i %s', async (_, request, status, code) => {
    const { client, calls } = stubClient();
    const response = await handlerWith(client)(request);
    expect(response.status).toBe(status);
    expect(await codeOf(response)).toBe(code);
    expect(calls).toEqual([]);
  });

  it('a 405 names the method allowed', async () => {
    const response = await handlerWith(stubClient().client)(
      new Request(`${SHOP}/device-risk`, { method: 'PUT', headers: { origin: SHOP }, body: '{}' }),
    );
    expect([response.status, response.headers.get('allow')]).toEqual([405, 'POST']);
  });

  it('keys of 8 and of 200 visible characters, and JSON with a charset, are accepted', async () => {
    for (const key of ['k'.repeat(8), '!'.repeat(100) + '~'.repeat(100)]) {
      const response = await handlerWith(stubClient().client)(
        post({ blackbox: BLACKBOX }, { 'idempotency-key': key, 'content-type': 'Application/JSON; charset=utf-8' }),
      );
      expect(response.status, key).toBe(200);
    }
  });

  it('an order the service would refuse is refused at the door: 422 invalid_account_request, told, never accepted', async () => {
    const { client, calls } = stubClient();
    for (const order of [
      { customerInternalReference: 'INV/2026/0001' },
      { customerInternalReference: 'A%20B' },
      { customerInternalReference: '' },
      { customerInternalReference: 'o'.repeat(101) },
      { customerInternalReference: 'order-1', userReference: 'u'.repeat(101) },
    ]) {
      const errors: unknown[] = [];
      const response = await handlerWith(client, { resolveCustomer: () => order, onError: (e) => errors.push(e) })(
        post({ blackbox: BLACKBOX }),
      );
      expect([response.status, await codeOf(response)]).toEqual([422, 'invalid_account_request']);
      expect(errors).toMatchObject([{ code: 'invalid_account_request' }]);
    }
    expect(calls).toEqual([]);
  });

  it('a resolveCustomer that throws is 500 customer_lookup_failed, told to onError (the console without one), with no call', async () => {
    const { client, calls } = stubClient();
    const errors: unknown[] = [];
    const failure = new Error('database down');
    const resolveCustomer = () => {
      throw failure;
    };
    const response = await handlerWith(client, { resolveCustomer, onError: (e) => errors.push(e) })(
      post({ blackbox: BLACKBOX }),
    );
    expect([response.status, await codeOf(response)]).toEqual([500, 'customer_lookup_failed']);
    expect(errors).toEqual([failure]);
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const unheard = await handlerWith(client, { resolveCustomer })(post({ blackbox: BLACKBOX }));
      expect(unheard.status).toBe(500);
      // Without onError the failure goes to the console: never silent.
      expect(logged.mock.calls).toEqual([[failure]]);
    } finally {
      logged.mockRestore();
    }
    expect(calls).toEqual([]);
  });

  it('a repaired blackbox is told to onRepair only when something was repaired', async () => {
    const onRepair = vi.fn();
    await handlerWith(stubClient().client, { onRepair })(post({ blackbox: BLACKBOX }));
    expect(onRepair).not.toHaveBeenCalled();
    await handlerWith(stubClient().client, { onRepair })(
      post({ blackbox: BLACKBOX.replaceAll('+', ' ') }, { 'idempotency-key': 'key-0000000002' }),
    );
    expect(onRepair).toHaveBeenCalledTimes(1);
  });

  it('nonceSecret: 31 characters are refused at creation, 32 accepted', () => {
    const { client } = stubClient();
    expect(() => handlerWith(client, { nonceSecret: 'n'.repeat(31) })).toThrow(
      expect.objectContaining({ code: 'invalid_configuration' }),
    );
    expect(() => handlerWith(client, { nonceSecret: 42 as never })).toThrow(
      expect.objectContaining({ code: 'invalid_configuration' }),
    );
    expect(() => handlerWith(client, { nonceSecret: 'n'.repeat(32) })).not.toThrow();
  });
});

describe('failures mapped to what the browser should do', () => {
  const failWith = (error: unknown) => stubClient({ createAccount: async () => Promise.reject(error) });
  it.each([
    ['invalid configuration', new DeviceRiskError('invalid_configuration', 'x'), 500, 'invalid_configuration', null],
    ['a forged address', new DeviceRiskError('forged_address', 'x'), 500, 'forged_address', null],
    [
      'an account request the service refuses',
      new DeviceRiskError('invalid_account_request', 'x', { status: 400 }),
      422,
      'invalid_account_request',
      null,
    ],
    ['a 400', new DeviceRiskError('request_rejected', 'x', { status: 400 }), 400, 'request_rejected', null],
    ['a 404', new DeviceRiskError('request_rejected', 'x', { status: 404 }), 404, 'request_rejected', null],
    ['a 499', new DeviceRiskError('request_rejected', 'x', { status: 499 }), 499, 'request_rejected', null],
    [
      'a rejected request with a 429',
      new DeviceRiskError('request_rejected', 'x', { status: 429 }),
      503,
      'request_rejected',
      '2',
    ],
    [
      'a rejected request with a 500',
      new DeviceRiskError('request_rejected', 'x', { status: 500 }),
      502,
      'request_rejected',
      '2',
    ],
    ['a rejected request with no status', new DeviceRiskError('request_rejected', 'x'), 502, 'request_rejected', '2'],
    [
      'a 503 with Retry-After 7',
      new DeviceRiskError('upstream_error', 'x', { status: 503, retryAfter: 7 }),
      503,
      'upstream_error',
      '7',
    ],
    ['a 502', new DeviceRiskError('upstream_error', 'x', { status: 502 }), 502, 'upstream_error', '2'],
    ['a network error', new DeviceRiskError('network_error', 'x'), 503, 'network_error', '2'],
    ['a rate limit', new DeviceRiskError('rate_limited', 'x', { retryAfter: 90 }), 503, 'rate_limited', '60'],
    ['a store away', new DeviceRiskError('store_unavailable', 'x', { retryAfter: 1 }), 503, 'store_unavailable', '1'],
    ['a token refused', new DeviceRiskError('token_rejected', 'x', { status: 401 }), 502, 'token_rejected', '2'],
    ['an error of no kind the package knows', new TypeError('boom'), 502, 'internal_error', '2'],
  ])('%s: %i %s, Retry-After %s', async (_, error, status, code, retryAfter) => {
    const errors: unknown[] = [];
    const response = await handlerWith(failWith(error).client, { onError: (e) => errors.push(e) })(
      post({ blackbox: BLACKBOX }),
    );
    expect([response.status, await codeOf(response), response.headers.get('retry-after')]).toEqual([
      status,
      code,
      retryAfter,
    ]);
    expect(errors).toEqual([error]);
  });
});

describe('runDeviceRiskCheck on a stub client', () => {
  it('passes userReference, callbackUrl and tokenLifetime through to the account request, and only those given', async () => {
    const { client, calls } = stubClient();
    await runDeviceRiskCheck(
      client,
      BLACKBOX,
      {
        customerInternalReference: 'c',
        userReference: 'u',
        callbackUrl: 'https://shop.example/cb',
        tokenLifetime: '30m',
      },
      { workflowKey: 1 },
    );
    await checkOfCustomerC(client, { workflowKey: 1 });
    expect(calls.filter((c) => c.startsWith('create'))).toEqual([
      'create {"customerInternalReference":"c","workflowDefinition":{"key":1},"userReference":"u","callbackUrl":"https://shop.example/cb","tokenLifetime":"30m"}',
      'create {"customerInternalReference":"c","workflowDefinition":{"key":1}}',
    ]);
  });

  it('a transaction token is used up to 30 s before it lapses; from then on a fresh transaction', async () => {
    const now = 1_000_000;
    for (const [expiresAt, fresh] of [
      [now + 30_001, false],
      [now + 30_000, true],
    ] as const) {
      const { client, calls } = stubClient();
      await checkOfCustomerC(client, {
        workflowKey: 1,
        now: () => now,
        progress: { transaction: transaction(9, expiresAt) },
      });
      expect(
        calls.some((c) => c.startsWith('create')),
        String(expiresAt),
      ).toBe(fresh);
    }
  });

  it('reportStatus: false skips the status read and answers FINALIZED; with onResult it still reads', async () => {
    const { client, calls } = stubClient();
    expect((await checkOfCustomerC(client, { workflowKey: 1, reportStatus: false })).status).toBe('FINALIZED');
    expect(calls.some((c) => c.startsWith('status'))).toBe(false);
    const onResult = vi.fn();
    expect((await checkOfCustomerC(client, { workflowKey: 1, reportStatus: false, onResult })).status).toBe(
      'PROCESSED',
    );
    expect(onResult).toHaveBeenCalledTimes(1);
  });

  it('a status read that fails is reported as FINALIZED, not as a failure of the check', async () => {
    const { client } = stubClient({ status: async () => Promise.reject(new Error('retrieval down')) });
    expect((await checkOfCustomerC(client, { workflowKey: 1 })).status).toBe('FINALIZED');
  });

  /** A check with onResult (a spy) and `resultWaitMs`, on a clock that each sleep moves: its result, the waits it slept. */
  async function checkOnItsClock(client: DeviceRiskClient, resultWaitMs: number) {
    let t = 0;
    const waits: number[] = [];
    const onResult = vi.fn();
    const result = await checkOfCustomerC(client, {
      workflowKey: 1,
      onResult,
      resultWaitMs,
      now: () => t,
      sleep: async (ms) => void (waits.push(ms), (t += ms)),
    });
    return { result, waits, onResult };
  }

  it('onResult: the status is read again until PROCESSED within resultWaitMs, each wait at most 1 s and never past the end', async () => {
    const statuses = ['FINALIZED', 'FINALIZED', 'PROCESSED'];
    const { client } = stubClient({ status: async () => statuses.shift() ?? 'PROCESSED' });
    const { result, waits, onResult } = await checkOnItsClock(client, 1500);
    expect(waits).toEqual([1000, 500]);
    expect(result.status).toBe('PROCESSED');
    expect(onResult).toHaveBeenCalledWith({ workflowExecutionId: 'wf-1' }, { signal: expect.any(AbortSignal) });
  });

  it('onResult: a final status other than PROCESSED ends the wait at once and is result_not_ready for onError; without onError it still answers', async () => {
    const { client, calls } = stubClient({ status: async () => 'SESSION_EXPIRED' });
    const waits: number[] = [];
    const errors: unknown[] = [];
    const onResult = vi.fn();
    const result = await checkOfCustomerC(client, {
      workflowKey: 1,
      onResult,
      onError: (e) => errors.push(e),
      resultWaitMs: 5000,
      sleep: async (ms) => void waits.push(ms),
    });
    expect(result.status).toBe('SESSION_EXPIRED');
    expect(waits).toEqual([]);
    expect(onResult).not.toHaveBeenCalled();
    expect(errors).toEqual([expect.objectContaining({ code: 'result_not_ready', operation: 'result' })]);
    expect(calls.some((c) => c.startsWith('details'))).toBe(false);
    await expect(checkOfCustomerC(client, { workflowKey: 1, onResult, resultWaitMs: 0 })).resolves.toMatchObject({
      status: 'SESSION_EXPIRED',
    });
  });

  it('onResult with a status read failing meanwhile keeps the last status it read', async () => {
    const answers: Array<string | Error> = ['FINALIZED', new Error('blip'), 'PROCESSED'];
    const { client } = stubClient({
      status: async () => {
        const next = answers.shift() ?? 'PROCESSED';
        if (next instanceof Error) throw next;
        return next;
      },
    });
    const { result, onResult } = await checkOnItsClock(client, 5000);
    expect(result.status).toBe('PROCESSED');
    expect(onResult).toHaveBeenCalledTimes(1);
  });

  it('the handler passes onResult and resultWaitMs on, and its own onError', async () => {
    const statuses = ['FINALIZED'];
    const { client } = stubClient({ status: async () => statuses.shift() ?? 'PROCESSED' });
    const onResult = vi.fn();
    const response = await handlerWith(client, { onResult, resultWaitMs: 50 })(post({ blackbox: BLACKBOX }));
    expect(response.status).toBe(200);
    expect(onResult).toHaveBeenCalledTimes(1);
    const errors: unknown[] = [];
    const never = stubClient({ status: async () => 'FINALIZED' });
    await handlerWith(never.client, { onResult, onError: (e) => errors.push(e) })(post({ blackbox: BLACKBOX }));
    expect(errors).toEqual([expect.objectContaining({ code: 'result_not_ready' })]);
  });

  it('an onResult that hangs past onResultTimeoutMs: the browser still gets its answer, its signal aborts, onError hears result_handler_timeout', async () => {
    const { client } = stubClient();
    const errors: { code?: string }[] = [];
    let seen: AbortSignal | undefined;
    const response = await handlerWith(client, {
      onResult: (_details, { signal }) => {
        seen = signal;
        return new Promise<void>(() => {});
      },
      onResultTimeoutMs: 30,
      onError: (e) => void errors.push(e as { code?: string }),
    })(post({ blackbox: BLACKBOX }));
    expect(response.status).toBe(200);
    expect(seen!.aborted).toBe(true);
    expect(errors.map((e) => e.code)).toEqual(['result_handler_timeout']);
  });
});

describe('idempotency keys on the stub', () => {
  it("keys of one client are apart from another client's in a shared store", async () => {
    const { createMemoryStore } = await import('../../../src/server/index.js');
    const store = createMemoryStore();
    const a = stubClient({ clientId: 'client-a' });
    const b = stubClient({ clientId: 'client-b' });
    expect((await handlerWith(a.client, { store })(post({ blackbox: BLACKBOX }))).status).toBe(200);
    expect((await handlerWith(b.client, { store })(post({ blackbox: BLACKBOX }))).status).toBe(200);
    expect(a.calls.filter((c) => c.startsWith('create'))).toHaveLength(1);
    expect(b.calls.filter((c) => c.startsWith('create'))).toHaveLength(1);
  });

  it('a finished key answers its stored result without a call; another body is 422 idempotency_key_reused', async () => {
    const { client, calls } = stubClient();
    const handler = handlerWith(client);
    const first = await (await handler(post({ blackbox: BLACKBOX }))).json();
    const count = calls.length;
    expect(await (await handler(post({ blackbox: BLACKBOX }))).json()).toEqual(first);
    expect(calls.length).toBe(count);
    const other = await handler(post({ blackbox: BLACKBOX.replace('abc', 'abd') }));
    expect([other.status, await codeOf(other)]).toEqual([422, 'idempotency_key_reused']);
  });

  it('a recorded transaction is resumed: the status decides whether the blackbox is already there', async () => {
    for (const [status, uploads] of [
      ['INITIATED', 1],
      ['FINALIZED', 0],
    ] as const) {
      const store = (await import('../../../src/server/index.js')).createMemoryStore();
      let failUpload = true;
      const { client, calls } = stubClient({
        uploadBlackbox: async () => {
          if (failUpload) throw new DeviceRiskError('network_error', 'x');
        },
        status: async () => status,
      });
      calls.length = 0;
      const handler = handlerWith(client, { store });
      expect((await handler(post({ blackbox: BLACKBOX }))).status).toBe(503);
      failUpload = false;
      const uploaded: string[] = [];
      client.uploadBlackbox = async (tx) => void uploaded.push(tx.workflowExecutionId);
      expect((await handler(post({ blackbox: BLACKBOX }))).status).toBe(200);
      expect(uploaded, status).toHaveLength(uploads);
      expect(calls.filter((c) => c.startsWith('create'))).toHaveLength(1);
    }
  });
});
