// The emulated service's rules one by one, on its web-standard handlers (no sockets): every
// refusal of the token endpoint, the account rules, upload and finalize states, decisions,
// the device data it derives, the details shape, routes and methods.
import { describe, expect, it } from 'vitest';
import { parseTokenLifetime } from '../../../src/emulator/service/service.js';
import { ACCOUNT_ORIGIN, blackbox, CHROME, oauth, ORIGIN, problemOf, setup } from '../../support/emulated-service.js';

describe('parseTokenLifetime', () => {
  it.each([
    ['5m', 300_000],
    ['30m', 1_800_000],
    ['12h', 43_200_000],
    ['60d', 5_184_000_000],
    ['1440m', 86_400_000],
    ['4m', undefined],
    ['61d', undefined],
    ['1000000m', undefined],
    ['5s', undefined],
    ['m', undefined],
    [' 5m', undefined],
    ['5m ', undefined],
    ['5.5h', undefined],
  ])('%s is %s', (value, ms) => {
    expect(parseTokenLifetime(value)).toBe(ms);
  });
});

describe('token endpoint', () => {
  it('answers the spec shape, and the token works until it expires', async () => {
    const { tokenRequest, call, advance } = setup({ accessTokenLifetimeSeconds: 60 });
    const response = await tokenRequest();
    expect(response.status).toBe(200);
    const body = (await response.json()) as { access_token: string; expires_in: number; token_type: string };
    expect(body).toEqual({ access_token: expect.stringMatching(/^[\w-]{43}$/), expires_in: 60, token_type: 'Bearer' });
    const status = (auth: string) =>
      call(
        'GET',
        '/api/v1/accounts/00000000-0000-4000-8000-000000000000/workflow-executions/00000000-0000-4000-8000-000000000000/status',
        undefined,
        { authorization: auth },
      );
    expect((await status(`Bearer ${body.access_token}`)).status).toBe(404); // authorized: the ids are unknown
    advance(59_999);
    expect((await status(`Bearer ${body.access_token}`)).status).toBe(404);
    advance(1);
    expect(await problemOf(await status(`Bearer ${body.access_token}`))).toEqual([401, 'The access token has expired']);
    expect(await problemOf(await status('Bearer unknown'))).toEqual([401, 'A valid access token is required']);
  });

  it.each([
    ['another path', () => [{}, undefined, 'POST', '/oauth2/other'], 404],
    ['GET', () => [{}, undefined, 'GET'], 400, 'invalid_request'],
    ['no Accept', () => [{ accept: undefined }], 400, 'invalid_request'],
    ['Accept text/html', () => [{ accept: 'text/html' }], 400, 'invalid_request'],
    ['a JSON body', () => [{ 'content-type': 'application/json' }], 400, 'invalid_request'],
    ['no Basic authentication', () => [{ authorization: undefined }], 400, 'invalid_request'],
    ['Bearer instead of Basic', () => [{ authorization: 'Bearer x' }], 400, 'invalid_request'],
    ['another grant type', () => [{}, 'grant_type=password'], 400, 'unsupported_grant_type'],
    ['no grant type', () => [{}, ''], 400, 'unsupported_grant_type'],
  ])('%s is refused', async (_, args, status, error?: string) => {
    const { tokenRequest } = setup();
    const response = await tokenRequest(...(args() as Parameters<typeof tokenRequest>));
    expect(response.status).toBe(status);
    if (error) expect(((await response.json()) as { error: string }).error).toBe(error);
  });

  it('refuses a missing or library User-Agent (400, 403)', async () => {
    const { tokenRequest } = setup();
    expect((await tokenRequest({ 'user-agent': undefined })).status).toBe(400);
    for (const agent of [
      'node',
      'undici',
      'curl/8.5',
      'python-requests/2',
      'axios/1',
      'Go-http-client/1.1',
      'okhttp/4',
    ])
      expect((await tokenRequest({ 'user-agent': agent })).status, agent).toBe(403);
    expect((await tokenRequest({ 'user-agent': 'nodeshop Checkout/1' })).status).toBe(200);
  });

  it('a wrong id or secret is 401 invalid_client with WWW-Authenticate', async () => {
    const { tokenRequest, basic } = setup();
    for (const authorization of [
      basic('client-2'),
      basic('client-1', 'secret-2'),
      basic('client-1', 'secret-1x'),
      basic('', 'secret-1'),
    ]) {
      const response = await tokenRequest({ authorization });
      expect(await oauth(response.clone())).toEqual([401, 'invalid_client']);
      expect(response.headers.get('www-authenticate')).toBe('Basic realm="oauth2"');
    }
  });

  it('form-decodes id and secret (RFC 6749 2.3.1); a broken escape is taken as written', async () => {
    const { tokenRequest, basic } = setup({ clientId: 'id with+plus:', clientSecret: 'pa ss:w%rd' });
    expect((await tokenRequest({ authorization: basic('id+with%2Bplus%3A', 'pa+ss%3Aw%25rd') })).status).toBe(200);
    const raw = setup({ clientId: 'id%E0%A4%A', clientSecret: 's' });
    expect((await raw.tokenRequest({ authorization: raw.basic('id%E0%A4%A', 's') })).status).toBe(200);
  });

  it('10 requests a second, then 429 with Retry-After: 1; a second later there is room again', async () => {
    const { tokenRequest, advance } = setup();
    for (let i = 0; i < 10; i++) expect((await tokenRequest()).status).toBe(200);
    const limited = await tokenRequest();
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    advance(999);
    expect((await tokenRequest()).status).toBe(429);
    advance(1);
    expect((await tokenRequest()).status).toBe(200);
  });
});

describe('accounts', () => {
  it.each([
    ['a body that is no object', 'null', 'The body must be a JSON object'],
    ['a body that is a string', '"x"', 'The body must be a JSON object'],
    ['no customerInternalReference', { workflowDefinition: { key: 1 } }, 'customerInternalReference is required'],
    [
      'an empty customerInternalReference',
      { customerInternalReference: '', workflowDefinition: { key: 1 } },
      'customerInternalReference is required',
    ],
    [
      'a numeric customerInternalReference',
      { customerInternalReference: 5, workflowDefinition: { key: 1 } },
      'customerInternalReference is required',
    ],
    [
      'a customerInternalReference of 101 characters',
      { customerInternalReference: 'x'.repeat(101), workflowDefinition: { key: 1 } },
      'at most 100 characters',
    ],
    ...[...'<>"/;`%{}|'].map(
      (c) =>
        [
          `a customerInternalReference with ${c}`,
          { customerInternalReference: `a${c}b`, workflowDefinition: { key: 1 } },
          'forbidden character',
        ] as [string, unknown, string],
    ),
    ['no workflowDefinition', { customerInternalReference: 'o' }, 'workflowDefinition.key is required'],
    [
      'an empty key',
      { customerInternalReference: 'o', workflowDefinition: { key: '' } },
      'workflowDefinition.key is required',
    ],
    [
      'a boolean key',
      { customerInternalReference: 'o', workflowDefinition: { key: true } },
      'workflowDefinition.key is required',
    ],
    [
      'a numeric userReference',
      { customerInternalReference: 'o', workflowDefinition: { key: 1 }, userReference: 5 },
      'userReference must be',
    ],
    [
      'a userReference of 101 characters',
      { customerInternalReference: 'o', workflowDefinition: { key: 1 }, userReference: 'u'.repeat(101) },
      'userReference must be',
    ],
    [
      'a callbackUrl that is no string',
      { customerInternalReference: 'o', workflowDefinition: { key: 1 }, callbackUrl: 5 },
      'at most 255 characters',
    ],
    [
      'a callbackUrl of 256 characters',
      {
        customerInternalReference: 'o',
        workflowDefinition: { key: 1 },
        callbackUrl: 'https://a.example/' + 'p'.repeat(238),
      },
      'at most 255 characters',
    ],
    [
      'a callbackUrl that is no URL',
      { customerInternalReference: 'o', workflowDefinition: { key: 1 }, callbackUrl: 'not a url' },
      'callbackUrl must be a URL',
    ],
    [
      'an http callbackUrl off loopback',
      { customerInternalReference: 'o', workflowDefinition: { key: 1 }, callbackUrl: 'http://shop.example/cb' },
      'callbackUrl must use https',
    ],
    [
      'an http callbackUrl on a host that starts like loopback',
      { customerInternalReference: 'o', workflowDefinition: { key: 1 }, callbackUrl: 'http://localhost.example/cb' },
      'callbackUrl must use https',
    ],
    [
      'a tokenLifetime that is a number',
      { customerInternalReference: 'o', workflowDefinition: { key: 1 }, tokenLifetime: 30 },
      'tokenLifetime must look like',
    ],
    [
      'a tokenLifetime out of range',
      { customerInternalReference: 'o', workflowDefinition: { key: 1 }, tokenLifetime: '1m' },
      'tokenLifetime must look like',
    ],
  ])('%s is 400', async (_, body, detail) => {
    const { create } = setup();
    const response = await create(body);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { detail: string }).detail).toContain(detail);
  });

  it.each([
    [
      'a customerInternalReference of 100 characters',
      { customerInternalReference: 'x'.repeat(100), workflowDefinition: { key: 1 } },
    ],
    ['a string key', { customerInternalReference: 'o', workflowDefinition: { key: 'kyc' } }],
    [
      'an https callbackUrl of 255 characters',
      {
        customerInternalReference: 'o',
        workflowDefinition: { key: 1 },
        callbackUrl: 'https://a.example/' + 'p'.repeat(237),
      },
    ],
    ...['http://127.0.0.1:9/cb', 'http://localhost/cb', 'http://[::1]:9/cb'].map(
      (url) =>
        [
          `an http callbackUrl on ${url}`,
          { customerInternalReference: 'o', workflowDefinition: { key: 1 }, callbackUrl: url },
        ] as [string, unknown],
    ),
    [
      'a userReference of 100 characters',
      { customerInternalReference: 'o', workflowDefinition: { key: 1 }, userReference: 'u'.repeat(100) },
    ],
  ])('%s is accepted', async (_, body) => {
    const { create } = setup();
    expect((await create(body)).status).toBe(200);
  });

  it('needs the access token and a proper User-Agent; wrong methods are 405 with Allow', async () => {
    const { create, call } = setup();
    expect((await create(undefined, { authorization: undefined })).status).toBe(401);
    expect((await create(undefined, { 'user-agent': 'curl/8' })).status).toBe(403);
    expect((await create(undefined, { 'content-type': 'text/plain' })).status).toBe(400);
    expect((await create('{not json')).status).toBe(400);
    for (const [method, path, allow] of [
      ['GET', '/api/v1/accounts', 'POST'],
      ['POST', '/api/v1/accounts/00000000-0000-4000-8000-000000000000', 'PUT'],
    ] as const) {
      const response = await call(method, path, method === 'GET' ? undefined : {});
      expect([response.status, response.headers.get('allow')]).toEqual([405, allow]);
    }
    expect((await call('GET', '/api/v2/accounts')).status).toBe(404);
  });

  it('a workflows table decides: unknown keys are 400, a key without Device Risk gets another credential', async () => {
    const { create } = setup({ workflows: { '1': { deviceRisk: true }, '2': { deviceRisk: false } } });
    expect((await create({ customerInternalReference: 'o', workflowDefinition: { key: 3 } })).status).toBe(400);
    const ok = (await (await create({ customerInternalReference: 'o', workflowDefinition: { key: 1 } })).json()) as {
      workflowExecution: { credentials: Array<{ category: string; label?: string; allowedChannels: string[] }> };
    };
    expect(ok.workflowExecution.credentials).toEqual([
      expect.objectContaining({ category: 'DATA', label: 'DATA', allowedChannels: ['API'] }),
    ]);
    const other = (await (await create({ customerInternalReference: 'o', workflowDefinition: { key: 2 } })).json()) as {
      workflowExecution: { credentials: Array<{ category: string; api: { parts: Record<string, string> } }> };
    };
    expect(other.workflowExecution.credentials).toEqual([
      expect.objectContaining({ category: 'ID', allowedChannels: ['WEB', 'API', 'SDK'] }),
    ]);
    expect(other.workflowExecution.credentials[0]!.api.parts.device_risk).toBeUndefined();
  });

  it('addresses are built for the origin the client called (X-Forwarded-Host and -Proto)', async () => {
    const { create } = setup();
    const direct = (await (await create()).json()) as {
      workflowExecution: { credentials: Array<{ api: { workflowExecution: string } }> };
    };
    expect(direct.workflowExecution.credentials[0]!.api.workflowExecution).toMatch(
      /^https:\/\/api\.test\/api\/v1\/accounts\//,
    );
    const proxied = (await (
      await create(undefined, { 'x-forwarded-host': 'account.emea-1.jumio.ai' })
    ).json()) as typeof direct;
    // Called as the region's account host: the addresses are on its API host, as the service's are.
    expect(proxied.workflowExecution.credentials[0]!.api.workflowExecution).toMatch(
      /^https:\/\/api\.emea-1\.jumio\.ai\/api\/v1\/accounts\//,
    );
    const plain = (await (
      await create(undefined, { 'x-forwarded-host': 'account.h.test:8080', 'x-forwarded-proto': 'http' })
    ).json()) as typeof direct;
    expect(plain.workflowExecution.credentials[0]!.api.workflowExecution).toMatch(/^http:\/\/api\.h\.test:8080\//);
    // A forwarded host that names no account host: the emulator's own API host.
    const other = (await (
      await create(undefined, { 'x-forwarded-host': 'shop.example', 'x-forwarded-proto': 'http' })
    ).json()) as typeof direct;
    expect(other.workflowExecution.credentials[0]!.api.workflowExecution).toMatch(
      /^https:\/\/api\.test\/api\/v1\/accounts\//,
    );
  });

  it('account requests: the burst, then 429, refilled at the rate', async () => {
    const { create, advance } = setup({ accountRequestsPerSecond: 2, accountBurst: 3 });
    for (let i = 0; i < 3; i++) expect((await create()).status).toBe(200);
    const limited = await create();
    expect([limited.status, limited.headers.get('retry-after')]).toEqual([429, '1']);
    advance(499);
    expect((await create()).status).toBe(429);
    advance(1);
    expect((await create()).status).toBe(200);
    expect((await create()).status).toBe(429);
    advance(10_000);
    for (let i = 0; i < 3; i++) expect((await create()).status).toBe(200); // never above the burst
    expect((await create()).status).toBe(429);
  });

  it('retrievals: 15 a second, then 429 with the documented body, until the second has passed', async () => {
    const { call, transaction, advance } = setup();
    const tx = await transaction();
    const status = `/api/v1/accounts/${tx.accountId}/workflow-executions/${tx.executionId}/status`;
    const details = `/api/v1/accounts/${tx.accountId}/workflow-executions/${tx.executionId}`;
    for (let i = 0; i < 14; i++)
      expect((await call('GET', i % 2 ? status : details, undefined, {}, 'retrieval')).status).toBe(200);
    expect((await call('GET', status, undefined, {}, 'retrieval')).status).toBe(200); // the 15th
    const refused = await call('GET', details, undefined, {}, 'retrieval');
    expect([refused.status, refused.headers.get('retry-after')]).toEqual([429, '1']);
    expect(await refused.json()).toEqual({ title: 'Too Many Requests', status: 429, detail: 'Request limit exceeded' });
    expect((await call('GET', status, undefined, {}, 'retrieval')).status).toBe(429);
    advance(999);
    expect((await call('GET', status, undefined, {}, 'retrieval')).status).toBe(429);
    advance(1);
    expect((await call('GET', status, undefined, {}, 'retrieval')).status).toBe(200);
  });

  it('a limit of 0 is no limit: tokens and retrievals', async () => {
    const { call, transaction, tokenRequest } = setup({ tokenRequestsPerSecond: 0, retrievalRequestsPerSecond: 0 });
    for (let i = 0; i < 30; i++) expect((await tokenRequest()).status).toBe(200);
    const tx = await transaction();
    const status = `/api/v1/accounts/${tx.accountId}/workflow-executions/${tx.executionId}/status`;
    for (let i = 0; i < 40; i++) expect((await call('GET', status, undefined, {}, 'retrieval')).status).toBe(200);
  });

  it('token requests: 10 a second, then 429 with the documented body', async () => {
    const { tokenRequest, advance } = setup();
    for (let i = 0; i < 10; i++) expect((await tokenRequest()).status).toBe(200);
    const refused = await tokenRequest();
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ title: 'Too Many Requests', status: 429, detail: 'Request limit exceeded' });
    advance(1000);
    expect((await tokenRequest()).status).toBe(200);
  });

  it('update: an unknown account is 404; a known one gets a new execution', async () => {
    const { call, transaction } = setup();
    const tx = await transaction();
    expect(
      (
        await call('PUT', '/api/v1/accounts/00000000-0000-4000-8000-000000000000', {
          customerInternalReference: 'o',
          workflowDefinition: { key: 1 },
        })
      ).status,
    ).toBe(404);
    const updated = (await (
      await call('PUT', `/api/v1/accounts/${tx.accountId}`, {
        customerInternalReference: 'o',
        workflowDefinition: { key: 1 },
      })
    ).json()) as { account: { id: string }; workflowExecution: { id: string } };
    expect(updated.account.id).toBe(tx.accountId);
    expect(updated.workflowExecution.id).not.toBe(tx.executionId);
  });
});

describe('upload and finalize', () => {
  it('upload refusals, in order of the checks', async () => {
    const { transaction, upload, call } = setup();
    const tx = await transaction();
    expect(
      (await call('GET', tx.upload, undefined, { authorization: `Bearer ${tx.token}` })).headers.get('allow'),
    ).toBe('POST');
    expect((await upload(tx, 'AAAA', { 'user-agent': undefined })).status).toBe(400);
    expect((await upload(tx, 'AAAA', { authorization: undefined })).status).toBe(401);
    expect((await upload({ ...tx, token: 'another' }, 'AAAA')).status).toBe(403);
    const other = await transaction();
    expect((await upload({ ...other, token: tx.token }, 'AAAA')).status).toBe(403);
    expect((await upload({ ...tx, upload: tx.upload.replace(tx.executionId, other.executionId) }, 'AAAA')).status).toBe(
      404,
    );
    expect((await upload({ ...tx, upload: tx.upload.replace(tx.accountId, other.accountId) }, 'AAAA')).status).toBe(
      404,
    );
    expect(
      (await upload({ ...tx, upload: tx.upload.replace(tx.credential.id, other.credential.id) }, 'AAAA')).status,
    ).toBe(404);
    expect((await upload({ ...tx, upload: tx.upload.replace('DEVICE_RISK', 'FRONT') }, 'AAAA')).status).toBe(404);
    expect((await call('POST', tx.upload, '{x', { authorization: `Bearer ${tx.token}` })).status).toBe(400);
    for (const sessionId of [undefined, '', 5, 'A'.repeat(8002), 'abc def', 'abc%2B'])
      expect((await upload(tx, sessionId)).status, String(sessionId).slice(0, 20)).toBe(400);
    expect((await upload(tx, 'A'.repeat(8001))).status).toBe(200);
    expect((await upload(tx, '0400a+b/c@d==')).status).toBe(200);
  });

  it('finalize: 409 before an upload, then PROCESSED; a second finalize and a later upload are 409', async () => {
    const { transaction, upload, finalize, service } = setup();
    const tx = await transaction();
    expect(await problemOf(await finalize(tx))).toEqual([409, 'Nothing was uploaded yet']);
    await upload(tx, blackbox(['fp_static', 'tp']));
    expect((await finalize(tx, { 'user-agent': 'node' })).status).toBe(403);
    expect((await finalize({ ...tx, token: 'x' })).status).toBe(403);
    const done = await finalize(tx);
    expect(done.status).toBe(200);
    expect(await done.json()).toEqual({
      timestamp: expect.any(String),
      account: { id: tx.accountId },
      workflowExecution: { id: tx.executionId },
    });
    expect(await problemOf(await finalize(tx))).toEqual([409, 'The workflow execution is PROCESSED']);
    expect(await problemOf(await upload(tx, 'AAAA'))).toEqual([409, 'The workflow execution is PROCESSED']);
    expect(service.transactions()[0]!.blackboxes).toHaveLength(1);
  });

  it('the transaction token expires: 401, then TOKEN_EXPIRED; a session with no action: SESSION_EXPIRED', async () => {
    const { transaction, upload, advance, service } = setup();
    const lasting = (customerInternalReference: string, tokenLifetime: string) =>
      transaction({ customerInternalReference, workflowDefinition: { key: 1 }, tokenLifetime });
    const short = await lasting('o', '5m');
    const long = await lasting('p', '1d');
    advance(5 * 60_000 - 1);
    expect((await upload(short, 'AAAA')).status).toBe(200); // an action: the session runs 15 minutes from here
    advance(1);
    expect(await problemOf(await upload(short, 'AAAA'))).toEqual([401, 'The transaction token has expired']);
    const statuses = () =>
      Object.fromEntries(service.transactions().map((tx) => [tx.customerInternalReference, service.statusOf(tx)]));
    expect(statuses()).toEqual({ o: 'TOKEN_EXPIRED', p: 'INITIATED' });
    advance(15 * 60_000);
    expect(statuses()).toEqual({ o: 'TOKEN_EXPIRED', p: 'SESSION_EXPIRED' });
    expect(await problemOf(await upload(long, 'AAAA'))).toEqual([409, 'The workflow execution is SESSION_EXPIRED']);
  });

  it('a session that ends before the token: SESSION_EXPIRED, not TOKEN_EXPIRED, even once the token lapses too', async () => {
    const { transaction, advance, service } = setup();
    await transaction({ customerInternalReference: 'o', workflowDefinition: { key: 1 }, tokenLifetime: '20m' });
    advance(15 * 60_000);
    expect(service.statusOf(service.transactions()[0]!)).toBe('SESSION_EXPIRED');
    advance(10 * 60_000);
    expect(service.statusOf(service.transactions()[0]!)).toBe('SESSION_EXPIRED');
  });

  it('on finalize, the documented callback body goes to callbackUrl, its hrefs on the retrieval host', async () => {
    const { transaction, upload, finalize, callbacks } = setup();
    const tx = await transaction({
      customerInternalReference: 'o',
      workflowDefinition: { key: 7 },
      callbackUrl: 'https://shop.example/cb',
      userReference: 'user-1',
    });
    await upload(tx, blackbox(['tp']));
    await finalize(tx);
    const account = `https://retrieval.test/api/v1/accounts/${tx.accountId}`;
    expect(callbacks).toEqual([
      [
        'https://shop.example/cb',
        {
          callbackSentAt: expect.any(String),
          userReference: 'user-1',
          workflowExecution: {
            id: tx.executionId,
            href: `${account}/workflow-executions/${tx.executionId}`,
            definitionKey: '7',
            status: 'PROCESSED',
          },
          account: { id: tx.accountId, href: account },
        },
      ],
    ]);
    const without = await transaction();
    await upload(without, blackbox(['tp']));
    await finalize(without);
    expect(callbacks).toHaveLength(1);
  });
});

describe('decisions, device data and details', () => {
  async function decided(
    sources: string[] | string,
    ua?: string,
    lang?: string,
    setupOptions: Parameters<typeof setup>[0] = {},
    prepare?: (s: ReturnType<typeof setup>) => void,
  ) {
    const s = setup(setupOptions);
    prepare?.(s);
    const tx = await s.transaction({
      customerInternalReference: 'order-9',
      workflowDefinition: { key: 1 },
      userReference: 'u-9',
    });
    await s.upload(tx, typeof sources === 'string' ? sources : blackbox(sources, ua, lang));
    s.advance(1000);
    await s.finalize(tx);
    return { details: await s.details(tx), tx, s };
  }

  it.each([
    [['fp_static', 'fp_dyn', 'tp'], { type: 'PASSED', label: 'OK', score: 8 }, []],
    [
      ['fp_static', 'fp_dyn'],
      { type: 'WARNING', label: 'PARTIAL_COLLECTION', score: 45 },
      ['Third-party collection missing (blocked)'],
    ],
    [
      ['tp', 'tp_dyn'],
      { type: 'WARNING', label: 'PARTIAL_COLLECTION', score: 40 },
      ['First-party collection missing (proxy)'],
    ],
    ['0400AAAA', { type: 'NOT_EXECUTED', label: 'TECHNICAL_ERROR', score: -1 }, ['Blackbox could not be read']],
  ] as Array<[string[] | string, { type: string; label: string; score?: number }, string[]]>)(
    'sources %j: %j',
    async (sources, decision, alerts) => {
      const { details } = await decided(sources);
      expect(details.decision).toEqual({
        type: decision.type,
        details: { label: decision.label },
        ...(decision.score === undefined ? {} : { risk: { score: decision.score } }),
      });
      expect(details.capabilities.deviceRiskVerification[0].decision).toEqual({
        type: decision.type,
        details: { label: decision.label },
      });
      expect(details.capabilities.deviceRiskVerification[0].data.deviceAlerts).toEqual(alerts);
    },
  );

  it('forced decisions: by execution id, by customer reference (until replaced), the next one once, or by a test', async () => {
    const rejected = { type: 'REJECTED', label: 'HIGH_RISK', alerts: ['Device Risk Global'], score: 96 };
    expect(
      (await decided(['fp_static', 'tp'], undefined, undefined, {}, (s) => s.service.decide('order-9', rejected)))
        .details.decision.type,
    ).toBe('REJECTED');
    expect(
      (
        await decided(['fp_static', 'tp'], undefined, undefined, {}, (s) =>
          s.service.decide((tx) => tx.userReference === 'u-9', rejected),
        )
      ).details.decision.type,
    ).toBe('REJECTED');
    expect(
      (await decided(['fp_static', 'tp'], undefined, undefined, {}, (s) => s.service.decide('order-8', rejected)))
        .details.decision.type,
    ).toBe('PASSED');
    // The newest rule wins: the reference rule (kept) decides order-9 twice; 'next' waits for another one, then is gone.
    const s = setup();
    s.service.decide('next', rejected);
    s.service.decide('order-9', { type: 'WARNING', label: 'X' }, false);
    const types: string[] = [];
    for (let i = 0; i < 3; i++) {
      const tx = await s.transaction({
        customerInternalReference: i === 2 ? 'other' : 'order-9',
        workflowDefinition: { key: 1 },
      });
      await s.upload(tx, blackbox(['fp_static', 'tp']));
      await s.finalize(tx);
      types.push((await s.details(tx)).decision.type);
    }
    expect(types).toEqual(['WARNING', 'WARNING', 'REJECTED']);
    const tx = await s.transaction({ customerInternalReference: 'another', workflowDefinition: { key: 1 } });
    await s.upload(tx, blackbox(['fp_static', 'tp']));
    await s.finalize(tx);
    expect((await s.details(tx)).decision.type).toBe('PASSED');
  });

  it.each([
    [CHROME, { deviceModel: 'Desktop', deviceOS: 'Windows', browser: 'Chrome', browserVersion: '156.0.0.0' }],
    [
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
      { deviceModel: 'Mobile', deviceOS: 'iPhone', browser: 'Safari', browserVersion: '604.1' },
    ],
    [
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15',
      { deviceModel: 'Desktop', deviceOS: 'MacOS', browser: 'Safari', browserVersion: '605.1.15' },
    ],
    [
      'Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36',
      { deviceModel: 'Mobile', deviceOS: 'Android', browser: 'Chrome', browserVersion: '120.0' },
    ],
    [
      'Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0',
      { deviceModel: 'Desktop', deviceOS: 'Linux', browser: 'Firefox', browserVersion: '120.0' },
    ],
    [
      'Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 (KHTML, like Gecko) Edg/119.0.1 Chrome/119.0',
      { deviceModel: 'Desktop', deviceOS: 'Windows', browser: 'Edge', browserVersion: '119.0.1' },
    ],
    ['SomeBot/1.0', { deviceModel: 'Desktop', deviceOS: 'Unknown', browser: 'Unknown', browserVersion: '' }],
  ])('device data from %s', async (ua, expected) => {
    const { details } = await decided(['fp_static', 'fp_dyn', 'tp'], ua, 'fr-CH,fr;q=0.9');
    expect(details.capabilities.deviceRiskVerification[0].data).toMatchObject({
      ...expected,
      browserLanguage: 'fr-CH',
      deviceIsNew: true,
      trueIP: '127.0.0.1',
    });
  });

  it("the third party's dynamic values stand in when the first party's are missing; none at all reads as unknown", async () => {
    expect(
      (await decided(['tp', 'tp_dyn'], 'Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0', 'it')).details.capabilities
        .deviceRiskVerification[0].data,
    ).toMatchObject({ browser: 'Firefox', browserLanguage: 'it' });
    expect((await decided(['fp_static', 'tp'])).details.capabilities.deviceRiskVerification[0].data).toMatchObject({
      browser: 'Unknown',
      browserLanguage: '',
      deviceOS: 'Unknown',
    });
  });

  it('details: the documented shape; before finalize NOT_EXECUTED without completedAt', async () => {
    const { details, tx, s } = await decided(['fp_static', 'fp_dyn', 'tp']);
    expect(details).toMatchObject({
      createdAt: expect.any(String),
      startedAt: details.createdAt,
      completedAt: new Date(Date.parse(details.createdAt) + 1000).toISOString(),
      account: { id: tx.accountId },
      workflow: {
        id: tx.executionId,
        status: 'PROCESSED',
        definitionKey: '1',
        customerInternalReference: 'order-9',
        userReference: 'u-9',
      },
    });
    expect(details.capabilities.deviceRiskVerification[0].credentials).toEqual([
      { id: tx.credential.id, category: 'DATA', label: 'DATA' },
    ]);
    expect(details.capabilities.deviceRiskVerification[0].data.deviceFirstSeen).toBe(details.createdAt);
    const fresh = await s.transaction({ customerInternalReference: 'o', workflowDefinition: { key: 1 } });
    const pending = await (
      await s.call(
        'GET',
        `/api/v1/accounts/${fresh.accountId}/workflow-executions/${fresh.executionId}`,
        undefined,
        {},
        'retrieval',
      )
    ).json();
    expect(pending.completedAt).toBeUndefined();
    expect(pending.workflow.userReference).toBeUndefined();
    expect(pending.decision).toEqual({
      type: 'NOT_EXECUTED',
      details: { label: 'PRECONDITION_NOT_FULFILLED' },
      risk: { score: -1 },
    });
  });
});

describe('retrieval and routes', () => {
  it('status and details: GET only, the access token, the right account', async () => {
    const { transaction, call } = setup();
    const tx = await transaction();
    const path = `/api/v1/accounts/${tx.accountId}/workflow-executions/${tx.executionId}`;
    expect(await (await call('GET', `${path}/status`, undefined, {}, 'retrieval')).json()).toEqual({
      account: { id: tx.accountId },
      workflowExecution: { id: tx.executionId, definitionKey: '10011', status: 'INITIATED' },
    });
    // On the retrieval host only, as documented: the API host answers upload and finalize alone.
    expect((await call('GET', `${path}/status`, undefined, {}, 'api')).status).toBe(404);
    expect((await call('POST', `${path}/status`, {})).headers.get('allow')).toBe('GET');
    expect((await call('GET', path, undefined, {}, 'api')).headers.get('allow')).toBe('PUT');
    expect((await call('POST', path, {}, {}, 'retrieval')).headers.get('allow')).toBe('GET');
    expect((await call('GET', path, undefined, { 'user-agent': undefined }, 'retrieval')).status).toBe(400);
    expect((await call('GET', path, undefined, { authorization: 'Bearer nope' }, 'retrieval')).status).toBe(401);
    expect((await call('GET', `${path}/status`, undefined, { authorization: 'Bearer nope' }, 'retrieval')).status).toBe(
      401,
    );
    const other = await transaction();
    expect(
      (
        await call(
          'GET',
          `/api/v1/accounts/${other.accountId}/workflow-executions/${tx.executionId}`,
          undefined,
          {},
          'retrieval',
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await call(
          'GET',
          `/api/v1/accounts/${other.accountId}/workflow-executions/${tx.executionId}/status`,
          undefined,
          {},
          'retrieval',
        )
      ).status,
    ).toBe(404);
    expect((await call('GET', '/api/v1/other', undefined, {}, 'retrieval')).status).toBe(404);
  });

  it('names each route for counting and faults, by host', () => {
    const { service } = setup();
    const id = '00000000-0000-4000-8000-000000000000';
    const accountRoute = (path: string) => service.accountRoute(new Request(`${ACCOUNT_ORIGIN}${path}`));
    const apiRoute = (path: string) => service.apiRoute(new Request(`${ORIGIN}${path}`));
    const part = `/api/v1/accounts/${id}/workflow-executions/${id}/credentials/${id}/parts/DEVICE_RISK`;
    const execution = `/api/v1/accounts/${id}/workflow-executions/${id}`;
    expect(accountRoute('/api/v1/accounts')).toBe('accountCreate');
    expect(accountRoute(`/api/v1/accounts/${id}`)).toBe('accountUpdate');
    for (const other of [part, execution, `${execution}/status`, '/api/v1/accounts/x'])
      expect(accountRoute(other), other).toBe('unknown');
    expect(apiRoute(part)).toBe('upload');
    expect(apiRoute(execution)).toBe('finalize');
    for (const other of [
      '/api/v1/accounts',
      `/api/v1/accounts/${id}`,
      `${execution}/status`,
      `/api/v1/accounts/${id}/x`,
    ])
      expect(apiRoute(other), other).toBe('unknown');
    expect(service.retrievalRoute(new Request(`https://retrieval.test${execution}/status`))).toBe('retrievalStatus');
    expect(service.retrievalRoute(new Request(`https://retrieval.test${execution}`))).toBe('details');
  });
});
