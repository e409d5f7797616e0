// Emulated account create and update (src/emulator/service/accounts.ts): the body rules of
// docs/vendor-contract.md#the-service at their edges, each refusal's problem body, and the
// credential a workflow without Device Risk gets.
import { describe, expect, it } from 'vitest';
import { setup } from '../../support/emulated-service.js';

const answer = async (response: Response) => [response.status, await response.json()];
const refusal = (status: number, title: string, detail: string) => [status, { title, status, detail }];
const body = (extra: Record<string, unknown>) => ({
  customerInternalReference: 'o',
  workflowDefinition: { key: 1 },
  ...extra,
});

describe('account create and update', () => {
  it('an http callbackUrl is taken on loopback only (a test callback receiver); any other scheme is refused', async () => {
    const { create } = setup();
    for (const callbackUrl of [
      'http://127.0.0.1:8080/cb',
      'http://localhost/cb',
      'http://[::1]:9/cb',
      'https://shop.example/cb',
    ])
      expect((await create(body({ callbackUrl }))).status, callbackUrl).toBe(200);
    for (const callbackUrl of [
      'http://x127.0.0.1.example/cb',
      'http://mylocalhost/cb',
      'ftp://127.0.0.1/cb',
      'ws://localhost/cb',
    ])
      expect(await answer(await create(body({ callbackUrl }))), callbackUrl).toEqual(
        refusal(400, 'Bad Request', 'callbackUrl must use https'),
      );
  });

  it.each([
    ['an IP address', 'https://203.0.113.7/cb', 'callbackUrl must name a host, not an IP address'],
    ['an IPv6 address', 'https://[2001:db8::1]/cb', 'callbackUrl must name a host, not an IP address'],
    ['an IPv4 address written as a number', 'https://3405803783/cb', 'callbackUrl must name a host, not an IP address'],
    ['a port', 'https://shop.example:8443/cb', 'callbackUrl must not name a port'],
    ['the default port, written', 'https://shop.example:443/cb', 'callbackUrl must not name a port'],
    ['a fragment', 'https://shop.example/cb#x', 'callbackUrl must not have a fragment'],
    ['an empty fragment', 'https://shop.example/cb#', 'callbackUrl must not have a fragment'],
    ['credentials', 'https://user:pw@shop.example/cb', 'callbackUrl must not carry credentials'],
    ['a user name', 'https://user@shop.example/cb', 'callbackUrl must not carry credentials'],
  ])('a callbackUrl with %s is refused, as the service refuses it', async (_, callbackUrl, detail) => {
    const { create } = setup();
    expect(await answer(await create(body({ callbackUrl })))).toEqual(refusal(400, 'Bad Request', detail));
  });

  it.each([
    'https://127.0.0.1:8443/cb',
    'http://127.1.2.3:4000/cb',
    'https://localhost:3000/cb',
    'http://[::1]:8080/cb',
    'https://shop.example/cb?order=1',
  ])(
    'on loopback, a callbackUrl over http or https with a port is allowed (local development): %s',
    async (callbackUrl) => {
      const { create } = setup();
      expect((await create(body({ callbackUrl }))).status).toBe(200);
    },
  );

  /** The service's refusal of a tokenLifetime not of the documented shape. */
  const BAD_LIFETIME = refusal(
    400,
    'Bad Request',
    'tokenLifetime must look like "600s", "30m", "12h" or "5d", from 5 minutes to 60 days',
  );

  it('tokenLifetime: the documented shape in s, m, h or d, from 5 minutes to 60 days', async () => {
    const { create } = setup();
    for (const tokenLifetime of ['300s', '600s', '5m', '+30m', '12h', '1440h', '60d', '+60d', '86400s'])
      expect((await create(body({ tokenLifetime }))).status, tokenLifetime).toBe(200);
    for (const tokenLifetime of ['299s', '4m', '61d', '-30m', '0m', '30', '30M', ' 30m', '30m ', '1.5h', '30w', ''])
      expect(await answer(await create(body({ tokenLifetime }))), tokenLifetime).toEqual(BAD_LIFETIME);
  });

  it('tokenLifetime must be a string of the documented form, not something that reads as one', async () => {
    const { create } = setup();
    for (const tokenLifetime of [['30m'], { toString: () => '30m' }])
      expect(await answer(await create(body({ tokenLifetime })))).toEqual(BAD_LIFETIME);
  });

  it('a body that is no JSON, or no object, says so', async () => {
    const { create } = setup();
    expect(await answer(await create('{x'))).toEqual(refusal(400, 'Bad Request', 'Body is not valid JSON'));
    expect(await answer(await create('[1]'))).toEqual(
      refusal(400, 'Bad Request', 'customerInternalReference is required'),
    );
    expect(await answer(await create('null'))).toEqual(refusal(400, 'Bad Request', 'The body must be a JSON object'));
  });

  it('an unknown account, or an unknown workflow key, says which', async () => {
    const { call, create } = setup({ workflows: { '1': { deviceRisk: true } } });
    expect(await answer(await call('PUT', '/api/v1/accounts/00000000-0000-4000-8000-000000000000', body({})))).toEqual(
      refusal(404, 'Not Found', 'Unknown account'),
    );
    expect(await answer(await create(body({ workflowDefinition: { key: 'k-9' } })))).toEqual(
      refusal(400, 'Bad Request', 'Unknown workflowDefinition.key k-9'),
    );
  });

  it('a workflow without Device Risk gets a credential of another kind, with no Device Risk part', async () => {
    const { create } = setup({ workflows: { '2': { deviceRisk: false } } });
    const created = (await (await create(body({ workflowDefinition: { key: 2 } }))).json()) as {
      account: { id: string };
      workflowExecution: { id: string; credentials: unknown[] };
    };
    const execution = `https://api.test/api/v1/accounts/${created.account.id}/workflow-executions/${created.workflowExecution.id}`;
    expect(created.workflowExecution.credentials).toEqual([
      {
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        category: 'ID',
        allowedChannels: ['WEB', 'API', 'SDK'],
        api: {
          token: expect.any(String),
          parts: { front: `${execution}/credentials/x/parts/FRONT` },
          workflowExecution: execution,
        },
      },
    ]);
  });
});
