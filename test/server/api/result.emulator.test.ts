// The Device Risk answer: workflow details, polling on the documented schedule, and the
// callback receiver, against the emulator.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createManualClock, startEmulator, type Emulator, type EmulatorOptions } from '../../../src/emulator/index.js';
import {
  createCallbackHandler,
  createDeviceRiskClient,
  createMemoryStore,
  createTokenSource,
  toNodeHandler,
  type CallbackHandlerOptions,
  type CallbackResult,
  type DeviceRiskClient,
  type DeviceRiskTransaction,
} from '../../../src/server/index.js';
import { callbackNamespace, recordKey } from '../../../src/server/callbacks/record.js';
import type { CallbackBody } from '../../../src/server/callbacks/types.js';
import { closeServers, jsonReceiver, serve } from '../../support/http.js';
import { untilAborted } from '../../support/until-aborted.js';

const UA = 'AcmeShop Checkout/1.0';
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';
let emulator: Emulator;
const handlers: Array<{ close(): void | Promise<void> }> = [];
afterEach(async () => {
  for (const handler of handlers.splice(0)) await handler.close();
  await closeServers();
  await emulator?.close();
});

/** A blackbox as the emulator's collection scripts write it, with these sources. */
function emulatedBlackbox(sources: string[], ua = CHROME): string {
  const parts: Record<string, string> = {};
  for (const source of sources)
    parts[source] =
      JSON.stringify({ s: source, ...(source === 'fp_dyn' ? { ua, lang: 'de-CH,de;q=0.9' } : {}) }) +
      '|' +
      'x'.repeat(200);
  return '0400' + Buffer.from(JSON.stringify({ v: '5.2.2', s: sources, p: parts, m: '~~~???' })).toString('base64');
}

const waits: number[] = [];
async function setup(options: EmulatorOptions = {}, sleep?: (ms: number, signal?: AbortSignal) => Promise<void>) {
  emulator = await startEmulator({ accountRequestsPerSecond: 0, ...options });
  waits.length = 0;
  const tokenSource = createTokenSource({
    clientId: emulator.clientId,
    clientSecret: emulator.clientSecret,
    tokenUrl: emulator.tokenUrl,
    userAgent: UA,
    sleep: async () => {},
  });
  return createDeviceRiskClient({
    tokenSource,
    ...emulator.serviceUrls,
    userAgent: UA,
    maxAttempts: 1,
    sleep:
      sleep ??
      (async (ms, signal) => {
        waits.push(ms);
        if (signal?.aborted) throw signal.reason;
      }),
  });
}

async function processed(
  client: DeviceRiskClient,
  blackbox: string,
  extra: Record<string, unknown> = {},
): Promise<DeviceRiskTransaction> {
  const tx = await client.createAccount({
    customerInternalReference: 'order-1',
    workflowDefinition: { key: 10011 },
    ...extra,
  });
  await client.uploadBlackbox(tx, blackbox);
  await client.finalize(tx);
  return tx;
}

describe('client.details: the decision from the retrieval API', () => {
  it('every source: PASSED, with the device the vendor saw', async () => {
    const client = await setup();
    const details = await client.details(await processed(client, emulatedBlackbox(['fp_static', 'fp_dyn', 'tp'])));
    expect(details).toMatchObject({
      status: 'PROCESSED',
      decision: { type: 'PASSED', label: 'OK' },
      deviceRisk: { decision: { type: 'PASSED' }, alerts: [] },
    });
    expect(details.deviceRisk!.device).toMatchObject({
      browser: 'Chrome',
      browserVersion: '156.0.0.0',
      deviceOS: 'Linux',
      browserLanguage: 'de-CH',
    });
    expect(details.raw).toMatchObject({ workflow: { status: 'PROCESSED', customerInternalReference: 'order-1' } });
    // The order's reference, read out of the workflow for onResult.
    expect(details.customerInternalReference).toBe('order-1');
    expect(details.userReference).toBeUndefined();
    expect(emulator.inspect.requests('details')).toBe(1);
  });

  it.each([
    ['first party only (third party blocked)', ['fp_static', 'fp_dyn'], /Third-party collection missing/],
    ['third party only (proxy broken)', ['tp'], /First-party collection missing/],
  ])('%s: WARNING with an alert naming it', async (_, sources, alert) => {
    const client = await setup();
    const details = await client.details(await processed(client, emulatedBlackbox(sources)));
    expect(details.decision.type).toBe('WARNING');
    expect(details.deviceRisk!.decision.type).toBe('WARNING');
    expect(details.deviceRisk!.alerts.join(' ')).toMatch(alert);
  });

  it('a forced decision, and labels and types the service adds later, pass through as they are', async () => {
    const client = await setup();
    emulator.decide('order-1', {
      type: 'REJECTED',
      label: 'HIGH_RISK',
      alerts: ['Device Risk Global', 'IP Mismatch'],
      score: 97,
    });
    const rejected = await client.details(await processed(client, emulatedBlackbox(['fp_static', 'fp_dyn', 'tp'])));
    expect(rejected).toMatchObject({
      decision: { type: 'REJECTED', label: 'HIGH_RISK', score: 97 },
      deviceRisk: { decision: { type: 'REJECTED', label: 'HIGH_RISK' }, alerts: ['Device Risk Global', 'IP Mismatch'] },
    });
    emulator.decide('next', { type: 'TOTALLY_NEW_TYPE', label: 'A_LABEL_FROM_TOMORROW' });
    const unknown = await client.details(
      await processed(client, emulatedBlackbox(['tp']), { customerInternalReference: 'order-2' }),
    );
    // A type the emulator knows no score for: the middle of the scale (never -1, NOT_EXECUTED's).
    expect(unknown.decision).toEqual({ type: 'TOTALLY_NEW_TYPE', label: 'A_LABEL_FROM_TOMORROW', score: 50 });
  });

  it('refuses ids that are not UUIDs before any request', async () => {
    const client = await setup();
    await expect(client.details({ accountId: '../x', workflowExecutionId: 'y' })).rejects.toMatchObject({
      code: 'invalid_configuration',
    });
    expect(emulator.inspect.requests('details')).toBe(0);
  });
});

describe('client.waitForResult: the documented polling schedule', () => {
  const SCHEDULE_WAITS = [40, 20, 40, 60, 80, 100, 120, 140, 160, 180].map((s) => s * 1000);

  it('reads at 40 s after the upload and answers the details once PROCESSED', async () => {
    const client = await setup();
    const tx = await processed(client, emulatedBlackbox(['fp_static', 'fp_dyn', 'tp']));
    const details = await client.waitForResult(tx);
    expect(details.decision.type).toBe('PASSED');
    expect(waits).toEqual([40_000]);
    expect(emulator.inspect.requests('retrievalStatus')).toBe(1);
  });

  it('at most 10 reads, at 40, 60, 100 … 940 s, then result_not_ready', async () => {
    const client = await setup();
    const tx = await client.createAccount({ customerInternalReference: 'order-1', workflowDefinition: { key: 10011 } });
    await client.uploadBlackbox(tx, emulatedBlackbox(['tp'])); // never finalized: ACQUIRED for ever
    await expect(client.waitForResult(tx)).rejects.toMatchObject({ code: 'result_not_ready' });
    expect(waits).toEqual(SCHEDULE_WAITS);
    expect(emulator.inspect.requests('retrievalStatus')).toBe(10);
  });

  it.each([
    ['SESSION_EXPIRED', 16 * 60_000],
    ['TOKEN_EXPIRED', 31 * 60_000],
  ])('%s rejects with workflow_expired', async (status, advance) => {
    const clock = createManualClock();
    const client = await setup(
      { clock, sessionTimeoutMs: status === 'TOKEN_EXPIRED' ? 60 * 60_000 : 15 * 60_000 },
      async (ms) => {
        waits.push(ms);
        clock.advance(advance);
      },
    );
    const tx = await client.createAccount({ customerInternalReference: 'order-1', workflowDefinition: { key: 10011 } });
    await client.uploadBlackbox(tx, emulatedBlackbox(['tp']));
    await expect(client.waitForResult(tx)).rejects.toMatchObject({
      code: 'workflow_expired',
      message: expect.stringContaining(status),
    });
    expect(waits).toHaveLength(1);
  });

  it('an abort ends the wait with a typed aborted error carrying the reason', async () => {
    const client = await setup();
    const tx = await processed(client, emulatedBlackbox(['tp']));
    const controller = new AbortController();
    controller.abort(new Error('checkout closed'));
    await expect(client.waitForResult(tx, { signal: controller.signal })).rejects.toMatchObject({
      code: 'aborted',
      cause: { message: 'checkout closed' },
    });
    expect(emulator.inspect.requests('retrievalStatus')).toBe(0);
  });

  it('an abort during a wait ends it at once', async () => {
    const controller = new AbortController();
    const client = await setup({}, (_, signal) => untilAborted(signal));
    const tx = await processed(client, emulatedBlackbox(['tp']));
    const waiting = client.waitForResult(tx, { signal: controller.signal });
    controller.abort(new Error('gone'));
    await expect(waiting).rejects.toMatchObject({ code: 'aborted' });
  });

  it('takes a schedule of its own', async () => {
    const client = await setup();
    const tx = await client.createAccount({ customerInternalReference: 'order-1', workflowDefinition: { key: 10011 } });
    await client.uploadBlackbox(tx, emulatedBlackbox(['tp']));
    await expect(client.waitForResult(tx, { schedule: [1, 2, 5] })).rejects.toMatchObject({ code: 'result_not_ready' });
    expect(waits).toEqual([1000, 1000, 3000]);
  });
});

/** The handler on a real socket, as the service reaches it. */
async function receiver(client: DeviceRiskClient, extra: Partial<CallbackHandlerOptions> = {}) {
  const results: CallbackResult[] = [];
  const errors: unknown[] = [];
  const handler = createCallbackHandler({
    client,
    allowedSources: ['127.0.0.0/8', '::1'],
    onResult: (r) => void results.push(r),
    onError: (e) => errors.push(e),
    retryDelayMs: 5,
    ...extra,
  });
  handlers.push(handler);
  return { handler, results, errors, url: `${await serve(toNodeHandler(handler))}/callback` };
}

describe('createCallbackHandler', () => {
  const post = (url: string, body: unknown) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  it('the whole flow: the emulator calls back after finalize; onResult gets the details, once', async () => {
    const client = await setup();
    const { handler, results, url } = await receiver(client);
    const tx = await processed(client, emulatedBlackbox(['fp_static', 'fp_dyn', 'tp']), {
      callbackUrl: url,
      userReference: 'user-9',
    });
    await expect.poll(() => emulator.inspect.callbacks()[0]?.delivered).toBe(true);
    await handler.idle();
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({
      workflowExecutionId: tx.workflowExecutionId,
      status: 'PROCESSED',
      details: { decision: { type: 'PASSED' } },
      callback: { userReference: 'user-9' },
      customerInternalReference: 'order-1',
      userReference: 'user-9',
    });
  });

  it('duplicates and late copies call nothing twice', async () => {
    const client = await setup();
    const { handler, results, url } = await receiver(client);
    emulator.faults.callbacks({ duplicate: true });
    const tx = await processed(client, emulatedBlackbox(['tp']), { callbackUrl: url });
    await expect.poll(() => emulator.inspect.callbacks()[0]?.delivered).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    await handler.idle();
    const body = emulator.inspect.callbacks()[0]!.body;
    const late = await post(url, body);
    expect(await late.json()).toEqual({ received: true, duplicate: true });
    await handler.idle();
    expect(results.map((r) => r.workflowExecutionId)).toEqual([tx.workflowExecutionId]);
  });

  it('onResult throwing is retried from the store with backoff, and onError hears of it', async () => {
    const client = await setup();
    let calls = 0;
    const { handler, errors, url } = await receiver(client, {
      onResult: () => {
        if (++calls < 3) throw new Error('database down');
      },
    });
    await processed(client, emulatedBlackbox(['tp']), { callbackUrl: url });
    await expect
      .poll(
        async () => {
          await handler.idle();
          return calls;
        },
        { timeout: 3000 },
      )
      .toBe(3);
    expect(errors.map((e) => (e as Error).message)).toEqual(['database down', 'database down']);
  });

  it('on a shared store: a record left pending by a dead instance is taken over by the next copy once its retry is due; a leased one is not', async () => {
    const client = await setup();
    const store = createMemoryStore();
    const calls: string[] = [];
    let skipped = 0;
    const now = () => Date.now() + skipped;
    // Instance A records the callback, fails in onResult, and dies before its retry.
    const a = await receiver(client, {
      store,
      now,
      retryDelayMs: 60_000,
      onResult: () => {
        calls.push('a');
        throw new Error('database down');
      },
    });
    const b = await receiver(client, { store, now, onResult: () => void calls.push('b') });
    await processed(client, emulatedBlackbox(['tp']), { callbackUrl: a.url });
    await expect
      .poll(async () => {
        await a.handler.idle();
        return calls;
      })
      .toEqual(['a']);
    await a.handler.close();
    const body = emulator.inspect.callbacks()[0]!.body;
    // Before its retry is due, a copy keeps the backoff.
    await post(b.url, body);
    await b.handler.idle();
    expect(calls).toEqual(['a']);
    skipped = 60_000;
    // While someone holds the lease, a copy calls nothing.
    const leaseKey = `${recordKey(callbackNamespace(client.clientId), body as CallbackBody)}:lease`;
    await store.set(leaseKey, 'someone', 60_000);
    expect(await (await post(b.url, body)).json()).toEqual({ received: true, duplicate: true });
    await b.handler.idle();
    expect(calls).toEqual(['a']);
    await store.delete(leaseKey);
    await post(b.url, body);
    await b.handler.idle();
    expect(calls).toEqual(['a', 'b']);
    // Done: later copies call nothing, on any instance.
    await post(b.url, body);
    await b.handler.idle();
    expect(calls).toEqual(['a', 'b']);
  });

  it('a details read that fails (5xx) is retried, then onResult gets the details', async () => {
    const client = await setup();
    const { handler, results, errors, url } = await receiver(client);
    emulator.faults.fail('details', { times: 2, status: 503 });
    await processed(client, emulatedBlackbox(['tp']), { callbackUrl: url });
    await expect
      .poll(
        async () => {
          await handler.idle();
          return results.length;
        },
        { timeout: 3000 },
      )
      .toBe(1);
    expect(results[0]!.details!.decision.type).toBe('WARNING');
    expect(errors).toHaveLength(2);
    expect(emulator.inspect.requests('details')).toBe(3);
  });

  it('SESSION_EXPIRED and TOKEN_EXPIRED reach onResult without details', async () => {
    const client = await setup();
    const { handler, results, url } = await receiver(client);
    const tx = await client.createAccount({ customerInternalReference: 'order-1', workflowDefinition: { key: 10011 } });
    for (const status of ['SESSION_EXPIRED', 'TOKEN_EXPIRED']) {
      const body = callbackFor(tx, status);
      expect((await post(url, body)).status).toBe(200);
    }
    await handler.idle();
    expect(results.map((r) => [r.status, r.details])).toEqual([
      ['SESSION_EXPIRED', undefined],
      ['TOKEN_EXPIRED', undefined],
    ]);
    expect(emulator.inspect.requests('details')).toBe(0);
  });

  function callbackFor(tx: Pick<DeviceRiskTransaction, 'accountId' | 'workflowExecutionId'>, status = 'PROCESSED') {
    const account = `${emulator.retrievalUrl}/api/v1/accounts/${tx.accountId}`;
    return {
      callbackSentAt: new Date().toISOString(),
      workflowExecution: {
        id: tx.workflowExecutionId,
        href: `${account}/workflow-executions/${tx.workflowExecutionId}`,
        definitionKey: '10011',
        status,
      },
      account: { id: tx.accountId, href: account },
    };
  }

  it.each([
    ['not JSON', () => '{nope'],
    ['an array', () => []],
    ['no callbackSentAt', (b: any) => ({ ...b, callbackSentAt: undefined })],
    ['an id that is not a UUID', (b: any) => ({ ...b, workflowExecution: { ...b.workflowExecution, id: 'x' } })],
    [
      'a status not of the service form',
      (b: any) => ({ ...b, workflowExecution: { ...b.workflowExecution, status: 'done' } }),
    ],
    [
      'an href on another host',
      (b: any) => ({
        ...b,
        workflowExecution: {
          ...b.workflowExecution,
          href: b.workflowExecution.href.replace(/^http:\/\/[^/]+/, 'https://evil.example'),
        },
      }),
    ],
    [
      'an href of another execution',
      (b: any) => ({
        ...b,
        workflowExecution: {
          ...b.workflowExecution,
          href: b.account.href + '/workflow-executions/22222222-2222-4222-8222-222222222222',
        },
      }),
    ],
    [
      'an account href of another account',
      (b: any) => ({ ...b, account: { ...b.account, href: b.account.href.replace(/[0-9a-f]{8}-/, '00000000-') } }),
    ],
  ])('a body with %s is 400 invalid_callback, and calls nothing', async (_, change) => {
    const client = await setup();
    const { handler, results, url } = await receiver(client);
    const valid = callbackFor({
      accountId: '11111111-1111-4111-8111-111111111111',
      workflowExecutionId: '33333333-3333-4333-8333-333333333333',
    });
    const answer = await post(url, (change as (b: unknown) => unknown)(valid));
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('invalid_callback');
    await handler.idle();
    expect(results).toEqual([]);
  });

  it('a source outside allowedSources is 403; addresses, CIDR ranges and functions decide', async () => {
    const client = await setup();
    const body = callbackFor(
      {
        accountId: '11111111-1111-4111-8111-111111111111',
        workflowExecutionId: '33333333-3333-4333-8333-333333333333',
      },
      'SESSION_EXPIRED',
    );
    const outside = await receiver(client, { allowedSources: ['10.0.0.0/8', '2001:db8::/32'] });
    expect((await post(outside.url, body)).status).toBe(403);
    const exact = await receiver(client, { allowedSources: ['127.0.0.1'] });
    expect((await post(exact.url, body)).status).toBe(200);
    const byFunction = await receiver(client, {
      allowedSources: (request) => request.headers.get('x-gateway-checked') === 'yes',
    });
    expect((await post(byFunction.url, body)).status).toBe(403);
    expect(() => createCallbackHandler({ client, onResult: () => {} } as never)).toThrow(/allowedSources/);
    expect(() => createCallbackHandler({ client, onResult: () => {}, allowedSources: ['10.0.0.0/33'] })).toThrow(
      /CIDR/,
    );
    expect(() => createCallbackHandler({ client, onResult: () => {}, allowedSources: ['example.com'] })).toThrow(
      /CIDR/,
    );
  });

  it('a store that cannot record the callback answers 503, so that the service sends it again', async () => {
    const client = await setup();
    const failing = {
      get: async () => undefined,
      set: async () => {},
      delete: async () => {},
      compareAndSet: async () => false,
      compareAndDelete: async () => false,
      setIfAbsent: async () => {
        throw new Error('store down');
      },
    };
    const { url, results } = await receiver(client, { store: failing });
    const answer = await post(
      url,
      callbackFor({
        accountId: '11111111-1111-4111-8111-111111111111',
        workflowExecutionId: '33333333-3333-4333-8333-333333333333',
      }),
    );
    expect([answer.status, answer.headers.get('retry-after')]).toEqual([503, '5']);
    expect(results).toEqual([]);
  });
});

describe('whose callback: the shop’s own executions, placed by the service or the kit’s tag', () => {
  it('a checkout without a userReference of its own carries the kit’s tag, and its callback is vouched for', async () => {
    const client = await setup();
    const { handler, results, url } = await receiver(client);
    const { runDeviceRiskCheck } = await import('../../../src/server/index.js');
    await runDeviceRiskCheck(
      client,
      emulatedBlackbox(['tp']),
      { customerInternalReference: 'order-7', callbackUrl: url },
      {
        workflowKey: 10011,
      },
    );
    await expect.poll(() => emulator.inspect.callbacks()[0]?.delivered).toBe(true);
    await handler.idle();
    const reference = (emulator.inspect.callbacks()[0]!.body as { userReference?: string }).userReference;
    expect(reference).toMatch(/^bbc1\./);
    expect(await client.vouches!(reference)).toBe(true);
    expect(results.map((r) => r.callback.userReference)).toEqual([reference]);
  });

  it('a callback for an execution this tenant never made: one details read (404), never retried, onResult never called', async () => {
    const client = await setup();
    const { handler, results, errors, url } = await receiver(client);
    const account = crypto.randomUUID();
    const execution = crypto.randomUUID();
    const forged = {
      callbackSentAt: new Date().toISOString(),
      workflowExecution: {
        id: execution,
        href: `${emulator.retrievalUrl}/api/v1/accounts/${account}/workflow-executions/${execution}`,
        definitionKey: 10011,
        status: 'PROCESSED',
      },
      account: { id: account, href: `${emulator.retrievalUrl}/api/v1/accounts/${account}` },
    };
    const answer = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(forged),
    });
    expect(answer.status).toBe(200);
    await handler.idle();
    // Well past the retry delay (5 ms): a retried 404 would read again.
    await new Promise((r) => setTimeout(r, 200));
    await handler.sweep();
    await handler.idle();
    expect(emulator.inspect.requests('details')).toBe(1);
    expect(results).toEqual([]);
    expect(errors.map((e) => (e as { code?: string }).code)).toEqual(['unknown_execution']);
  });
});

describe('the emulator sends callbacks as the service does', () => {
  /** A callback receiver that answers its nth request `status(n)`, and counts them. */
  async function callbackSink(status: (n: number) => number) {
    let answers = 0;
    const origin = await serve((req, res) => {
      req.resume();
      res.writeHead(status(++answers)).end();
    });
    return { callbackUrl: `${origin}/cb`, answers: () => answers };
  }

  it('sends each callback once: one answered non-2xx is not sent again (the service documents no resend)', async () => {
    const client = await setup();
    const { callbackUrl, answers } = await callbackSink((n) => (n < 3 ? 500 : 200));
    await processed(client, emulatedBlackbox(['tp']), { callbackUrl });
    await expect.poll(() => emulator.inspect.callbacks()[0]?.delivered).toBe(false);
    expect(emulator.inspect.callbacks()[0]).toMatchObject({ attempts: 1, status: 500 });
    // Well past the first wait an injected resend would take (200 ms): nothing more came.
    await new Promise((r) => setTimeout(r, 400));
    expect(answers()).toBe(1);
  });

  it('a network error is not retried either', async () => {
    const client = await setup();
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    await new Promise((r) => server.close(r)); // nobody listens there now
    await processed(client, emulatedBlackbox(['tp']), { callbackUrl: `http://127.0.0.1:${port}/cb` });
    await expect.poll(() => emulator.inspect.callbacks()[0]?.delivered).toBe(false);
    expect(emulator.inspect.callbacks()[0]).toMatchObject({ attempts: 1, error: expect.any(String) });
  });

  it('resends only as an injected fault: resend n retries a non-2xx with backoff, up to n more times', async () => {
    const client = await setup();
    emulator.faults.callbacks({ resend: 4 });
    const { callbackUrl } = await callbackSink((n) => (n < 3 ? 500 : 200));
    await processed(client, emulatedBlackbox(['tp']), { callbackUrl });
    await expect.poll(() => emulator.inspect.callbacks()[0]?.delivered, { timeout: 5000 }).toBe(true);
    expect(emulator.inspect.callbacks()[0]!.attempts).toBe(3);
  });

  it('resend n gives up after n more attempts', async () => {
    const client = await setup();
    emulator.faults.callbacks({ resend: 1 });
    const { callbackUrl, answers } = await callbackSink(() => 503);
    await processed(client, emulatedBlackbox(['tp']), { callbackUrl });
    await expect.poll(() => emulator.inspect.callbacks()[0]?.delivered, { timeout: 5000 }).toBe(false);
    expect(emulator.inspect.callbacks()[0]).toMatchObject({ attempts: 2, status: 503 });
    expect(answers()).toBe(2);
  });

  it('intermediate: an ACQUIRED callback on the upload, before the final PROCESSED one', async () => {
    const client = await setup();
    emulator.faults.callbacks({ intermediate: true });
    const { origin, bodies } = await jsonReceiver<{ workflowExecution: { status: string } }>();
    const callbackUrl = `${origin}/cb`;
    const tx = await client.createAccount({
      customerInternalReference: 'order-1',
      workflowDefinition: { key: 10011 },
      callbackUrl,
    });
    await client.uploadBlackbox(tx, emulatedBlackbox(['tp']));
    await expect.poll(() => bodies.map((b) => b.workflowExecution.status)).toEqual(['ACQUIRED']);
    await client.uploadBlackbox(tx, emulatedBlackbox(['tp'])); // a second upload sends no second one
    await client.finalize(tx);
    await expect.poll(() => bodies.map((b) => b.workflowExecution.status)).toEqual(['ACQUIRED', 'PROCESSED']);
    // Without the fault: the final callback alone.
    emulator.faults.clear();
    await processed(client, emulatedBlackbox(['tp']), { callbackUrl, customerInternalReference: 'order-2' });
    await expect.poll(() => bodies.length).toBe(3);
    expect(bodies[2]!.workflowExecution.status).toBe('PROCESSED');
  });

  it('drop sends nothing; delayMs sends late', async () => {
    const client = await setup();
    const { callbackUrl, answers: hits } = await callbackSink(() => 200);
    emulator.faults.callbacks({ drop: true });
    await processed(client, emulatedBlackbox(['tp']), { callbackUrl });
    await expect.poll(() => emulator.inspect.callbacks()[0]?.delivered).toBe(false);
    emulator.faults.callbacks({ delayMs: 150 });
    await processed(client, emulatedBlackbox(['tp']), { callbackUrl, customerInternalReference: 'order-2' });
    await new Promise((r) => setTimeout(r, 50));
    expect(hits()).toBe(0);
    await expect.poll(hits).toBe(1);
  });
});

describe('onResult on the endpoint and runDeviceRiskCheck: a synchronous decision on the server', () => {
  it('the endpoint hands the details to onResult and answers the browser the reference only', async () => {
    const { createDeviceRiskHandler } = await import('../../../src/server/index.js');
    const client = await setup();
    const decided: unknown[] = [];
    const handler = createDeviceRiskHandler({
      answer: 'checked',
      client,
      allowedOrigins: ['https://shop.example'],
      workflowKey: 10011,
      resolveCustomer: () => ({ customerInternalReference: 'order-1' }),
      onResult: (details) => void decided.push(details.decision),
    });
    const request = () =>
      new Request('https://shop.example/device-risk', {
        method: 'POST',
        headers: {
          origin: 'https://shop.example',
          'content-type': 'application/json',
          'idempotency-key': 'key-result-0001',
        },
        body: JSON.stringify({ blackbox: emulatedBlackbox(['fp_static', 'fp_dyn', 'tp']) }),
      });
    const answer = await handler(request());
    const body = (await answer.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['accountId', 'status', 'workflowExecutionId']);
    expect(JSON.stringify(body)).not.toMatch(/PASSED|decision|alert/i);
    expect(decided).toEqual([{ type: 'PASSED', label: 'OK', score: 8 }]);
    await handler(request()); // a retry with the same key: the first answer, no second decision
    expect(decided).toHaveLength(1);
  });

  it('a result that is not there within resultWaitMs: no onResult, onError hears result_not_ready', async () => {
    const { runDeviceRiskCheck } = await import('../../../src/server/index.js');
    const client = await setup();
    let t = 0;
    const errors: unknown[] = [];
    const decided: unknown[] = [];
    emulator.faults.fail('retrievalStatus', { times: 100, status: 503 });
    const result = await runDeviceRiskCheck(
      client,
      emulatedBlackbox(['tp']),
      { customerInternalReference: 'order-1' },
      {
        workflowKey: 10011,
        onResult: (d) => void decided.push(d),
        resultWaitMs: 3000,
        onError: (e) => errors.push(e),
        now: () => t,
        sleep: async (ms) => void (t += ms),
      },
    );
    expect(result.status).toBe('FINALIZED');
    expect(decided).toEqual([]);
    expect(errors).toMatchObject([{ code: 'result_not_ready' }]);
    expect(emulator.inspect.requests('retrievalStatus')).toBe(4); // right away, then at 1, 2 and 3 s
  });
});
