// The emulated identity-verification service over HTTP: tokens, accounts, upload, finalize, states, faults.
import { afterEach, describe, expect, it } from 'vitest';
import { createManualClock, startEmulator, type Emulator, type EmulatorOptions } from '../../../src/emulator/index.js';
import { closeServers, jsonReceiver } from '../../support/http.js';
import { BLACKBOX, UA } from '../../support/kit.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let emulator: Emulator;
let clock: ReturnType<typeof createManualClock>;
afterEach(async () => {
  await emulator?.close();
  await closeServers();
});

async function start(options: EmulatorOptions = {}) {
  clock = createManualClock(Date.UTC(2026, 10, 21));
  emulator = await startEmulator({ clock, ...options });
  return emulator;
}

function tokenRequest(
  overrides: { method?: string; headers?: Record<string, string | undefined>; body?: string; secret?: string } = {},
) {
  const headers: Record<string, string | undefined> = {
    authorization:
      'Basic ' + Buffer.from(`${emulator.clientId}:${overrides.secret ?? emulator.clientSecret}`).toString('base64'),
    accept: 'application/json',
    'content-type': 'application/x-www-form-urlencoded',
    'user-agent': UA,
    ...overrides.headers,
  };
  for (const key of Object.keys(headers)) if (headers[key] === undefined) delete headers[key];
  const method = overrides.method ?? 'POST';
  return fetch(emulator.tokenUrl, {
    method,
    headers: headers as Record<string, string>,
    ...(method === 'GET' ? {} : { body: overrides.body ?? 'grant_type=client_credentials' }),
  });
}

async function accessToken() {
  const response = await tokenRequest();
  expect(response.status).toBe(200);
  return ((await response.json()) as { access_token: string }).access_token;
}

async function createAccount(
  body: unknown = { customerInternalReference: 'order-1', workflowDefinition: { key: 10020 } },
  token?: string,
) {
  return fetch(`${emulator.baseUrl}/api/v1/accounts`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token ?? (await accessToken())}`,
      'content-type': 'application/json',
      accept: 'application/json',
      'user-agent': UA,
    },
    body: JSON.stringify(body),
  });
}

interface Credential {
  id: string;
  category: string;
  label: string;
  allowedChannels: string[];
  api: { token: string; parts: { device_risk: string }; workflowExecution: string };
}
async function newTransaction(body?: unknown) {
  const response = await createAccount(body);
  expect(response.status).toBe(200);
  const answer = (await response.json()) as {
    account: { id: string };
    workflowExecution: { id: string; credentials: Credential[] };
  };
  return { answer, credential: answer.workflowExecution.credentials[0]! };
}

const upload = (
  url: string,
  token: string | undefined,
  body: unknown = { sessionId: BLACKBOX },
  contentType = 'application/json',
) =>
  fetch(url, {
    method: 'POST',
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), 'content-type': contentType, 'user-agent': UA },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const finalize = (url: string, token: string, contentType: string | undefined = 'application/json') =>
  fetch(url, {
    method: 'PUT',
    headers: {
      authorization: `Bearer ${token}`,
      'user-agent': UA,
      ...(contentType === undefined ? {} : { 'content-type': contentType }),
    },
  });

describe('token endpoint', () => {
  it('answers the spec shape for a correct client-credentials request', async () => {
    await start();
    const response = await tokenRequest();
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toEqual({ access_token: expect.any(String), expires_in: 3600, token_type: 'Bearer' });
  });

  it.each([
    ['a GET', { method: 'GET' }, 400],
    ['no Accept: application/json', { headers: { accept: 'text/html' } }, 400],
    [
      'a JSON body',
      { headers: { 'content-type': 'application/json' }, body: '{"grant_type":"client_credentials"}' },
      400,
    ],
    ['no Basic authentication', { headers: { authorization: undefined } }, 400],
    ['another grant', { body: 'grant_type=password' }, 400],
    ['a wrong secret', { secret: 'nope' }, 401],
    ['no User-Agent', { headers: { 'user-agent': '' } }, 400],
    ['a library default User-Agent', { headers: { 'user-agent': 'node' } }, 403],
  ])('refuses %s', async (_, overrides, status) => {
    await start();
    expect((await tokenRequest(overrides)).status).toBe(status);
  });

  it('answers 429 with Retry-After past 10 requests a second, and recovers', async () => {
    await start();
    const statuses = [];
    for (let i = 0; i < 12; i++) statuses.push((await tokenRequest()).status);
    expect(statuses.slice(0, 10).every((s) => s === 200)).toBe(true);
    const limited = await tokenRequest();
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(await limited.json()).toEqual({ title: 'Too Many Requests', status: 429, detail: 'Request limit exceeded' });
    clock.advance(1001);
    expect((await tokenRequest()).status).toBe(200);
  });

  it('limits: false answers every request, however many a second', async () => {
    await start({ limits: false });
    const statuses = [];
    for (let i = 0; i < 12; i++) statuses.push((await tokenRequest()).status);
    expect(statuses).toEqual(Array(12).fill(200));
    for (let i = 0; i < 12; i++) expect((await createAccount()).status).toBe(200);
  });

  it('access tokens really expire', async () => {
    await start();
    const token = await accessToken();
    expect((await createAccount(undefined, token)).status).toBe(200);
    clock.advance(3600 * 1000);
    const expired = await createAccount(undefined, token);
    expect(expired.status).toBe(401);
    expect(await expired.text()).toMatch(/expired/);
  });
});

describe('accounts', () => {
  it('create returns the credentials array as the spec shapes it', async () => {
    await start();
    const { answer, credential } = await newTransaction();
    expect(answer.account.id).toMatch(UUID);
    expect(answer.workflowExecution.id).toMatch(UUID);
    expect(credential).toMatchObject({ category: 'DATA', label: 'DATA', allowedChannels: ['API'] });
    expect(credential.id).toMatch(UUID);
    // On the API host, not on the account host the create went to.
    expect(emulator.apiUrl).not.toBe(emulator.accountUrl);
    expect(emulator.baseUrl).toBe(emulator.accountUrl);
    const execution = `${emulator.apiUrl}/api/v1/accounts/${answer.account.id}/workflow-executions/${answer.workflowExecution.id}`;
    expect(credential.api.workflowExecution).toBe(execution);
    expect(credential.api.parts.device_risk).toBe(`${execution}/credentials/${credential.id}/parts/DEVICE_RISK`);
    expect(credential.api.token.length).toBeGreaterThan(40);
    expect(emulator.inspect.transaction(answer.workflowExecution.id)?.status).toBe('INITIATED');
  });

  it.each([
    ['no customerInternalReference', { workflowDefinition: { key: 1 } }],
    [
      'a customerInternalReference over 100 characters',
      { customerInternalReference: 'x'.repeat(101), workflowDefinition: { key: 1 } },
    ],
    ...['<', '>', '"', '/', ';', '`', '%', '{', '}', '|'].map(
      (c) =>
        [
          `"${c}" in customerInternalReference`,
          { customerInternalReference: `a${c}b`, workflowDefinition: { key: 1 } },
        ] as const,
    ),
    ['no workflowDefinition.key', { customerInternalReference: 'a' }],
    [
      'a userReference over 100 characters',
      { customerInternalReference: 'a', userReference: 'u'.repeat(101), workflowDefinition: { key: 1 } },
    ],
    [
      'a tokenLifetime under 5m',
      { customerInternalReference: 'a', tokenLifetime: '4m', workflowDefinition: { key: 1 } },
    ],
    [
      'a tokenLifetime over 60d',
      { customerInternalReference: 'a', tokenLifetime: '61d', workflowDefinition: { key: 1 } },
    ],
    [
      'a malformed tokenLifetime',
      { customerInternalReference: 'a', tokenLifetime: '30 minutes', workflowDefinition: { key: 1 } },
    ],
    [
      'a callbackUrl over 255 characters',
      {
        customerInternalReference: 'a',
        callbackUrl: 'https://x.test/' + 'a'.repeat(250),
        workflowDefinition: { key: 1 },
      },
    ],
    [
      'a plain-http callbackUrl',
      { customerInternalReference: 'a', callbackUrl: 'http://shop.example/cb', workflowDefinition: { key: 1 } },
    ],
  ] as Array<[string, unknown]>)('create refuses %s with 400', async (_, body) => {
    await start();
    expect((await createAccount(body)).status).toBe(400);
  });

  it('create needs a valid access token and a proper User-Agent', async () => {
    await start();
    expect((await createAccount(undefined, 'made-up')).status).toBe(401);
    const response = await fetch(`${emulator.baseUrl}/api/v1/accounts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await accessToken()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ customerInternalReference: 'a', workflowDefinition: { key: 1 } }),
    });
    expect(response.status).toBe(403); // Node's default "node" User-Agent
  });

  it('update (PUT) makes a new workflow execution for the same account; an unknown account is 404', async () => {
    await start();
    const { answer } = await newTransaction();
    const token = await accessToken();
    const put = (id: string) =>
      fetch(`${emulator.baseUrl}/api/v1/accounts/${id}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'user-agent': UA },
        body: JSON.stringify({ customerInternalReference: 'order-2', workflowDefinition: { key: 10020 } }),
      });
    const updated = (await (await put(answer.account.id)).json()) as {
      account: { id: string };
      workflowExecution: { id: string };
    };
    expect(updated.account.id).toBe(answer.account.id);
    expect(updated.workflowExecution.id).not.toBe(answer.workflowExecution.id);
    expect((await put('00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });

  it('a workflow without Device Risk returns no device_risk part', async () => {
    await start({ workflows: { '1': { deviceRisk: false }, '2': { deviceRisk: true } } });
    const { credential } = await newTransaction({ customerInternalReference: 'a', workflowDefinition: { key: 1 } });
    expect(credential.category).not.toBe('DATA');
    expect(credential.api.parts.device_risk).toBeUndefined();
    expect((await createAccount({ customerInternalReference: 'a', workflowDefinition: { key: 3 } })).status).toBe(400);
  });

  it('limits account requests to about one a second, with a short burst', async () => {
    await start({ accountRequestsPerSecond: 1, accountBurst: 2 });
    const token = await accessToken();
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await createAccount(undefined, token)).status);
    expect(statuses).toEqual([200, 200, 429]);
    clock.advance(1000);
    expect((await createAccount(undefined, token)).status).toBe(200);
  });
});

describe('upload, finalize and states', () => {
  it('INITIATED -> ACQUIRED -> PROCESSED, with the blackbox recorded', async () => {
    await start();
    const { answer, credential } = await newTransaction();
    const upResponse = await upload(credential.api.parts.device_risk, credential.api.token);
    expect(upResponse.status).toBe(200);
    expect(emulator.inspect.transaction(answer.workflowExecution.id)).toMatchObject({
      status: 'ACQUIRED',
      blackboxes: [BLACKBOX],
    });
    const done = await finalize(credential.api.workflowExecution, credential.api.token);
    expect(done.status).toBe(200);
    expect(await done.json()).toMatchObject({
      account: { id: answer.account.id },
      workflowExecution: { id: answer.workflowExecution.id },
    });
    expect(emulator.inspect.transaction(answer.workflowExecution.id)?.status).toBe('PROCESSED');
    // Actions in a wrong state: 409.
    expect((await upload(credential.api.parts.device_risk, credential.api.token)).status).toBe(409);
    expect((await finalize(credential.api.workflowExecution, credential.api.token)).status).toBe(409);
  });

  it('finalize before any upload is 409', async () => {
    await start();
    const { credential } = await newTransaction();
    expect((await finalize(credential.api.workflowExecution, credential.api.token)).status).toBe(409);
  });

  it.each([
    ['no token', undefined, 401],
    ["another transaction's token", 'other', 403],
  ])('upload with %s is refused', async (_, which, status) => {
    await start();
    const { credential } = await newTransaction();
    const other = which === 'other' ? (await newTransaction()).credential.api.token : undefined;
    expect((await upload(credential.api.parts.device_risk, other)).status).toBe(status);
  });

  it.each([
    ['an empty sessionId', { sessionId: '' }],
    ['no sessionId', { blackbox: BLACKBOX }],
    ['a sessionId that is not a string', { sessionId: 42 }],
    ['a sessionId longer than 8001 characters', { sessionId: '0400' + 'A'.repeat(8000) }],
    ['a sessionId outside the blackbox alphabet', { sessionId: '0400 abc <script>' }],
    ['a form-encoded body', 'sessionId=' + BLACKBOX],
  ])('upload of %s is 400', async (_, body) => {
    await start();
    const { credential } = await newTransaction();
    const contentType = typeof body === 'string' ? 'application/x-www-form-urlencoded' : 'application/json';
    expect((await upload(credential.api.parts.device_risk, credential.api.token, body, contentType)).status).toBe(400);
  });

  it('unknown ids are 404', async () => {
    await start();
    const { credential } = await newTransaction();
    const wrong = credential.api.parts.device_risk.replace(credential.id, '00000000-0000-4000-8000-000000000000');
    expect((await upload(wrong, credential.api.token)).status).toBe(404);
    const wrongExecution = credential.api.parts.device_risk.replace(
      /workflow-executions\/[^/]+/,
      'workflow-executions/00000000-0000-4000-8000-000000000000',
    );
    expect((await upload(wrongExecution, credential.api.token)).status).toBe(404);
  });

  it('the transaction token expires (30 minutes by default): 401 and TOKEN_EXPIRED', async () => {
    await start({ sessionTimeoutMs: 60 * 60_000 });
    const { answer, credential } = await newTransaction();
    clock.advance(30 * 60_000);
    expect((await upload(credential.api.parts.device_risk, credential.api.token)).status).toBe(401);
    expect(emulator.inspect.transaction(answer.workflowExecution.id)?.status).toBe('TOKEN_EXPIRED');
  });

  it('tokenLifetime sets the transaction token lifetime', async () => {
    await start({ sessionTimeoutMs: 60 * 60_000 });
    const { credential } = await newTransaction({
      customerInternalReference: 'a',
      workflowDefinition: { key: 1 },
      tokenLifetime: '5m',
    });
    clock.advance(5 * 60_000 - 1);
    expect((await upload(credential.api.parts.device_risk, credential.api.token)).status).toBe(200);
    clock.advance(1);
    expect((await finalize(credential.api.workflowExecution, credential.api.token)).status).toBe(401);
  });

  it('the session times out 15 minutes after the last action; each action resets it', async () => {
    await start();
    const { answer, credential } = await newTransaction({
      customerInternalReference: 'a',
      workflowDefinition: { key: 1 },
      tokenLifetime: '2h',
    });
    clock.advance(10 * 60_000);
    expect((await upload(credential.api.parts.device_risk, credential.api.token)).status).toBe(200);
    clock.advance(10 * 60_000); // 20 minutes after creation, 10 after the upload
    expect(emulator.inspect.transaction(answer.workflowExecution.id)?.status).toBe('ACQUIRED');
    clock.advance(5 * 60_000);
    expect(emulator.inspect.transaction(answer.workflowExecution.id)?.status).toBe('SESSION_EXPIRED');
    expect((await finalize(credential.api.workflowExecution, credential.api.token)).status).toBe(409);
  });

  it('status needs the access token and reports the state', async () => {
    await start();
    const { answer, credential } = await newTransaction();
    const path = `${new URL(credential.api.workflowExecution).pathname}/status`;
    const statusUrl = `${emulator.retrievalUrl}${path}`;
    const headers = { 'user-agent': UA, 'content-type': 'application/json' };
    expect(
      (await fetch(statusUrl, { headers: { ...headers, authorization: `Bearer ${credential.api.token}` } })).status,
    ).toBe(401);
    const bearer = { ...headers, authorization: `Bearer ${await accessToken()}` };
    // On the retrieval host only: the API and account hosts do not answer a status read.
    for (const other of [emulator.apiUrl, emulator.accountUrl])
      expect((await fetch(`${other}${path}`, { headers: bearer })).status, other).toBe(404);
    const response = await fetch(statusUrl, { headers: bearer });
    expect(await response.json()).toEqual({
      account: { id: answer.account.id },
      workflowExecution: { id: answer.workflowExecution.id, definitionKey: '10020', status: 'INITIATED' },
    });
  });

  it('on finalize, POSTs a callback with the status to callbackUrl', async () => {
    const { origin, bodies: received } = await jsonReceiver();
    await start();
    const callbackUrl = `${origin}/callback`;
    const { answer, credential } = await newTransaction({
      customerInternalReference: 'a',
      workflowDefinition: { key: 1 },
      callbackUrl,
    });
    await upload(credential.api.parts.device_risk, credential.api.token);
    await finalize(credential.api.workflowExecution, credential.api.token);
    await expect.poll(() => received.length).toBe(1);
    expect(received[0]).toMatchObject({
      workflowExecution: { id: answer.workflowExecution.id, status: 'PROCESSED' },
      account: { id: answer.account.id },
    });
    // Recorded once the receiver's answer is read, after the receiver has the body.
    await expect.poll(() => emulator.inspect.callbacks()[0]).toMatchObject({ url: callbackUrl, status: 200 });
  });
});

describe('fault injection and inspection', () => {
  it('the next N requests of a route fail with a chosen status, then it recovers', async () => {
    await start();
    emulator.faults.fail('token', { times: 2, status: 503 });
    expect((await tokenRequest()).status).toBe(503);
    expect((await tokenRequest()).status).toBe(503);
    expect((await tokenRequest()).status).toBe(200);
    expect(emulator.inspect.requests('token')).toBe(3);
  });

  it('a dropped connection rejects the fetch', async () => {
    await start();
    emulator.faults.fail('accountCreate', { drop: true });
    await expect(createAccount()).rejects.toThrow();
    expect((await createAccount()).status).toBe(200);
  });

  it('latency delays every request of a route', async () => {
    await start();
    emulator.faults.latency('token', 200);
    const started = performance.now();
    await tokenRequest();
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
  });

  it('counts requests per route', async () => {
    await start();
    const { credential } = await newTransaction();
    await upload(credential.api.parts.device_risk, credential.api.token);
    await finalize(credential.api.workflowExecution, credential.api.token);
    expect([
      emulator.inspect.requests('token'),
      emulator.inspect.requests('accountCreate'),
      emulator.inspect.requests('upload'),
      emulator.inspect.requests('finalize'),
    ]).toEqual([1, 1, 1, 1]);
  });
});
