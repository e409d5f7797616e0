// The whole flow against a stand-in built from the service's published samples
// (test/support/published-samples.ts), each role on its own documented host of region US:
// token on auth., create on account., upload and finalize on the api. addresses the create
// answer gives, reads on retrieval., the callback's hrefs on retrieval. Through the client,
// through createDeviceRiskHandler and through createCallbackHandler. Before the hosts were
// apart, the first create here ended in forged_address: no real transaction could succeed.
import { describe, expect, it } from 'vitest';
import {
  createCallbackHandler,
  createDeviceRiskClient,
  createDeviceRiskHandler,
  createTokenSource,
  createMemoryStore,
  type DeviceRiskDetails,
} from '../../../src/server/index.js';
import {
  accountAnswer,
  callbackBody,
  detailsAnswer,
  SAMPLE_HOSTS,
  SAMPLE_IDS,
  statusAnswer,
  tokenAnswer,
  transactionAnswer,
} from '../../support/published-samples.js';

const UA = 'AcmeShop Checkout/1.4';
const BLACKBOX = '0400' + 'AbCd+/'.repeat(200) + '==';
const executionPath = `/api/v1/accounts/${SAMPLE_IDS.account}/workflow-executions/${SAMPLE_IDS.execution}`;

interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

/**
 * The documented hosts, answering the published samples. Anything else (another host, another
 * path, a method the documents do not give) answers 404, so a call to the wrong role's host
 * fails the test. `part`: the part name the create answer gives.
 */
function publishedService(options: { part?: 'device_risk' | 'prepared_data'; createOn?: string } = {}) {
  const part = options.part ?? 'device_risk';
  const sent: Sent[] = [];
  const routes: Record<string, () => Response> = {
    [`POST ${SAMPLE_HOSTS.auth}/oauth2/token`]: () => Response.json(tokenAnswer),
    [`POST ${SAMPLE_HOSTS.account}/api/v1/accounts`]: () => {
      const answer = JSON.stringify(accountAnswer(part));
      return new Response(options.createOn ? answer.replaceAll(SAMPLE_HOSTS.api, options.createOn) : answer, {
        headers: { 'content-type': 'application/json' },
      });
    },
    [`POST ${SAMPLE_HOSTS.api}${executionPath}/credentials/${SAMPLE_IDS.credential}/parts/${part.toUpperCase()}`]: () =>
      Response.json(transactionAnswer),
    [`PUT ${SAMPLE_HOSTS.api}${executionPath}`]: () => Response.json(transactionAnswer),
    [`GET ${SAMPLE_HOSTS.retrieval}${executionPath}/status`]: () => Response.json(statusAnswer),
    [`GET ${SAMPLE_HOSTS.retrieval}${executionPath}`]: () => Response.json(detailsAnswer()),
  };
  const fetch = (async (input: string | URL | Request, init: RequestInit = {}) => {
    const request = new Request(input, init);
    const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.text();
    sent.push({
      method: request.method,
      url: request.url,
      headers: Object.fromEntries(request.headers),
      ...(body ? { body } : {}),
    });
    const route = routes[`${request.method} ${request.url}`];
    return route
      ? route()
      : Response.json({ title: 'Not Found', status: 404, detail: 'Unknown path' }, { status: 404 });
  }) as typeof globalThis.fetch;
  return { fetch, sent };
}

function kitOn(service: ReturnType<typeof publishedService>) {
  const tokenSource = createTokenSource({
    clientId: 'client-1',
    clientSecret: 'secret-1',
    region: 'US',
    userAgent: UA,
    fetch: service.fetch,
    store: createMemoryStore(),
  });
  return createDeviceRiskClient({ tokenSource, region: 'US', userAgent: UA, fetch: service.fetch });
}

const hostOf = (url: string) => new URL(url).origin;

describe('the published layout, through the client', () => {
  it.each(['device_risk', 'prepared_data'] as const)(
    'token, create, upload (%s), finalize, status and details, each on its own host',
    async (part) => {
      const service = publishedService({ part });
      const client = kitOn(service);
      const tx = await client.createAccount({
        customerInternalReference: 'order-1042',
        workflowDefinition: { key: 10010 },
        callbackUrl: 'https://shop.example/device-risk/callback',
      });
      expect(tx.part).toBe(part);
      await client.uploadBlackbox(tx, BLACKBOX);
      await client.finalize(tx);
      expect(await client.status(tx)).toBe('PROCESSED');
      const details = await client.details(tx);
      expect(details).toMatchObject({
        status: 'PROCESSED',
        decision: { type: 'REJECTED', label: 'HIGH_RISK', score: 92 },
        deviceRisk: {
          decision: { type: 'REJECTED', label: 'HIGH_RISK' },
          alerts: ['Device Risk Global', 'IP Mismatch'],
        },
      });
      expect(service.sent.map((s) => `${s.method} ${hostOf(s.url)}`)).toEqual([
        `POST ${SAMPLE_HOSTS.auth}`,
        `POST ${SAMPLE_HOSTS.account}`,
        `POST ${SAMPLE_HOSTS.api}`,
        `PUT ${SAMPLE_HOSTS.api}`,
        `GET ${SAMPLE_HOSTS.retrieval}`,
        `GET ${SAMPLE_HOSTS.retrieval}`,
      ]);
      // Every API call names the caller, asks for JSON and says it sends JSON (docs/vendor-contract.md#every-call).
      for (const call of service.sent.slice(1))
        expect(call.headers).toMatchObject({
          'user-agent': UA,
          accept: 'application/json',
          'content-type': 'application/json',
        });
      const [, create, upload, finalize, status] = service.sent;
      expect(create!.headers.authorization).toBe('Bearer sample-access-token');
      expect(JSON.parse(create!.body!)).toMatchObject({ tokenLifetime: '30m' });
      expect(upload!.headers.authorization).toBe('Bearer sample-transaction-token');
      expect(JSON.parse(upload!.body!)).toEqual({ sessionId: BLACKBOX });
      expect(finalize!.headers.authorization).toBe('Bearer sample-transaction-token');
      expect(finalize!.body).toBeUndefined();
      expect(status!.headers.authorization).toBe('Bearer sample-access-token');
    },
  );

  it.each([
    ['the account host', SAMPLE_HOSTS.account],
    ['the retrieval host', SAMPLE_HOSTS.retrieval],
    ["another region's api host", 'https://api.emea-1.jumio.ai'],
    ['a look-alike host', 'https://api.amer-1.jumio.ai.evil.example'],
  ])('refuses upload and finalize addresses on %s before the transaction token leaves', async (_, origin) => {
    const service = publishedService({ createOn: origin });
    await expect(
      kitOn(service).createAccount({ customerInternalReference: 'order-1042', workflowDefinition: { key: 10010 } }),
    ).rejects.toMatchObject({ code: 'forged_address' });
    expect(service.sent.every((s) => s.headers.authorization !== 'Bearer sample-transaction-token')).toBe(true);
  });
});

describe('the published layout, through the handlers', () => {
  it('createDeviceRiskHandler checks a posted blackbox and tells the decision with its order', async () => {
    const service = publishedService();
    const decisions: Array<{ details: DeviceRiskDetails; customerInternalReference?: string }> = [];
    const handler = createDeviceRiskHandler({
      client: kitOn(service),
      allowedOrigins: ['https://shop.example'],
      workflowKey: 10010,
      callbackUrl: 'https://shop.example/device-risk/callback',
      answer: 'checked',
      onError: (error) => {
        throw error;
      },
      resolveCustomer: () => ({ customerInternalReference: 'order-1042' }),
      onResult: (details, { customerInternalReference }) =>
        void decisions.push({ details, ...(customerInternalReference ? { customerInternalReference } : {}) }),
    });
    const response = await handler(
      new Request('https://shop.example/device-risk', {
        method: 'POST',
        headers: {
          origin: 'https://shop.example',
          'content-type': 'application/json',
          'idempotency-key': 'key-0000000042',
        },
        body: JSON.stringify({ blackbox: BLACKBOX }),
      }),
      { clientAddress: '198.51.100.23' },
    );
    expect(response.status).toBe(200);
    // The decision stays on the server: the browser gets the reference alone.
    expect(JSON.stringify(await response.json())).not.toContain('HIGH_RISK');
    expect(decisions).toMatchObject([
      { customerInternalReference: 'order-1042', details: { decision: { type: 'REJECTED', score: 92 } } },
    ]);
    const create = service.sent.find((s) => s.url.endsWith('/api/v1/accounts'))!;
    expect(JSON.parse(create.body!)).toMatchObject({ callbackUrl: 'https://shop.example/device-risk/callback' });
    await handler.close();
  });

  it('createCallbackHandler takes the published callback and reads its decision on the retrieval host', async () => {
    const service = publishedService();
    const results: Array<{ status: string; details?: DeviceRiskDetails }> = [];
    const handler = createCallbackHandler({
      client: kitOn(service),
      allowedSources: ['34.202.241.227'],
      onResult: (result) => void results.push(result),
    });
    const response = await handler(
      new Request('https://shop.example/device-risk/callback', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(callbackBody()),
      }),
      { clientAddress: '34.202.241.227' },
    );
    expect(response.status).toBe(200);
    await handler.idle();
    expect(results).toMatchObject([{ status: 'PROCESSED', details: { decision: { label: 'HIGH_RISK' } } }]);
    expect(service.sent.map((s) => hostOf(s.url))).toEqual([SAMPLE_HOSTS.auth, SAMPLE_HOSTS.retrieval]);
    await handler.close();
  });

  it('createDeviceRiskHandler refuses a callbackUrl the service would refuse, at start, naming the rule', () => {
    for (const [callbackUrl, rule] of [
      ['http://shop.example/cb', 'HTTPS'],
      ['https://shop.example:8443/cb', 'without a port'],
      ['https://203.0.113.9/cb', 'not an IP address'],
    ] as const)
      expect(() =>
        createDeviceRiskHandler({
          client: kitOn(publishedService()),
          allowedOrigins: ['https://shop.example'],
          callbackUrl,
          resolveCustomer: () => ({ customerInternalReference: 'order-1' }),
        }),
      ).toThrow(expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining(rule) }));
  });
});
