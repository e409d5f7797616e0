// The integrator endpoint (createDeviceRiskHandler) against the emulator.
import { describe, expect, it } from 'vitest';
import { createManualClock, type Emulator, type EmulatorOptions } from '../../../src/emulator/index.js';
import { isPermanent } from '../../../src/server/endpoint/failure-answer.js';
import {
  createDeviceRiskHandler,
  createMemoryQueue,
  createMemoryStore,
  type DeviceRiskHandlerOptions,
  type Store,
} from '../../../src/server/index.js';
// The endpoint's run of the check, resumable (progress), which the package does not export.
import { runCheck as runDeviceRiskCheck, type DeviceRiskProgress } from '../../../src/server/endpoint/check.js';
import { BLACKBOX, blackboxOf, clientOn, handlerOn, oneAttempt, SHOP, useEmulators } from '../../support/kit.js';

const startEmulator = useEmulators();
let emulator: Emulator;

async function setup(options: EmulatorOptions = {}, extra: Partial<DeviceRiskHandlerOptions> = {}) {
  emulator = await startEmulator(options);
  const errors: unknown[] = [];
  const handler = handlerOn(emulator, {
    client: oneAttempt(),
    resolveCustomer: (request) => {
      const user = request.headers.get('x-test-user');
      return user
        ? { customerInternalReference: `cust-${user}`, userReference: user }
        : new Response('{"error":"login"}', { status: 401 });
    },
    onError: (e) => errors.push(e),
    ...extra,
  });
  return { handler, errors };
}

const post = (body: unknown, headers: Record<string, string> = {}) =>
  new Request('https://shop.example/device-risk', {
    method: 'POST',
    headers: {
      origin: SHOP,
      'content-type': 'application/json',
      'x-test-user': 'u1',
      'idempotency-key': 'key-0000000001',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('createDeviceRiskHandler', () => {
  it('token, account, upload, finalize: answers the ids and the status', async () => {
    const { handler } = await setup();
    const response = await handler(post({ blackbox: BLACKBOX }));
    expect(response.status).toBe(200);
    const body = (await response.json()) as { accountId: string; workflowExecutionId: string; status: string };
    expect(body.status).toBe('PROCESSED');
    expect(emulator.inspect.transaction(body.workflowExecutionId)).toMatchObject({
      accountId: body.accountId,
      blackboxes: [BLACKBOX],
      customerInternalReference: 'cust-u1',
      userReference: 'u1',
    });
  });

  it.each([
    ['a GET', new Request('https://shop.example/device-risk', { headers: { origin: SHOP } }), 405],
    ['no Origin', post({ blackbox: BLACKBOX }, { origin: '' }), 403],
    ['a foreign Origin', post({ blackbox: BLACKBOX }, { origin: 'https://evil.example' }), 403],
    ['a form body', post('blackbox=' + BLACKBOX, { 'content-type': 'application/x-www-form-urlencoded' }), 415],
    ['invalid JSON', post('{blackbox:'), 400],
    ['no blackbox', post({ sessionId: BLACKBOX }), 400],
    ['a blackbox that is not a string', post({ blackbox: 5 }), 400],
    ['a blackbox with a character no repair explains', post({ blackbox: BLACKBOX.replace('+', '<') }), 400],
    ['a blackbox of 8002 characters', post({ blackbox: 'A'.repeat(8002) }), 400],
    ['a body over 16 KB', post({ blackbox: BLACKBOX, pad: 'x'.repeat(17 * 1024) }), 413],
    ['a malformed Idempotency-Key', post({ blackbox: BLACKBOX }, { 'idempotency-key': 'short' }), 400],
  ])('refuses %s', async (_, request, status) => {
    const { handler } = await setup();
    const response = await handler(request);
    expect(response.status).toBe(status);
    expect(emulator.inspect.requests('accountCreate')).toBe(0);
    if (status !== 405)
      expect(((await response.json()) as { error: { code: string } }).error.code).toEqual(expect.any(String));
  });

  it('repairs a blackbox damaged on its way (spaces for "+"), uploads the original, and tells onRepair', async () => {
    const repairs: unknown[] = [];
    const { handler } = await setup({}, { onRepair: (r) => repairs.push(r) });
    const response = await handler(post({ blackbox: BLACKBOX.replace(/\+/g, ' ') }));
    expect(response.status).toBe(200);
    expect(emulator.inspect.transactions()[0]!.blackboxes).toEqual([BLACKBOX]);
    expect(repairs).toEqual([['spaces_for_plus']]);
  });

  it('a damage no repair can undo is 400 blackbox_damaged, before any call', async () => {
    const { handler } = await setup();
    const response = await handler(post({ blackbox: BLACKBOX.slice(0, 40) + '%E0%A4%A' }));
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'blackbox_damaged' } });
    expect(emulator.inspect.requests('token')).toBe(0);
  });

  it('lets the hook refuse the request', async () => {
    const { handler } = await setup();
    const response = await handler(post({ blackbox: BLACKBOX }, { 'x-test-user': '' }));
    expect(response.status).toBe(401);
    expect(emulator.inspect.requests('token')).toBe(0);
  });

  it('the same Idempotency-Key never makes a second transaction', async () => {
    const { handler } = await setup();
    const first = await (await handler(post({ blackbox: BLACKBOX }))).json();
    const again = await (await handler(post({ blackbox: BLACKBOX }))).json();
    expect(again).toEqual(first);
    expect(emulator.inspect.transactions()).toHaveLength(1);
    // Concurrent duplicates share one run too.
    const both = await Promise.all([
      handler(post({ blackbox: blackboxOf('2') }, { 'idempotency-key': 'key-0000000002' })),
      handler(post({ blackbox: blackboxOf('2') }, { 'idempotency-key': 'key-0000000002' })),
    ]);
    expect(await both[0].json()).toEqual(await both[1].json());
    expect(emulator.inspect.transactions()).toHaveLength(2);
  });

  it("on two instances sharing a store, a concurrent duplicate waits for the owner's answer; another body with the key is 422 at once", async () => {
    const store = createMemoryStore();
    const { handler: a } = await setup({}, { store });
    emulator.faults.latency('accountCreate', 300); // the owner is still at work while the other instance looks
    const b = handlerOn(emulator, {
      client: { maxAttempts: 1, sleep: async () => {} },
      store,
      resolveCustomer: () => ({ customerInternalReference: 'cust-u1', userReference: 'u1' }),
    });
    const same = await Promise.all([
      a(post({ blackbox: BLACKBOX }, { 'idempotency-key': 'fleet-key-001' })),
      b(post({ blackbox: BLACKBOX }, { 'idempotency-key': 'fleet-key-001' })),
    ]);
    expect(same.map((r) => r.status)).toEqual([200, 200]);
    expect(await same[1].json()).toEqual(await same[0].json());
    expect(emulator.inspect.transactions()).toHaveLength(1);
    const other = await Promise.all([
      a(post({ blackbox: BLACKBOX }, { 'idempotency-key': 'fleet-key-002' })),
      b(post({ blackbox: BLACKBOX.replace('abc', 'abd') }, { 'idempotency-key': 'fleet-key-002' })),
    ]);
    expect(other.map((r) => r.status).sort()).toEqual([200, 422]);
    expect(emulator.inspect.transactions()).toHaveLength(2);
  });

  it("a key is bound to customer and blackbox apart: a customer reference that absorbs the start of another's blackbox is still another request", async () => {
    const { handler } = await setup();
    expect((await handler(post({ blackbox: '0400' + BLACKBOX }))).status).toBe(200);
    // 'cust-u1' + '0400' + BLACKBOX and 'cust-u10400' + BLACKBOX run together the same.
    const shifted = await handler(post({ blackbox: BLACKBOX }, { 'x-test-user': 'u10400' }));
    expect(shifted.status).toBe(422);
    expect(emulator.inspect.transactions()).toHaveLength(1);
  });

  it('another customer cannot reuse a key (422, as for another body)', async () => {
    const { handler } = await setup();
    await handler(post({ blackbox: BLACKBOX }));
    const refused = await handler(post({ blackbox: BLACKBOX }, { 'x-test-user': 'u2' }));
    expect(refused.status).toBe(422);
    expect(await refused.json()).toMatchObject({ error: { code: 'idempotency_key_reused' } });
  });

  it('upstream failure: 503 with Retry-After; the retry resumes the same transaction', async () => {
    const { handler, errors } = await setup();
    emulator.faults.fail('upload', { times: 1, status: 503 });
    const failed = await handler(post({ blackbox: BLACKBOX }));
    expect(failed.status).toBe(503);
    expect(failed.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(errors).toHaveLength(1);
    const retried = await handler(post({ blackbox: BLACKBOX }));
    expect(retried.status).toBe(200);
    expect(emulator.inspect.transactions()).toHaveLength(1);
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
    expect(emulator.inspect.transactions()[0]!.status).toBe('PROCESSED');
    // The service said INITIATED when asked: the upload that failed is made, once.
    expect(emulator.inspect.transactions()[0]!.blackboxes).toEqual([BLACKBOX]);
  });

  it('a token service outage is 503 too, and nothing leaks into the answer', async () => {
    const { handler } = await setup({ clientSecret: 'the-real-secret' });
    emulator.faults.fail('token', { times: 10, status: 503 });
    const response = await handler(post({ blackbox: BLACKBOX }));
    expect(response.status).toBe(503);
    expect(await response.text()).not.toMatch(/secret|Bearer|Basic/i);
  });

  it('a permanent upstream 4xx comes back as that 4xx, without Retry-After, so that the browser does not retry', async () => {
    const { handler } = await setup({ workflows: { '1': { deviceRisk: true } } });
    const response = await handler(post({ blackbox: BLACKBOX }));
    expect(response.status).toBe(400);
    expect(response.headers.get('retry-after')).toBeNull();
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('request_rejected');
  });

  it('a customer reference the service would refuse is a 422 before any call, without Retry-After', async () => {
    const { handler } = await setup({}, { resolveCustomer: () => ({ customerInternalReference: 'order<1>' }) });
    const response = await handler(post({ blackbox: BLACKBOX }));
    expect(response.status).toBe(422);
    expect(response.headers.get('retry-after')).toBeNull();
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_account_request');
    expect(emulator.inspect.requests('accountCreate')).toBe(0);
  });

  it('slow account creates retried by the browser make one transaction per key, however the other calls are limited', async () => {
    // Creates slower than the limit of the other calls are not abandoned. The limit is long
    // enough for the other calls on a busy machine.
    emulator = await startEmulator();
    emulator.faults.latency('accountCreate', 2_500);
    const handler = handlerOn(emulator, {
      client: {
        timeoutMs: 2_000,
        sleep: async () => {},
        // The emulator's account limit is off: so is the client's (8 creates at once).
        limits: { accountRequestsPerSecond: 100, accountBurst: 100 },
      },
      resolveCustomer: () => ({ customerInternalReference: 'cust-1' }),
      // 16 posts of one customer at once: idempotency under load, not admission, is tested here.
      checkoutsPerCustomer: false,
      // Each retry waits for its first attempt's answer, however slow a busy machine makes it
      // (the default 5 s is less than 2.5 s of latency and the rest, on a loaded CI machine).
      idempotencyWaitMs: 25_000,
    });
    const keys = Array.from({ length: 8 }, (_, i) => `slow-key-000${i}`);
    // Each key is sent, then sent again while the first is still running (a browser retry).
    const answers = await Promise.all(
      keys.flatMap((key) => [
        handler(post({ blackbox: blackboxOf(key) }, { 'idempotency-key': key })),
        handler(post({ blackbox: blackboxOf(key) }, { 'idempotency-key': key })),
      ]),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(16).fill(200));
    expect(emulator.inspect.requests('accountCreate')).toBe(keys.length);
  }, 30_000); // 2.5 s of latency by design, and a busy machine

  it('a store briefly away after the upload is waited for: the progress is recorded, one attempt, one upload', async () => {
    let failures = 2;
    const memory = createMemoryStore();
    // Progress is written by compare-and-set (an attempt replaces only its own last version).
    const store: Store = {
      ...memory,
      compareAndSet: async (key, expected, value, ttl) => {
        if (value.includes('"uploaded":true') && failures > 0) {
          failures--;
          throw new Error('store away');
        }
        return memory.compareAndSet(key, expected, value, ttl);
      },
    };
    const { handler } = await setup({}, { store });
    expect((await handler(post({ blackbox: BLACKBOX }))).status).toBe(200);
    expect(failures).toBe(0);
    expect(emulator.inspect.requests('upload')).toBe(1);
  });

  it('an upload the store never heard of is not repeated: the retry asks the service, which has the blackbox', async () => {
    const memory = createMemoryStore();
    let storeDown = false;
    const store: Store = {
      ...memory,
      compareAndSet: async (key, expected, value, ttl) => {
        if (value.includes('"uploaded":true')) storeDown = true;
        if (storeDown) throw new Error('store away');
        return memory.compareAndSet(key, expected, value, ttl);
      },
    };
    // A short lease, so that the retry soon asks the service; long enough that a busy machine's
    // first attempt keeps it to its end (which a lease lapsed mid-way answers 409).
    const { handler, errors } = await setup({}, { store, idempotencyLeaseMs: 1_500 });
    const first = await handler(post({ blackbox: BLACKBOX }));
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('1');
    expect(errors).toContainEqual(expect.objectContaining({ code: 'store_unavailable' }));
    storeDown = false;
    store.compareAndSet = memory.compareAndSet;
    expect((await handler(post({ blackbox: BLACKBOX }))).status).toBe(200);
    expect(emulator.inspect.requests('upload')).toBe(1);
    expect(emulator.inspect.transactions()).toHaveLength(1);
    expect(emulator.inspect.transactions()[0]!.blackboxes).toEqual([BLACKBOX]);
  });

  it('queued: a status read refused after finalize comes back with the job; one transaction, the decision told once', async () => {
    emulator = await startEmulator();
    const queue = createMemoryQueue();
    const decided: string[] = [];
    const errors: unknown[] = [];
    const handler = handlerOn(emulator, {
      client: oneAttempt({ retrievalBaseUrl: emulator.retrievalUrl }),
      answer: 'accepted',
      queue,
      resolveCustomer: () => ({ customerInternalReference: 'order-1' }),
      onError: (error) => errors.push(error),
      onResult: (details) => void decided.push(details.workflowExecutionId),
    });
    emulator.faults.fail('retrievalStatus', { times: 1, status: 503 });
    expect((await handler(post({ blackbox: BLACKBOX }))).status).toBe(202);
    await queue.idle();
    const [tx, ...more] = emulator.inspect.transactions();
    expect(more).toEqual([]);
    expect(tx!.blackboxes).toHaveLength(1);
    expect(decided).toEqual([tx!.workflowExecutionId]);
    expect(errors).toMatchObject([{ status: 503, operation: 'status' }]);
    await handler.close();
  });

  it('updates an existing account when the hook names one', async () => {
    const { handler } = await setup();
    const first = (await (await handler(post({ blackbox: BLACKBOX }))).json()) as { accountId: string };
    const second = handlerOn(emulator, {
      client: { sleep: async () => {} },
      resolveCustomer: () => ({ customerInternalReference: 'cust-u1', accountId: first.accountId }),
    });
    const body = (await (
      await second(post({ blackbox: BLACKBOX }, { 'idempotency-key': 'key-0000000003' }))
    ).json()) as { accountId: string };
    expect(body.accountId).toBe(first.accountId);
    expect(emulator.inspect.requests('accountUpdate')).toBe(1);
  });

  it('uploads to an existing transaction when the hook names one, with no account call', async () => {
    emulator = await startEmulator();
    const client = clientOn(emulator, { sleep: async () => {} });
    const transaction = await client.createAccount({
      customerInternalReference: 'cust-u1',
      workflowDefinition: { key: 10020 },
    });
    const handler = handlerOn(emulator, {
      client,
      workflowKey: undefined, // the transaction names its workflow
      resolveCustomer: () => ({ customerInternalReference: 'cust-u1', transaction }),
    });
    const body = (await (await handler(post({ blackbox: BLACKBOX }))).json()) as {
      workflowExecutionId: string;
      status: string;
    };
    expect(body).toMatchObject({ workflowExecutionId: transaction.workflowExecutionId, status: 'PROCESSED' });
    expect(emulator.inspect.requests('accountCreate')).toBe(1); // only the integrator's own
  });

  it('refuses to start without allowed origins', () => {
    expect(() =>
      createDeviceRiskHandler({
        client: {},
        answer: 'checked',
        allowedOrigins: [],
        resolveCustomer: () => ({ customerInternalReference: 'x' }),
      } as never),
    ).toThrow(/allowedOrigins/);
  });
});

describe('runDeviceRiskCheck (a form post or your own route)', () => {
  async function client() {
    emulator = await startEmulator();
    return clientOn(emulator, { maxAttempts: 1, sleep: async () => {} });
  }

  it('creates the account, uploads, finalizes and reads the status', async () => {
    const result = await runDeviceRiskCheck(await client(), BLACKBOX, {
      customerInternalReference: 'cust-form',
      workflowKey: 10020,
    });
    expect(result.status).toBe('PROCESSED');
    expect(emulator.inspect.transaction(result.workflowExecutionId)).toMatchObject({
      accountId: result.accountId,
      blackboxes: [BLACKBOX],
    });
  });

  it('refuses to run without a workflow key, before any call', async () => {
    const check = runDeviceRiskCheck(await client(), BLACKBOX, { customerInternalReference: 'cust-form' });
    await expect(check).rejects.toMatchObject({ code: 'invalid_configuration' });
    expect(emulator.inspect.requests('accountCreate')).toBe(0);
  });

  /** A check whose finalize the service refuses once (503): it fails upstream_error, its client and progress kept for the next attempt. */
  async function finalizeRefusedOnce() {
    const c = await client();
    const progress: DeviceRiskProgress = {};
    emulator.faults.fail('finalize', { times: 1, status: 503 });
    await expect(
      runDeviceRiskCheck(c, BLACKBOX, { customerInternalReference: 'cust-form' }, { workflowKey: 10020, progress }),
    ).rejects.toMatchObject({ code: 'upstream_error', operation: 'finalize', status: 503 });
    return { c, progress };
  }

  it('resumes from its progress: one transaction, one upload', async () => {
    const { c, progress } = await finalizeRefusedOnce();
    expect(progress.uploaded).toBe(true);
    const result = await runDeviceRiskCheck(
      c,
      BLACKBOX,
      { customerInternalReference: 'cust-form' },
      { workflowKey: 10020, progress },
    );
    expect(result.workflowExecutionId).toBe(progress.transaction!.workflowExecutionId);
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
    expect(emulator.inspect.transaction(result.workflowExecutionId)).toMatchObject({
      blackboxes: [BLACKBOX],
      status: 'PROCESSED',
    });
  });

  it('a transaction token that lapsed before the upload: a fresh transaction, and the blackbox uploaded to it', async () => {
    const c = await client();
    const progress: DeviceRiskProgress = {};
    emulator.faults.fail('upload', { times: 1, status: 400 });
    await expect(
      runDeviceRiskCheck(c, BLACKBOX, { customerInternalReference: 'cust-form' }, { workflowKey: 10020, progress }),
    ).rejects.toMatchObject({ operation: 'upload' });
    expect(progress.uploaded).toBeFalsy();
    const first = progress.transaction!.workflowExecutionId;
    const expiresAt = progress.transaction!.tokenExpiresAt;
    // Past the first transaction's token for the check; the new transaction's is fresh.
    const now = () => (progress.transaction?.workflowExecutionId === first ? expiresAt + 1 : Date.now());
    const result = await runDeviceRiskCheck(
      c,
      BLACKBOX,
      { customerInternalReference: 'cust-form' },
      { workflowKey: 10020, progress, now },
    );
    expect(result.workflowExecutionId).not.toBe(first);
    expect(emulator.inspect.transaction(result.workflowExecutionId)).toMatchObject({
      blackboxes: [BLACKBOX],
      status: 'PROCESSED',
    });
  });

  it('a transaction token that lapsed after the upload: never a second execution of the blackbox; expired, final', async () => {
    const clock = createManualClock();
    emulator = await startEmulator({ clock });
    const c = clientOn(emulator, { maxAttempts: 1, sleep: async () => {} });
    const progress: DeviceRiskProgress = {};
    emulator.faults.fail('finalize', { times: 1, status: 503 });
    await expect(
      runDeviceRiskCheck(c, BLACKBOX, { customerInternalReference: 'cust-form' }, { workflowKey: 10020, progress }),
    ).rejects.toMatchObject({ code: 'upstream_error', operation: 'finalize' });
    expect(progress.uploaded).toBe(true);
    const first = progress.transaction!.workflowExecutionId;
    const expiresAt = progress.transaction!.tokenExpiresAt;
    const later = () => expiresAt + 1;
    clock.set(expiresAt + 1);
    const error = await runDeviceRiskCheck(
      c,
      BLACKBOX,
      { customerInternalReference: 'cust-form' },
      { workflowKey: 10020, progress, now: later },
    ).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'workflow_expired', operation: 'finalize' });
    expect(isPermanent(error)).toBe(true);
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
    expect(progress.transaction!.workflowExecutionId).toBe(first);
    expect(['SESSION_EXPIRED', 'TOKEN_EXPIRED']).toContain(emulator.inspect.transaction(first)?.status);
  });

  describe('what the tests built without Content-Length or Idempotency-Key never saw', () => {
    /** A real request through the Node adapter: Content-Length as a browser sends it. */
    async function overSocket(
      handler: (request: Request) => Promise<Response>,
      body: string,
      headers: Record<string, string> = {},
    ) {
      const { createServer, request: httpRequest } = await import('node:http');
      const { toNodeHandler } = await import('../../../src/server/index.js');
      const server = createServer(toNodeHandler(handler));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const { port } = server.address() as { port: number };
      try {
        return await new Promise<{ status: number; body: string }>((resolve, reject) => {
          const req = httpRequest(
            {
              hostname: '127.0.0.1',
              port,
              path: '/device-risk',
              method: 'POST',
              headers: { origin: SHOP, 'content-type': 'application/json', 'x-test-user': 'u1', ...headers },
            },
            (res) => {
              let text = '';
              res.on('data', (c) => (text += c)).on('end', () => resolve({ status: res.statusCode!, body: text }));
            },
          );
          req.on('error', reject).end(body);
        });
      } finally {
        server.closeAllConnections();
        server.close();
      }
    }

    it('a real request with Content-Length within the limit is accepted', async () => {
      const { handler } = await setup();
      const body = JSON.stringify({ blackbox: BLACKBOX });
      const answer = await overSocket(handler, body, {
        'content-length': String(Buffer.byteLength(body)),
        'idempotency-key': 'key-socket-0001',
      });
      expect(answer.status).toBe(200);
    });

    it('a declared Content-Length over the limit is 413 before the body is read', async () => {
      const { handler } = await setup({}, { maxBodyBytes: 100 });
      const body = JSON.stringify({ blackbox: BLACKBOX });
      const answer = await overSocket(handler, body, { 'content-length': String(Buffer.byteLength(body)) });
      expect(answer.status).toBe(413);
      expect(emulator.inspect.requests('accountCreate')).toBe(0);
    });

    it('POSTs without an Idempotency-Key each run their own check', async () => {
      const { handler } = await setup();
      const first = await handler(post({ blackbox: BLACKBOX }, { 'idempotency-key': '' }));
      const noKey = (blackbox: string) =>
        new Request('https://shop.example/device-risk', {
          method: 'POST',
          headers: { origin: SHOP, 'content-type': 'application/json', 'x-test-user': 'u1' },
          body: JSON.stringify({ blackbox }),
        });
      const second = await handler(noKey(BLACKBOX));
      const third = await handler(noKey(blackboxOf('third')));
      expect(first.status).toBe(400); // an empty key is malformed
      expect([second.status, third.status]).toEqual([200, 200]);
      const ids = [
        (await second.json()) as { workflowExecutionId: string },
        (await third.json()) as { workflowExecutionId: string },
      ].map((b) => b.workflowExecutionId);
      expect(new Set(ids).size).toBe(2);
      expect(emulator.inspect.requests('accountCreate')).toBe(2);
    });

    it('a handler without onError still answers an upstream failure', async () => {
      emulator = await startEmulator();
      const handler = handlerOn(emulator, {
        client: { maxAttempts: 1 },
        resolveCustomer: () => ({ customerInternalReference: 'c-1' }),
      });
      emulator.faults.fail('upload', { times: 1, status: 500 });
      const response = await handler(post({ blackbox: BLACKBOX }));
      expect(response.status).toBe(502);
    });

    it.each([
      ['a 429 with its Retry-After', { status: 429 }, 503, '1'],
      ['a 503 with its Retry-After', { status: 503 }, 503, '1'],
      ['a 500 (no Retry-After: the default 2 s)', { status: 500 }, 502, '2'],
      ['a 502', { status: 502 }, 502, '2'],
      ['a dropped connection', { drop: true }, 503, '2'],
    ])('upstream trouble: %s is %i with Retry-After %s', async (_, fault, status, retryAfter) => {
      const { handler } = await setup();
      emulator.faults.fail('upload', { times: 5, ...fault });
      const response = await handler(post({ blackbox: BLACKBOX }));
      expect(response.status).toBe(status);
      expect(response.headers.get('retry-after')).toBe(retryAfter);
    });

    it('a Retry-After over a minute is capped at 60 for the browser', async () => {
      const { handler } = await setup({}, {});
      const client = clientOn(emulator, {
        maxAttempts: 1,
        fetch: (async (url: string, init: RequestInit) =>
          String(url).includes('/parts/')
            ? new Response('{}', { status: 429, headers: { 'retry-after': '3600' } })
            : fetch(url, init)) as typeof fetch,
      });
      const capped = handlerOn(emulator, {
        client,
        resolveCustomer: () => ({ customerInternalReference: 'c-1' }),
      });
      void handler;
      const response = await capped(post({ blackbox: BLACKBOX }));
      expect([response.status, response.headers.get('retry-after')]).toEqual([503, '60']);
    });
  });
});
