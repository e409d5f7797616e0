// The Device Risk client's boundaries on a stub API: the documented request rules, the
// credential checks, what each failure says (code, operation, status, Retry-After), the
// waits between attempts and the result schedule.
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  API_BASE_URLS,
  checkAccountRequest,
  checkBlackbox,
  createDeviceRiskClient,
  DeviceRiskTransaction,
  MAX_BLACKBOX_LENGTH,
  RETRIEVAL_BASE_URLS,
  type AccountRequest,
  type DeviceRiskClientOptions,
} from '../../../src/server/api/device-risk-client.js';
import type { TokenSource } from '../../../src/server/api/token-source.js';
import { apiMessages } from '../../../src/server/messages.js';
import { untilAborted } from '../../support/until-aborted.js';
import {
  ACCOUNT,
  BASE,
  CREDENTIAL,
  EXECUTION,
  EXECUTION_URL,
  PART_URL,
  T0,
  transactionAt,
  UA,
} from '../../support/api-shapes.js';
import { REGION_NAMES } from '../../../src/server/api/regions.js';

const BODY: AccountRequest = { customerInternalReference: 'order-1', workflowDefinition: { key: 10020 } };

afterEach(() => {
  vi.restoreAllMocks();
});

const credential = (changes: Record<string, unknown> = {}, api: Record<string, unknown> = {}) => ({
  id: CREDENTIAL,
  category: 'DATA',
  allowedChannels: ['API'],
  api: { token: 'tx-token', parts: { device_risk: PART_URL }, workflowExecution: EXECUTION_URL, ...api },
  ...changes,
});
const accountAnswer = (credentials: unknown = [credential()]) => ({
  account: { id: ACCOUNT },
  workflowExecution: { id: EXECUTION, credentials },
});

/** A token source that hands out numbered tokens and records invalidations. */
function tokens() {
  let n = 1;
  const invalidated: Array<string | undefined> = [];
  const source: TokenSource = {
    tokenUrl: 'https://auth.example/oauth2/token',
    clientId: 'client-1',
    getToken: async () => `at-${n}`,
    invalidate: async (refused) => void (invalidated.push(refused), n++),
    seal: async (s) => `sealed:${s}`,
    unseal: async (s) => s.replace(/^sealed:/, ''),
  };
  return { source, invalidated };
}

type Answer = Response | 'network' | (() => Response);
/** The API: each call answers the next of `answers` (the last repeats); what was sent is recorded. */
function api(...answers: Answer[]) {
  const sent: Array<{ url: string; init: RequestInit & { headers: Record<string, string> } }> = [];
  const fetch = (async (url: string, init: RequestInit) => {
    sent.push({ url: String(url), init: init as never });
    const answer = answers[Math.min(sent.length - 1, answers.length - 1)]!;
    if (answer === 'network') throw new TypeError('fetch failed');
    return typeof answer === 'function' ? answer() : answer.clone();
  }) as unknown as typeof globalThis.fetch;
  return { fetch, sent };
}

function client(fetch: typeof globalThis.fetch, extra: Partial<DeviceRiskClientOptions> = {}) {
  const waits: number[] = [];
  const t = tokens();
  const c = createDeviceRiskClient({
    tokenSource: t.source,
    baseUrl: BASE,
    userAgent: UA,
    fetch,
    now: () => T0,
    sleep: async (ms) => void waits.push(ms),
    ...extra,
  });
  return { client: c, waits, invalidated: t.invalidated };
}

/** The shapes' transaction, its token lapsing at `tokenExpiresAt`. */
const transaction = (tokenExpiresAt = T0 + 600_000) => transactionAt(tokenExpiresAt - 600_000);
const status = (code: number, headers: Record<string, string> = {}) => new Response('{}', { status: code, headers });
const workflowStatus = (value: string) => Response.json({ workflowExecution: { status: value } });

describe('regional addresses (docs/vendor-contract.md#the-service)', () => {
  it('are the documented hosts, and a region picks both', () => {
    expect(API_BASE_URLS).toEqual({
      US: 'https://account.amer-1.jumio.ai',
      EU: 'https://account.emea-1.jumio.ai',
      SG: 'https://account.apac-1.jumio.ai',
    });
    expect(RETRIEVAL_BASE_URLS).toEqual({
      US: 'https://retrieval.amer-1.jumio.ai',
      EU: 'https://retrieval.emea-1.jumio.ai',
      SG: 'https://retrieval.apac-1.jumio.ai',
    });
    const eu = createDeviceRiskClient({ tokenSource: tokens().source, region: 'EU', userAgent: UA });
    expect(eu.retrievalOrigin).toBe('https://retrieval.emea-1.jumio.ai');
    // How long an upload request can be on the wire: the endpoint's upload intent lasts that long.
    expect(eu.uploadTimeoutMs).toBe(15_000);
    expect(
      createDeviceRiskClient({ tokenSource: tokens().source, region: 'EU', userAgent: UA, timeoutMs: 4_000 })
        .uploadTimeoutMs,
    ).toBe(4_000);
  });

  it('with baseUrl and no retrievalBaseUrl, status is read from baseUrl', async () => {
    const { fetch, sent } = api(workflowStatus('PROCESSED'));
    await client(fetch).client.status(transaction());
    expect(sent[0]!.url).toBe(`${EXECUTION_URL}/status`);
  });

  it.each([
    ['no user agent', { userAgent: undefined }],
    ['a blank user agent', { userAgent: ' ' }],
    ['no region and no baseUrl', { baseUrl: undefined }],
  ])('%s is invalid_configuration', (_, change) => {
    expect(() =>
      createDeviceRiskClient({
        tokenSource: tokens().source,
        baseUrl: BASE,
        userAgent: UA,
        ...change,
      } as DeviceRiskClientOptions),
    ).toThrow(expect.objectContaining({ code: 'invalid_configuration' }));
  });
});

describe('checkBlackbox', () => {
  it.each([
    ['an empty string', ''],
    ['a number', 42],
    ['one character too long', 'A'.repeat(MAX_BLACKBOX_LENGTH + 1)],
  ])('refuses %s with invalid_blackbox', (_, value) => {
    expect(() => checkBlackbox(value)).toThrow(expect.objectContaining({ code: 'invalid_blackbox' }));
  });

  it('accepts the longest allowed', () => {
    expect(checkBlackbox('A'.repeat(MAX_BLACKBOX_LENGTH))).toHaveLength(MAX_BLACKBOX_LENGTH);
  });

  // The rules of docs/vendor-contract.md#the-blackbox, as src/shared/constants.ts states them.
  it.each([
    ['at its start', '!0400AAAA'],
    ['at its end', '0400AAAA!'],
    ['after its padding', '0400AAAA=A'],
    ['a space (a "+" form-decoded)', '0400AA AA'],
  ])('refuses a character outside the alphabet %s, saying so', (_, value) => {
    expect(() => checkBlackbox(value)).toThrow(
      expect.objectContaining({
        code: 'invalid_blackbox',
        message: expect.stringContaining(apiMessages.blackboxAlphabet),
      }),
    );
  });

  it('says an empty blackbox is empty, not outside the alphabet', () => {
    expect(() => checkBlackbox('')).toThrow(
      expect.objectContaining({ message: expect.stringContaining(apiMessages.blackboxEmpty) }),
    );
  });

  it('accepts the whole alphabet: base64, its padding, and the "@" of old ones', () => {
    const all = '0400ABCXYZabcxyz0189+/@==';
    expect(checkBlackbox(all)).toBe(all);
  });
});

describe('checkAccountRequest (the documented rules)', () => {
  it.each([
    ['no body', undefined],
    ['no reference', { workflowDefinition: { key: 1 } }],
    ['an empty reference', { customerInternalReference: '', workflowDefinition: { key: 1 } }],
    ['a reference of 101 characters', { customerInternalReference: 'r'.repeat(101), workflowDefinition: { key: 1 } }],
    ['a reference with a slash', { customerInternalReference: 'a/b', workflowDefinition: { key: 1 } }],
    ['no workflow definition', { customerInternalReference: 'r' }],
    ['an empty key', { customerInternalReference: 'r', workflowDefinition: { key: '' } }],
    ['a key that is an object', { customerInternalReference: 'r', workflowDefinition: { key: {} } }],
    ['a userReference of 101 characters', { ...BODY, userReference: 'u'.repeat(101) }],
    ['a userReference that is a number', { ...BODY, userReference: 5 }],
    ['a callbackUrl of 256 characters', { ...BODY, callbackUrl: 'https://shop.example/' + 'c'.repeat(235) }],
    ['a callbackUrl that is a number', { ...BODY, callbackUrl: 5 }],
    ['a tokenLifetime without unit', { ...BODY, tokenLifetime: '30' }],
    ['a tokenLifetime with a prefix', { ...BODY, tokenLifetime: 'x30m' }],
    ['a tokenLifetime with a suffix', { ...BODY, tokenLifetime: '30mx' }],
  ])('refuses %s: invalid_account_request, operation account', (_, body) => {
    expect(() => checkAccountRequest(body as AccountRequest)).toThrow(
      expect.objectContaining({ code: 'invalid_account_request', operation: 'account' }),
    );
  });

  it.each([
    ['a reference of 100 characters', { customerInternalReference: 'r'.repeat(100), workflowDefinition: { key: 1 } }],
    ['a string key', { customerInternalReference: 'r', workflowDefinition: { key: 'kyx' } }],
    ['a userReference of 100 characters', { ...BODY, userReference: 'u'.repeat(100) }],
    ['a callbackUrl of 255 characters', { ...BODY, callbackUrl: 'https://shop.example/' + 'c'.repeat(234) }],
    ['a tokenLifetime of 360m', { ...BODY, tokenLifetime: '360m' }],
  ])('accepts %s', (_, body) => {
    expect(() => checkAccountRequest(body as AccountRequest)).not.toThrow();
  });
});

describe('checkAccountRequest: tokenLifetime (docs/vendor-contract.md#the-account-request)', () => {
  it.each(['600s', '+30m', '5m', '300s', '60d', '1440h', '86400m'])('accepts %s: the shape and the bounds', (value) => {
    expect(() => checkAccountRequest({ ...BODY, tokenLifetime: value })).not.toThrow();
  });

  it.each([
    ['under 5 minutes', '299s'],
    ['4 minutes', '4m'],
    ['over 60 days', '61d'],
    ['60 days and a second', '5184001s'],
    ['negative', '-5m'],
    ['a unit in capitals', '30M'],
    ['a week unit', '1w'],
    ['no number', 'm'],
  ])('refuses one %s, naming the rule', (_, value) => {
    expect(() => checkAccountRequest({ ...BODY, tokenLifetime: value })).toThrow(
      expect.objectContaining({
        code: 'invalid_account_request',
        message: expect.stringContaining(apiMessages.tokenLifetimeShape),
      }),
    );
  });
});

describe('checkAccountRequest: callbackUrl (the service refuses one that breaks its rules)', () => {
  it.each([
    ['plain HTTP', 'http://shop.example/cb', 'HTTPS'],
    ['an IPv4 address', 'https://203.0.113.7/cb', 'not an IP address'],
    ['an IPv6 address', 'https://[2001:db8::1]/cb', 'not an IP address'],
    ['a port', 'https://shop.example:8443/cb', 'without a port'],
    ['the default port written out', 'https://shop.example:443/cb', 'without a port'],
    ['an empty port', 'https://shop.example:/cb', 'without a port'],
    ['a fragment', 'https://shop.example/cb#x', 'without a fragment'],
    ['credentials', 'https://user:pw@shop.example/cb', 'without credentials'],
    ['no URL', 'shop.example/cb', 'a URL'],
    ['loopback, the service not', 'http://127.0.0.1:4000/cb', 'HTTPS'],
  ])('refuses %s, naming the rule', (_, callbackUrl, rule) => {
    expect(() => checkAccountRequest({ ...BODY, callbackUrl })).toThrow(
      expect.objectContaining({ code: 'invalid_account_request', message: expect.stringContaining(rule) }),
    );
  });

  it.each(['http://127.0.0.1:4000/cb', 'http://localhost:3000/callback', 'https://[::1]:8443/cb'])(
    'accepts %s when the service itself is on loopback (the emulator)',
    (callbackUrl) => {
      expect(() => checkAccountRequest({ ...BODY, callbackUrl }, { local: true })).not.toThrow();
    },
  );

  it('keeps the rules on loopback for another host, even with a local service', () => {
    expect(() => checkAccountRequest({ ...BODY, callbackUrl: 'http://shop.example:4000/cb' }, { local: true })).toThrow(
      expect.objectContaining({ message: expect.stringContaining('HTTPS') }),
    );
  });

  it('a client on a service over HTTPS refuses a loopback callbackUrl before any call', async () => {
    const { fetch, sent } = api(Response.json(accountAnswer()));
    await expect(
      client(fetch).client.createAccount({ ...BODY, callbackUrl: 'http://127.0.0.1:4000/cb' }),
    ).rejects.toMatchObject({ code: 'invalid_account_request' });
    expect(sent).toHaveLength(0);
  });

  it('a client on a loopback service (the emulator) sends a loopback callbackUrl', async () => {
    const { fetch, sent } = api(Response.json(accountAnswer(), {}));
    const local = 'http://127.0.0.1:9';
    const answer = JSON.stringify(accountAnswer()).replaceAll(BASE, local);
    const c = client(api(new Response(answer, { headers: { 'content-type': 'application/json' } })).fetch, {
      baseUrl: local,
    }).client;
    expect(c.localService).toBe(true);
    await expect(c.createAccount({ ...BODY, callbackUrl: 'http://127.0.0.1:4000/cb' })).resolves.toBeDefined();
    expect(client(fetch).client.localService).toBe(false);
    expect(sent).toHaveLength(0);
  });
});

describe('hosts by role (docs/vendor-contract.md#hosts-by-role)', () => {
  const US = {
    account: 'https://account.amer-1.jumio.ai',
    api: 'https://api.amer-1.jumio.ai',
    retrieval: 'https://retrieval.amer-1.jumio.ai',
  };
  const answerOn = (origin: string) => JSON.parse(JSON.stringify(accountAnswer()).replaceAll(BASE, origin)) as unknown;

  it('with a region: create on its account host, upload and finalize on the api host the answer names', async () => {
    const { fetch, sent } = api(Response.json(answerOn(US.api)), status(200), status(200));
    const c = client(fetch, { baseUrl: undefined, region: 'US' }).client;
    const tx = await c.createAccount(BODY);
    await c.uploadBlackbox(tx, 'AAAA');
    await c.finalize(tx);
    expect(sent.map((s) => new URL(s.url).origin)).toEqual([US.account, US.api, US.api]);
    expect(c.retrievalOrigin).toBe(US.retrieval);
  });

  it('with a region: an upload address on the account host is refused before any token goes to it', async () => {
    const { fetch, sent } = api(Response.json(answerOn(US.account)));
    await expect(client(fetch, { baseUrl: undefined, region: 'US' }).client.createAccount(BODY)).rejects.toMatchObject({
      code: 'forged_address',
      message: expect.stringContaining(US.api),
    });
    expect(sent).toHaveLength(1);
  });

  it("with a region: another region's api host is refused", async () => {
    const { fetch } = api(Response.json(answerOn('https://api.emea-1.jumio.ai')));
    await expect(client(fetch, { baseUrl: undefined, region: 'US' }).client.createAccount(BODY)).rejects.toMatchObject({
      code: 'forged_address',
    });
  });

  it("a baseUrl that is a region's documented account host brings that region's api and retrieval hosts", async () => {
    const { fetch } = api(Response.json(answerOn('https://api.apac-1.jumio.ai')));
    const c = client(fetch, { baseUrl: 'https://account.apac-1.jumio.ai' }).client;
    await expect(c.createAccount(BODY)).resolves.toMatchObject({
      uploadUrl: expect.stringMatching(/^https:\/\/api\.apac-1\./),
    });
    expect(c.retrievalOrigin).toBe('https://retrieval.apac-1.jumio.ai');
  });

  it('another baseUrl (a private deployment) stands for every role; apiBaseUrl names the api host', async () => {
    const same = api(Response.json(accountAnswer()));
    await expect(client(same.fetch).client.createAccount(BODY)).resolves.toBeDefined();
    const apart = api(Response.json(answerOn('https://upload.example')));
    const c = client(apart.fetch, { apiBaseUrl: 'https://upload.example' }).client;
    await expect(c.createAccount(BODY)).resolves.toMatchObject({
      uploadUrl: expect.stringContaining('https://upload.example/'),
    });
    expect(apart.sent[0]!.url).toBe(`${BASE}/api/v1/accounts`);
    const refused = api(Response.json(accountAnswer()));
    await expect(
      client(refused.fetch, { apiBaseUrl: 'https://upload.example' }).client.createAccount(BODY),
    ).rejects.toMatchObject({ code: 'forged_address' });
  });

  it('an apiBaseUrl over plain HTTP off loopback is refused at start', () => {
    expect(() => client(api().fetch, { apiBaseUrl: 'http://upload.example' })).toThrow(
      expect.objectContaining({ code: 'insecure_url' }),
    );
  });

  it.each(['XX', '__proto__', 'toString', 'us'])(
    'a region %s that is none of the table is refused at start, naming them',
    (region) => {
      expect(() => client(api().fetch, { baseUrl: undefined, region: region as never })).toThrow(
        expect.objectContaining({
          code: 'invalid_configuration',
          message: expect.stringContaining(REGION_NAMES.join(', ')),
        }),
      );
    },
  );

  it('a stored transaction whose part name is none of ours matches no address', async () => {
    const stored = transaction().toJSON();
    const forged = new DeviceRiskTransaction({ ...stored, part: 'constructor' as never, token: 'tx-token' });
    const { fetch, sent } = api(status(200));
    await expect(client(fetch).client.uploadBlackbox(forged, 'AAAA')).rejects.toMatchObject({ code: 'forged_address' });
    expect(sent).toHaveLength(0);
  });
});

describe('the part name (docs/vendor-contract.md#the-part-name)', () => {
  const prepared = () =>
    credential({}, { parts: { prepared_data: PART_URL.replace(/DEVICE_RISK$/, 'PREPARED_DATA') } });

  it('takes a prepared_data part, keeps which one it was, and uploads { sessionId } to it', async () => {
    const { fetch, sent } = api(Response.json(accountAnswer([prepared()])), status(200));
    const c = client(fetch).client;
    const tx = await c.createAccount(BODY);
    expect(tx.part).toBe('prepared_data');
    expect(tx.toJSON()).toMatchObject({ part: 'prepared_data' });
    await c.uploadBlackbox(tx, 'AAAA');
    expect(sent[1]!.url).toMatch(/\/parts\/PREPARED_DATA$/);
    expect(JSON.parse(sent[1]!.init.body as string)).toEqual({ sessionId: 'AAAA' });
    const reopened = await c.openTransaction(await c.sealTransaction(tx));
    expect(reopened.part).toBe('prepared_data');
  });

  it('a prepared_data key whose address ends in another part is refused', async () => {
    const mixed = credential({}, { parts: { prepared_data: PART_URL } });
    await expect(
      client(api(Response.json(accountAnswer([mixed]))).fetch).client.createAccount(BODY),
    ).rejects.toMatchObject({
      code: 'forged_address',
    });
  });

  it('a transaction sealed before parts were kept opens as device_risk', async () => {
    const c = client(api().fetch).client;
    const { part: _part, ...old } = transaction().toJSON();
    const reopened = await c.openTransaction(JSON.stringify({ ...old, token: 'sealed:tx-token' }));
    expect(reopened.part).toBe('device_risk');
  });
});

describe('the expiry is what was asked for', () => {
  it('asks for 30m explicitly when the request names no lifetime, and keeps 30 minutes', async () => {
    const { fetch, sent } = api(Response.json(accountAnswer()));
    const tx = await client(fetch).client.createAccount(BODY);
    expect(JSON.parse(sent[0]!.init.body as string)).toMatchObject({ tokenLifetime: '30m' });
    expect(tx.tokenExpiresAt).toBe(T0 + 30 * 60_000);
  });

  it.each([
    ['600s', 600_000],
    ['+45m', 45 * 60_000],
  ])('keeps %s as asked', async (tokenLifetime, ms) => {
    const { fetch, sent } = api(Response.json(accountAnswer()));
    const tx = await client(fetch).client.createAccount({ ...BODY, tokenLifetime });
    expect(JSON.parse(sent[0]!.init.body as string)).toMatchObject({ tokenLifetime });
    expect(tx.tokenExpiresAt).toBe(T0 + ms);
  });
});

describe('account create and update', () => {
  it('sends JSON with the access token, accept and content-type; the transaction lives tokenLifetime from when the request left', async () => {
    const { fetch, sent } = api(Response.json(accountAnswer()));
    const { client: c } = client(fetch);
    const tx = await c.createAccount({ ...BODY, tokenLifetime: '12h' });
    expect(sent[0]!.init.headers).toMatchObject({
      authorization: 'Bearer at-1',
      accept: 'application/json',
      'content-type': 'application/json',
      'user-agent': UA,
    });
    expect(tx.tokenExpiresAt).toBe(T0 + 12 * 3_600_000);
    expect((await c.createAccount({ ...BODY, tokenLifetime: '5d' })).tokenExpiresAt).toBe(T0 + 5 * 86_400_000);
    expect((await c.createAccount({ ...BODY, tokenLifetime: '45m' })).tokenExpiresAt).toBe(T0 + 45 * 60_000);
    expect((await c.createAccount(BODY)).tokenExpiresAt).toBe(T0 + 30 * 60_000);
  });

  it('an update is a PUT to the account and is retried after a 5xx; a create is not', async () => {
    const update = api(status(503), Response.json(accountAnswer()));
    await client(update.fetch).client.updateAccount(ACCOUNT, BODY);
    expect(update.sent.map((s) => [s.init.method, s.url])).toEqual([
      ['PUT', `${BASE}/api/v1/accounts/${ACCOUNT}`],
      ['PUT', `${BASE}/api/v1/accounts/${ACCOUNT}`],
    ]);
    const create = api(status(503), Response.json(accountAnswer()));
    await expect(client(create.fetch).client.createAccount(BODY)).rejects.toMatchObject({
      code: 'upstream_error',
      status: 503,
      operation: 'account create',
    });
    expect(create.sent).toHaveLength(1);
  });

  it('an update of an account id that is no UUID is refused before any call', () => {
    const { fetch, sent } = api(Response.json(accountAnswer()));
    expect(() => client(fetch).client.updateAccount('../x', BODY)).toThrow(
      expect.objectContaining({ code: 'invalid_configuration' }),
    );
    expect(sent).toHaveLength(0);
  });

  it('an answer that is not JSON is invalid_response for that operation', async () => {
    const { fetch } = api(new Response('<html>', { status: 200 }));
    await expect(client(fetch).client.createAccount(BODY)).rejects.toMatchObject({
      code: 'invalid_response',
      operation: 'account create',
    });
  });

  it.each([
    ['no credentials', accountAnswer(null), 'invalid_response'],
    ['credentials at the top level are read too', { credentials: [credential()] }, undefined],
    ['no DATA credential', accountAnswer([credential({ category: 'ID' })]), 'no_device_risk_credential'],
    ['no API channel', accountAnswer([credential({ allowedChannels: ['WEB'] })]), 'no_device_risk_credential'],
    ['no token', accountAnswer([credential({}, { token: undefined })]), 'invalid_response'],
    ['an empty token', accountAnswer([credential({}, { token: '' })]), 'invalid_response'],
    [
      "a credential id that is not the upload address's",
      accountAnswer([credential({ id: EXECUTION })]),
      'forged_address',
    ],
    ['no credential id (the address decides)', accountAnswer([credential({ id: undefined })]), undefined],
    [
      'an upload address of another execution',
      accountAnswer([credential({}, { parts: { device_risk: PART_URL.replace(EXECUTION, CREDENTIAL) } })]),
      'forged_address',
    ],
  ])('an account answer with %s', async (_, answer, code) => {
    const result = client(api(Response.json(answer)).fetch).client.createAccount(BODY);
    if (code === undefined)
      expect(await result).toMatchObject({
        accountId: ACCOUNT,
        workflowExecutionId: EXECUTION,
        credentialId: CREDENTIAL,
      });
    else
      await expect(result).rejects.toMatchObject({
        code,
        ...(code === 'forged_address' ? {} : { operation: 'account' }),
      });
  });
});

describe('what each failure says', () => {
  it('a dropped connection on a repeatable call is retried after 0–250·2^attempt ms, and the last one carries operation and cause', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const { fetch, sent } = api('network');
    const { client: c, waits } = client(fetch, { maxAttempts: 3 });
    await expect(c.uploadBlackbox(transaction(), 'AAAA')).rejects.toMatchObject({
      code: 'network_error',
      operation: 'upload',
      cause: expect.any(TypeError),
    });
    expect(sent).toHaveLength(3);
    expect(waits).toEqual([250, 500]);
  });

  it('a 5xx without Retry-After waits with jitter; with Retry-After it waits that (at most 30 s)', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(1);
    const jitter = client(api(status(500), status(200)).fetch);
    await jitter.client.uploadBlackbox(transaction(), 'AAAA');
    expect(jitter.waits).toEqual([500]);
    const told = client(
      api(status(503, { 'retry-after': '4' }), status(503, { 'retry-after': '90' }), status(200)).fetch,
    );
    await told.client.uploadBlackbox(transaction(), 'AAAA');
    expect(told.waits).toEqual([4000, 30_000]);
  });

  it('the last 429 is rate_limited with its Retry-After; the last 500 is upstream_error', async () => {
    await expect(
      client(api(status(429, { 'retry-after': '2' })).fetch, { maxAttempts: 2 }).client.uploadBlackbox(
        transaction(),
        'AAAA',
      ),
    ).rejects.toMatchObject({ code: 'rate_limited', status: 429, retryAfter: 2, operation: 'upload' });
    await expect(
      client(api(status(500)).fetch, { maxAttempts: 2 }).client.finalize(transaction()),
    ).rejects.toMatchObject({ code: 'upstream_error', status: 500, operation: 'finalize' });
  });

  it('a 400 is request_rejected at once, carrying a Retry-After only when one was sent', async () => {
    const plain = api(status(400));
    const error = await client(plain.fetch)
      .client.uploadBlackbox(transaction(), 'AAAA')
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'request_rejected', status: 400, operation: 'upload' });
    expect(error).not.toHaveProperty('retryAfter');
    expect(plain.sent).toHaveLength(1);
    await expect(
      client(api(status(403, { 'retry-after': '9' })).fetch).client.uploadBlackbox(transaction(), 'AAAA'),
    ).rejects.toMatchObject({ retryAfter: 9 });
  });

  it('a 500 on a call that is not repeatable is upstream_error at once', async () => {
    const { fetch, sent } = api(status(500));
    await expect(client(fetch).client.createAccount(BODY)).rejects.toMatchObject({
      code: 'upstream_error',
      status: 500,
    });
    expect(sent).toHaveLength(1);
  });

  it("a 401 on a call with the access token gets a new token once; the transaction token's 401 is not retried", async () => {
    const { fetch, sent } = api(status(401), workflowStatus('PROCESSED'));
    const { client: c, invalidated } = client(fetch);
    expect(await c.status(transaction())).toBe('PROCESSED');
    expect(invalidated).toEqual(['at-1']);
    expect(sent.map((s) => s.init.headers.authorization)).toEqual(['Bearer at-1', 'Bearer at-2']);
    const upload = api(status(401));
    const second = client(upload.fetch);
    await expect(second.client.uploadBlackbox(transaction(), 'AAAA')).rejects.toMatchObject({
      code: 'request_rejected',
      status: 401,
    });
    expect(second.invalidated).toEqual([]);
    expect(upload.sent).toHaveLength(1);
  });

  it('a token source failure is passed on as it is, not retried as a network error', async () => {
    const failure = Object.assign(
      new (await import('../../../src/server/errors.js')).DeviceRiskError('token_rejected', 'no'),
      {},
    );
    const c = createDeviceRiskClient({
      tokenSource: { ...tokens().source, getToken: async () => Promise.reject(failure) },
      baseUrl: BASE,
      userAgent: UA,
      fetch: api(status(200)).fetch,
      sleep: async () => {},
    });
    await expect(c.status(transaction())).rejects.toBe(failure);
  });

  it('a 204 answer is a success with no body', async () => {
    const { fetch } = api(new Response(null, { status: 204 }));
    await expect(client(fetch).client.finalize(transaction())).resolves.toBeUndefined();
  });
});

describe('transactions', () => {
  it('a transaction token is usable until 30 s before its expiry', async () => {
    const { fetch, sent } = api(status(200));
    const { client: c } = client(fetch);
    await c.uploadBlackbox(transaction(T0 + 30_001), 'AAAA');
    await expect(c.uploadBlackbox(transaction(T0 + 30_000), 'AAAA')).rejects.toMatchObject({
      code: 'transaction_token_expired',
      operation: 'upload',
    });
    await expect(c.finalize(transaction(T0 + 30_000))).rejects.toMatchObject({
      code: 'transaction_token_expired',
      operation: 'finalize',
    });
    expect(sent).toHaveLength(1);
  });

  it('upload sends { sessionId } with the transaction token, no access token', async () => {
    const { fetch, sent } = api(status(200));
    await client(fetch).client.uploadBlackbox(transaction(), 'AAAA');
    expect(sent[0]!.init.headers.authorization).toBe('Bearer tx-token');
    expect(JSON.parse(sent[0]!.init.body as string)).toEqual({ sessionId: 'AAAA' });
  });

  it('finalize sends no body, with the JSON content-type all the same', async () => {
    const { fetch, sent } = api(status(200));
    await client(fetch).client.finalize(transaction());
    expect(sent[0]!.init).not.toHaveProperty('body');
    expect(sent[0]!.init.headers).toHaveProperty('content-type', 'application/json');
  });

  it('a finalize answered 409 counts as done only when the status says PROCESSED', async () => {
    await expect(
      client(api(status(409), workflowStatus('PROCESSED')).fetch).client.finalize(transaction()),
    ).resolves.toBeUndefined();
    await expect(
      client(api(status(409), workflowStatus('ACQUIRED')).fetch).client.finalize(transaction()),
    ).rejects.toMatchObject({ code: 'result_not_ready' });
    await expect(
      client(api(status(409), workflowStatus('INITIATED')).fetch).client.finalize(transaction()),
    ).rejects.toMatchObject({ status: 409 });
    // The status read failed: its failure stands (a later try can tell), not the 409.
    await expect(
      client(api(status(409), status(500)).fetch, { maxAttempts: 1 }).client.finalize(transaction()),
    ).rejects.toMatchObject({ status: 500 });
  });

  it('a transaction rebuilt by hand with a forged address is refused before any call', async () => {
    const { fetch, sent } = api(status(200));
    const forged = new DeviceRiskTransaction({
      ...transaction().toJSON(),
      finalizeUrl: 'https://evil.example/api/v1/accounts/x',
      token: 't',
    });
    await expect(client(fetch).client.finalize(forged)).rejects.toMatchObject({ code: 'forged_address' });
    await expect(
      client(fetch).client.uploadBlackbox({ ...transaction().toJSON() } as never, 'AAAA'),
    ).rejects.toMatchObject({ code: 'invalid_configuration' });
    expect(sent).toHaveLength(0);
  });
});

describe('status, details and waitForResult', () => {
  it('status and details refuse ids that are no UUIDs, naming the operation', async () => {
    const { fetch, sent } = api(workflowStatus('PROCESSED'));
    const { client: c } = client(fetch);
    await expect(c.status({ accountId: ACCOUNT, workflowExecutionId: '../x' })).rejects.toMatchObject({
      code: 'invalid_configuration',
      operation: 'status',
    });
    await expect(c.details({ accountId: '../x', workflowExecutionId: EXECUTION })).rejects.toMatchObject({
      code: 'invalid_configuration',
      operation: 'details',
    });
    await expect(c.waitForResult({ accountId: ACCOUNT, workflowExecutionId: 5 as never })).rejects.toMatchObject({
      code: 'invalid_configuration',
      operation: 'waitForResult',
    });
    await expect(c.status(undefined as never)).rejects.toMatchObject({ code: 'invalid_configuration' });
    expect(sent).toHaveLength(0);
  });

  it.each([
    ['no workflowExecution', {}],
    ['a status that is not a string', { workflowExecution: { status: 3 } }],
  ])('a status answer with %s is invalid_response', async (_, body) => {
    await expect(client(api(Response.json(body)).fetch).client.status(transaction())).rejects.toMatchObject({
      code: 'invalid_response',
      operation: 'status',
    });
  });

  it('a status answer that is not JSON is invalid_response', async () => {
    await expect(client(api(new Response('nope')).fetch).client.status(transaction())).rejects.toMatchObject({
      code: 'invalid_response',
    });
  });

  it('status and details are retried after a 5xx (they are reads), and use the access token', async () => {
    const { fetch, sent } = api(status(502), workflowStatus('FINALIZED'));
    expect(await client(fetch).client.status(transaction())).toBe('FINALIZED');
    expect(sent).toHaveLength(2);
    const details = api(status(502), Response.json({ workflow: { status: 'PROCESSED' } }));
    await client(details.fetch).client.details(transaction());
    expect(details.sent.map((s) => s.init.headers.authorization)).toEqual(['Bearer at-1', 'Bearer at-1']);
  });

  it("waitForResult waits the schedule's differences, at most 10 reads, then result_not_ready naming the last status", async () => {
    const { fetch, sent } = api(workflowStatus('FINALIZED'));
    const { client: c, waits } = client(fetch);
    const schedule = [1, 3, 6, 10, 15, 21, 28, 36, 45, 55, 66];
    await expect(c.waitForResult(transaction(), { schedule })).rejects.toMatchObject({
      code: 'result_not_ready',
      operation: 'waitForResult',
    });
    expect(waits).toEqual([1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10_000]);
    expect(sent).toHaveLength(10);
  });

  it.each(['SESSION_EXPIRED', 'TOKEN_EXPIRED'])('waitForResult ends at %s with workflow_expired', async (value) => {
    const { fetch, sent } = api(workflowStatus(value));
    await expect(client(fetch).client.waitForResult(transaction(), { schedule: [0, 1, 2] })).rejects.toMatchObject({
      code: 'workflow_expired',
      operation: 'waitForResult',
    });
    expect(sent).toHaveLength(1);
  });

  it("waitForResult aborted during a wait, before a read or after it is aborted with the signal's reason as cause", async () => {
    const reason = new Error('left');
    const controller = new AbortController();
    const { fetch } = api(workflowStatus('FINALIZED'));
    const during = createDeviceRiskClient({
      tokenSource: tokens().source,
      baseUrl: BASE,
      userAgent: UA,
      fetch,
      sleep: (_ms, signal) => untilAborted(signal),
    });
    const pending = during.waitForResult(transaction(), { signal: controller.signal, schedule: [5] });
    controller.abort(reason);
    await expect(pending).rejects.toMatchObject({ code: 'aborted', operation: 'waitForResult', cause: reason });
    const already = AbortSignal.abort(reason);
    await expect(
      client(fetch).client.waitForResult(transaction(), { signal: already, schedule: [0] }),
    ).rejects.toMatchObject({ code: 'aborted', cause: reason });
    // Aborted while the wait ended: no read follows.
    const late = new AbortController();
    const reads = api(workflowStatus('FINALIZED'));
    const after = createDeviceRiskClient({
      tokenSource: tokens().source,
      baseUrl: BASE,
      userAgent: UA,
      fetch: reads.fetch,
      sleep: async () => late.abort(reason),
    });
    await expect(after.waitForResult(transaction(), { signal: late.signal, schedule: [1] })).rejects.toMatchObject({
      code: 'aborted',
    });
    expect(reads.sent).toHaveLength(0);
  });

  it('a failing sleep that is no abort is passed on as it is', async () => {
    const failure = new Error('timer broke');
    const c = createDeviceRiskClient({
      tokenSource: tokens().source,
      baseUrl: BASE,
      userAgent: UA,
      fetch: api(workflowStatus('FINALIZED')).fetch,
      sleep: async () => Promise.reject(failure),
    });
    await expect(c.waitForResult(transaction(), { signal: new AbortController().signal, schedule: [1] })).rejects.toBe(
      failure,
    );
  });
});
