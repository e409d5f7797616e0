// The Device Risk client against the emulator: accounts, upload, finalize, guards and retries.
import { afterEach, describe, expect, it } from 'vitest';
import { collectGarbage } from '../../support/gc.js';
import { createManualClock, startEmulator, type Emulator, type EmulatorOptions } from '../../../src/emulator/index.js';
import {
  createDeviceRiskClient,
  createTokenSource,
  DeviceRiskTransaction,
  type DeviceRiskClient,
} from '../../../src/server/index.js';
import { BLACKBOX, clientOn, UA, type EmulatedClientOptions } from '../../support/kit.js';

let emulator: Emulator;
afterEach(async () => {
  await emulator?.close();
});

async function setup(options: EmulatorOptions = {}, extra: Omit<EmulatedClientOptions, 'tokenSource'> = {}) {
  emulator = await startEmulator(options);
  return clientOn(emulator, { tokenSource: { sleep: noWait }, sleep: noWait, ...extra });
}
const account = { customerInternalReference: 'order-1001', workflowDefinition: { key: 10020 } };
/** Uploads BLACKBOX to `tx` and finalizes it: the status reads PROCESSED. */
async function uploadAndFinalize(client: DeviceRiskClient, tx: DeviceRiskTransaction) {
  await client.uploadBlackbox(tx, BLACKBOX);
  await client.finalize(tx);
  expect(await client.status(tx)).toBe('PROCESSED');
}
/** Retries in these tests do not wait: what they would have waited is asserted where it matters. */
const noWait = async () => {};

describe('device-risk client', () => {
  it('create -> upload -> finalize reaches PROCESSED with the blackbox', async () => {
    const client = await setup();
    const tx = await client.createAccount(account);
    expect(tx.uploadUrl).toBe(
      `${emulator.apiUrl}/api/v1/accounts/${tx.accountId}/workflow-executions/${tx.workflowExecutionId}/credentials/${tx.credentialId}/parts/DEVICE_RISK`,
    );
    expect(tx.part).toBe('device_risk');
    await uploadAndFinalize(client, tx);
    expect(emulator.inspect.transaction(tx.workflowExecutionId)).toMatchObject({
      status: 'PROCESSED',
      blackboxes: [BLACKBOX],
      customerInternalReference: 'order-1001',
    });
  });

  it('a workflow whose Data credential names its part prepared_data: uploaded to PREPARED_DATA', async () => {
    const client = await setup({ workflows: { '10020': { deviceRisk: true, part: 'prepared_data' } } });
    const tx = await client.createAccount(account);
    expect(tx.part).toBe('prepared_data');
    expect(tx.uploadUrl).toMatch(new RegExp(`^${emulator.apiUrl}/api/v1/accounts/.+/parts/PREPARED_DATA$`));
    await uploadAndFinalize(client, tx);
    expect(emulator.inspect.transaction(tx.workflowExecutionId)).toMatchObject({
      part: 'prepared_data',
      blackboxes: [BLACKBOX],
    });
  });

  it('update makes a new transaction on the existing account', async () => {
    const client = await setup();
    const first = await client.createAccount(account);
    const second = await client.updateAccount(first.accountId, { ...account, customerInternalReference: 'order-1002' });
    expect(second.accountId).toBe(first.accountId);
    expect(second.workflowExecutionId).not.toBe(first.workflowExecutionId);
    expect(() => client.updateAccount('not-a-uuid', account)).toThrow(/UUID/);
  });

  it('a workflow without Device Risk is a clear error', async () => {
    const client = await setup({ workflows: { '7': { deviceRisk: false } } });
    await expect(client.createAccount({ ...account, workflowDefinition: { key: 7 } })).rejects.toMatchObject({
      code: 'no_device_risk_credential',
    });
  });

  it('keeps the transaction token out of JSON and inspection', async () => {
    const client = await setup();
    const tx = await client.createAccount(account);
    const { inspect } = await import('node:util');
    expect(JSON.stringify(tx)).not.toContain(tx.token);
    expect(inspect(tx, { depth: 5, showHidden: true })).not.toContain(tx.token);
    expect(Object.keys(tx)).not.toContain('token');
  });

  describe('forged addresses are refused before a request is sent', () => {
    const answer = (emulatorBase: string, overrides: { upload?: string; execution?: string } = {}) => {
      const a = '11111111-1111-4111-8111-111111111111';
      const w = '22222222-2222-4222-8222-222222222222';
      const c = '33333333-3333-4333-8333-333333333333';
      const execution = `${emulatorBase}/api/v1/accounts/${a}/workflow-executions/${w}`;
      return {
        account: { id: a },
        workflowExecution: {
          id: w,
          credentials: [
            {
              id: c,
              category: 'DATA',
              label: 'DATA',
              allowedChannels: ['API'],
              api: {
                token: 't',
                parts: { device_risk: overrides.upload ?? `${execution}/credentials/${c}/parts/DEVICE_RISK` },
                workflowExecution: overrides.execution ?? execution,
              },
            },
          ],
        },
      };
    };
    it.each([
      [
        'another host',
        (_b: string) => ({
          upload: `https://evil.example/api/v1/accounts/11111111-1111-4111-8111-111111111111/workflow-executions/22222222-2222-4222-8222-222222222222/credentials/33333333-3333-4333-8333-333333333333/parts/DEVICE_RISK`,
        }),
      ],
      [
        'another port',
        (b: string) => ({
          upload: answer(b.replace(/:(\d+)$/, (_, p) => ':' + (Number(p) + 1))).workflowExecution.credentials[0]!.api
            .parts.device_risk,
        }),
      ],
      [
        'a path outside the shape',
        (b: string) => ({ upload: `${b}/api/v1/accounts/11111111-1111-4111-8111-111111111111/delete` }),
      ],
      [
        'ids that are not UUIDs',
        (b: string) => ({ upload: `${b}/api/v1/accounts/x/workflow-executions/y/credentials/z/parts/DEVICE_RISK` }),
      ],
      [
        'a query string',
        (b: string) => ({
          upload: answer(b).workflowExecution.credentials[0]!.api.parts.device_risk + '?redirect=https://evil.example',
        }),
      ],
      [
        'a finalize address of another transaction',
        (b: string) => ({
          execution: `${b}/api/v1/accounts/11111111-1111-4111-8111-111111111111/workflow-executions/44444444-4444-4444-8444-444444444444`,
        }),
      ],
      [
        'a non-https address',
        () => ({
          upload:
            'http://account.example/api/v1/accounts/11111111-1111-4111-8111-111111111111/workflow-executions/22222222-2222-4222-8222-222222222222/credentials/33333333-3333-4333-8333-333333333333/parts/DEVICE_RISK',
        }),
      ],
    ])('%s', async (_, forge) => {
      let sent = 0;
      const client = await setup(
        {},
        {
          fetch: async () => {
            sent++;
            return new Response('{}');
          },
        },
      );
      expect(() => client.transactionFrom(answer(emulator.apiUrl, forge(emulator.apiUrl)))).toThrow(
        expect.objectContaining({ code: 'forged_address' }),
      );
      expect(sent).toBe(0);
    });

    it('an account answer carrying a forged address fails the create call, and nothing is uploaded', async () => {
      const client = await setup(
        {},
        {
          fetch: (async (url: string, init: RequestInit) => {
            const response = await fetch(url, init);
            if (!url.endsWith('/api/v1/accounts')) return response;
            const body = (await response.json()) as ReturnType<typeof answer>;
            body.workflowExecution.credentials[0]!.api.parts.device_risk = 'https://evil.example/collect';
            return Response.json(body);
          }) as typeof fetch,
        },
      );
      await expect(client.createAccount(account)).rejects.toMatchObject({ code: 'forged_address' });
      expect(emulator.inspect.requests('upload')).toBe(0);
    });

    it.each([
      ['another host', 'https://evil.example'],
      ['another port', 'http://127.0.0.1:1'],
      ['another scheme', 'https://127.0.0.1'],
    ])('addresses of the documented shape on %s are refused (the origin decides, not the path)', async (_, origin) => {
      const client = await setup();
      const forged = answer(origin);
      expect(() => client.transactionFrom(forged)).toThrow(expect.objectContaining({ code: 'forged_address' }));
      expect(() => client.transactionFrom(answer(emulator.apiUrl))).not.toThrow();
    });

    it('addresses on the account host are refused: the upload and finalize addresses are on the API host', async () => {
      const client = await setup();
      expect(emulator.accountUrl).not.toBe(emulator.apiUrl);
      expect(() => client.transactionFrom(answer(emulator.accountUrl))).toThrow(
        expect.objectContaining({ code: 'forged_address' }),
      );
      expect(() => client.transactionFrom(answer(emulator.apiUrl))).not.toThrow();
    });

    it('a transaction rebuilt with a forged upload address is refused at upload', async () => {
      const client = await setup();
      const tx = await client.createAccount(account);
      const forged = new DeviceRiskTransaction({
        ...tx.toJSON(),
        uploadUrl: 'https://evil.example/x',
        token: tx.token,
      });
      await expect(client.uploadBlackbox(forged, BLACKBOX)).rejects.toMatchObject({ code: 'forged_address' });
    });
  });

  it('an expired transaction token is a typed error before sending', async () => {
    const clock = createManualClock();
    const client = await setup({ clock }, { now: clock.now });
    const tx = await client.createAccount({ ...account, tokenLifetime: '5m' });
    clock.advance(5 * 60_000);
    const uploadsBefore = emulator.inspect.requests('upload');
    await expect(client.uploadBlackbox(tx, BLACKBOX)).rejects.toMatchObject({ code: 'transaction_token_expired' });
    await expect(client.finalize(tx)).rejects.toMatchObject({ code: 'transaction_token_expired' });
    expect(emulator.inspect.requests('upload')).toBe(uploadsBefore);
  });

  it('checks the blackbox before sending it', async () => {
    const client = await setup();
    const tx = await client.createAccount(account);
    for (const bad of ['', '0400 with spaces', '0400%2B', 'A'.repeat(8002)]) {
      await expect(client.uploadBlackbox(tx, bad)).rejects.toMatchObject({ code: 'invalid_blackbox' });
    }
    expect(emulator.inspect.requests('upload')).toBe(0);
  });

  it('retries upload and finalize on 5xx, 429 and dropped connections', async () => {
    const client = await setup();
    const tx = await client.createAccount(account);
    emulator.faults.fail('upload', { times: 1, status: 503 });
    emulator.faults.fail('upload', { times: 1, drop: true });
    emulator.faults.fail('finalize', { times: 1, status: 429 });
    await client.uploadBlackbox(tx, BLACKBOX);
    await client.finalize(tx);
    expect(emulator.inspect.transaction(tx.workflowExecutionId)?.status).toBe('PROCESSED');
    expect(emulator.inspect.requests('upload')).toBe(3);
  });

  it('a finalize retried after its first attempt went through is a success', async () => {
    const client = await setup(
      {},
      {
        fetch: (async (url: string, init: RequestInit) => {
          const response = await fetch(url, init);
          // The first finalize reaches the service but its answer is lost.
          if (init.method === 'PUT' && /workflow-executions\/[^/]+$/.test(url) && !finalizedOnce) {
            finalizedOnce = true;
            throw new TypeError('socket hang up');
          }
          return response;
        }) as typeof fetch,
      },
    );
    let finalizedOnce = false;
    const tx = await client.createAccount(account);
    await client.uploadBlackbox(tx, BLACKBOX);
    await client.finalize(tx);
    expect(emulator.inspect.requests('finalize')).toBe(2);
  });

  it('account create is not repeated after a 5xx (it may have gone through), but is after a 429', async () => {
    const client = await setup();
    emulator.faults.fail('accountCreate', { times: 1, status: 502 });
    await expect(client.createAccount(account)).rejects.toMatchObject({
      code: 'upstream_error',
      status: 502,
      operation: 'account create',
    });
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
    emulator.faults.fail('accountCreate', { times: 1, status: 429 });
    await client.createAccount(account);
    expect(emulator.inspect.requests('accountCreate')).toBe(3);
  });

  it('4xx answers are not retried and come back typed', async () => {
    const client = await setup({ workflows: { '1': { deviceRisk: true } } });
    await expect(client.createAccount(account)).rejects.toMatchObject({ code: 'request_rejected', status: 400 });
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
  });

  it.each([
    ['a reference with "/"', { customerInternalReference: 'a/b' }],
    ['a reference with "<"', { customerInternalReference: 'a<b' }],
    ['a reference of 101 characters', { customerInternalReference: 'r'.repeat(101) }],
    ['an empty reference', { customerInternalReference: '' }],
    ['a userReference of 101 characters', { userReference: 'u'.repeat(101) }],
    ['a callbackUrl of 256 characters', { callbackUrl: 'https://shop.example/' + 'c'.repeat(235) }],
    ['a malformed tokenLifetime', { tokenLifetime: '30 minutes' }],
  ])('%s is refused before the call, as invalid_account_request', async (_, change) => {
    const client = await setup();
    await expect(client.createAccount({ ...account, ...change })).rejects.toMatchObject({
      code: 'invalid_account_request',
    });
    expect(emulator.inspect.requests('accountCreate')).toBe(0);
    expect(emulator.inspect.requests('token')).toBe(0);
  });

  it('a reference of exactly 100 characters is accepted', async () => {
    const client = await setup();
    await expect(
      client.createAccount({ ...account, customerInternalReference: 'r'.repeat(100) }),
    ).resolves.toBeInstanceOf(DeviceRiskTransaction);
  });

  it('a slow account create is waited for, not abandoned as unknown and made twice', async () => {
    // The service takes 600 ms; the other calls are limited to 400 ms. Account create has its own,
    // longer limit: a create that timed out may still have been made, so it must not time out early.
    const client = await setup({ accountRequestsPerSecond: 0 }, { timeoutMs: 400 });
    emulator.faults.latency('accountCreate', 600);
    const tx = await client.createAccount(account);
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
    expect(emulator.inspect.transaction(tx.workflowExecutionId)).toMatchObject({ status: 'INITIATED' });
  });

  it('an upload to an API that never answers gives up at timeoutMs, even when garbage is collected meanwhile', async () => {
    const client = await setup({}, { timeoutMs: 300, maxAttempts: 1 });
    const tx = await client.createAccount(account);
    emulator.faults.latency('upload', 60_000);
    const collector = setInterval(() => collectGarbage(), 10);
    try {
      await expect(client.uploadBlackbox(tx, BLACKBOX)).rejects.toMatchObject({
        code: 'network_error',
        operation: 'upload',
      });
    } finally {
      clearInterval(collector);
    }
  });

  it('an account create that outlasts accountTimeoutMs fails typed and is not repeated', async () => {
    const client = await setup({ accountRequestsPerSecond: 0 }, { accountTimeoutMs: 1000 });
    await client.createAccount(account); // the token is fetched: inside the limit there is only the create
    emulator.faults.latency('accountCreate', 60_000); // answered long after any limit, however busy the machine
    await expect(client.createAccount(account)).rejects.toMatchObject({
      code: 'network_error',
      operation: 'account create',
    });
    // Sent at most once (on a busy machine it may not have left within the limit): never repeated.
    expect(emulator.inspect.requests('accountCreate')).toBeLessThanOrEqual(2);
    expect(emulator.inspect.requests('accountCreate')).toBeGreaterThanOrEqual(1);
  });

  it('an access token the API refuses (401) is dropped and fetched again once', async () => {
    const clock = createManualClock();
    emulator = await startEmulator({ clock });
    // The token source's clock stands still: it believes its token fresh after the service let it lapse.
    const frozen = Date.now();
    const client = clientOn(emulator, { tokenSource: { now: () => frozen } });
    await client.createAccount(account);
    clock.advance(3_600_000);
    await client.createAccount(account);
    expect(emulator.inspect.requests('token')).toBe(2);
    expect(emulator.inspect.requests('accountCreate')).toBe(3); // ok, 401, ok again with the new token
  });

  it('a 401 that persists after one new token fails typed, without a third token', async () => {
    const clock = createManualClock();
    emulator = await startEmulator({ clock });
    const frozen = Date.now();
    const client = clientOn(emulator, { tokenSource: { now: () => frozen } });
    emulator.faults.fail('accountCreate', { times: 5, status: 401 });
    await expect(client.createAccount(account)).rejects.toMatchObject({ code: 'request_rejected', status: 401 });
    expect(emulator.inspect.requests('token')).toBe(2);
    expect(emulator.inspect.requests('accountCreate')).toBe(2);
  });

  it('account create is not repeated after a dropped connection: its outcome is unknown', async () => {
    const client = await setup();
    emulator.faults.fail('accountCreate', { times: 1, drop: true });
    await expect(client.createAccount(account)).rejects.toMatchObject({
      code: 'network_error',
      operation: 'account create',
    });
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
  });

  it("honours the API's Retry-After (capped at 30 s) before trying again", async () => {
    const waits: number[] = [];
    const client = await setup({}, { sleep: async (ms) => void waits.push(ms) });
    emulator.faults.fail('accountCreate', { times: 1, status: 429 });
    await client.createAccount(account);
    expect(waits).toEqual([1000]); // the emulator's 429 says Retry-After: 1
  });

  it('after the last attempt there is no wait: the error comes at once', async () => {
    const waits: number[] = [];
    const client = await setup({}, { maxAttempts: 2, sleep: async (ms) => void waits.push(ms) });
    const tx = await client.createAccount(account);
    emulator.faults.fail('upload', { times: 5, status: 503 });
    await expect(client.uploadBlackbox(tx, BLACKBOX)).rejects.toMatchObject({ code: 'upstream_error', status: 503 });
    expect(waits).toEqual([1000]);
  });

  it('a finalize answered 409 is success only when the status says PROCESSED; ACQUIRED is tried again, never refused', async () => {
    const client = await setup();
    const tx = await client.createAccount(account);
    await client.uploadBlackbox(tx, BLACKBOX);
    emulator.faults.fail('finalize', { times: 1, status: 409 });
    // Uploaded, the finalize not taken: the 409 is no refusal for good, and no success either.
    await expect(client.finalize(tx)).rejects.toMatchObject({ code: 'result_not_ready', operation: 'finalize' });
    expect(emulator.inspect.transaction(tx.workflowExecutionId)?.status).toBe('ACQUIRED');
    // The check's next try: finalize takes.
    await client.finalize(tx);
    expect(emulator.inspect.transaction(tx.workflowExecutionId)?.status).toBe('PROCESSED');
  });

  it('refuses a plain-http API address', async () => {
    emulator = await startEmulator();
    const tokenSource = createTokenSource({ clientId: 'a', clientSecret: 'b', region: 'US', userAgent: UA });
    expect(() => createDeviceRiskClient({ tokenSource, baseUrl: 'http://account.example', userAgent: UA })).toThrow(
      expect.objectContaining({ code: 'insecure_url' }),
    );
  });
});
