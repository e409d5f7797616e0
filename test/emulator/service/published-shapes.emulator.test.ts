// The emulator against the service's published samples (test/support/published-samples.ts):
// every answer of the whole flow (token, account create with either part name, upload,
// finalize, status, details of a decided and of a NOT_EXECUTED transaction, the callback body,
// the 429) has the shape of the sample the documents give, so that a test that passes on the
// emulator does not fail on the service for a difference of shape. The 429 body byte for byte.
import { afterEach, describe, expect, it } from 'vitest';
import { createManualClock, startEmulator, type Emulator, type EmulatorOptions } from '../../../src/emulator/index.js';
import {
  accountAnswer,
  callbackBody,
  detailsAnswer,
  SAMPLE_HOSTS,
  shapeOf,
  statusAnswer,
  tokenAnswer,
  tooManyRequests,
  transactionAnswer,
} from '../../support/published-samples.js';
import { closeServers, jsonReceiver } from '../../support/http.js';
import { BLACKBOX, UA } from '../../support/kit.js';

const emulators: Emulator[] = [];
afterEach(async () => {
  for (const emulator of emulators.splice(0)) await emulator.close();
  await closeServers();
});

async function start(options: EmulatorOptions = {}): Promise<Emulator> {
  const emulator = await startEmulator({ accountRequestsPerSecond: 0, ...options });
  emulators.push(emulator);
  return emulator;
}

/** A callback receiver on loopback: the bodies it was sent. */
async function receiver(): Promise<{ url: string; bodies: unknown[] }> {
  const { origin, bodies } = await jsonReceiver();
  return { url: `${origin}/callback`, bodies };
}

function tokenRequest(emulator: Emulator): Promise<Response> {
  return fetch(emulator.tokenUrl, {
    method: 'POST',
    headers: {
      authorization: 'Basic ' + Buffer.from(`${emulator.clientId}:${emulator.clientSecret}`).toString('base64'),
      accept: 'application/json',
      'content-type': 'application/x-www-form-urlencoded',
      'user-agent': UA,
    },
    body: 'grant_type=client_credentials',
  });
}

/** A call as the kit makes it: the bearer, Accept, a User-Agent, and Content-Type on every one. */
const call = (url: string, bearer: string, method = 'GET', body?: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${bearer}`,
      accept: 'application/json',
      'content-type': 'application/json',
      'user-agent': UA,
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

interface Created {
  account: { id: string };
  workflowExecution: {
    id: string;
    credentials: Array<{ api: { token: string; parts: Record<string, string>; workflowExecution: string } }>;
  };
}

async function flow(
  emulator: Emulator,
  access: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  const created = await call(`${emulator.accountUrl}/api/v1/accounts`, access, 'POST', body, headers);
  expect(created.status).toBe(200);
  const answer = (await created.json()) as Created;
  return { answer, api: answer.workflowExecution.credentials[0]!.api };
}

describe('the emulator answers in the shapes of the published samples', () => {
  it('token, create, upload, finalize, status, details and the callback', async () => {
    const emulator = await start({ workflows: { '10010': { deviceRisk: true } } });
    const { url, bodies } = await receiver();

    const token = await tokenRequest(emulator);
    expect(token.status).toBe(200);
    const tokenBody = (await token.json()) as { access_token: string };
    expect(shapeOf(tokenBody)).toEqual(shapeOf(tokenAnswer));
    const access = tokenBody.access_token;

    emulator.decide('order-1042', {
      type: 'REJECTED',
      label: 'HIGH_RISK',
      score: 92,
      alerts: ['Device Risk Global', 'IP Mismatch'],
    });
    const { answer, api } = await flow(emulator, access, {
      customerInternalReference: 'order-1042',
      workflowDefinition: { key: 10010 },
      userReference: 'shopper-77',
      callbackUrl: url,
    });
    expect(shapeOf(answer)).toEqual(shapeOf(accountAnswer('device_risk')));
    // The upload and finalize addresses are on the API origin, not on the account origin.
    for (const address of [api.parts.device_risk!, api.workflowExecution]) {
      expect(new URL(address).origin).toBe(emulator.apiUrl);
      expect(new URL(address).origin).not.toBe(emulator.accountUrl);
    }

    const uploaded = await call(api.parts.device_risk!, api.token, 'POST', { sessionId: BLACKBOX });
    expect(uploaded.status).toBe(200);
    expect(shapeOf(await uploaded.json())).toEqual(shapeOf(transactionAnswer));
    const finalized = await call(api.workflowExecution, api.token, 'PUT');
    expect(finalized.status).toBe(200);
    expect(shapeOf(await finalized.json())).toEqual(shapeOf(transactionAnswer));

    const path = `/api/v1/accounts/${answer.account.id}/workflow-executions/${answer.workflowExecution.id}`;
    const status = await call(`${emulator.retrievalUrl}${path}/status`, access);
    expect(status.status).toBe(200);
    expect(shapeOf(await status.json())).toEqual(shapeOf(statusAnswer));

    const details = await call(`${emulator.retrievalUrl}${path}`, access);
    expect(details.status).toBe(200);
    const decided = (await details.json()) as { decision: unknown };
    expect(shapeOf(decided)).toEqual(shapeOf(detailsAnswer()));
    expect(decided.decision).toEqual({ type: 'REJECTED', details: { label: 'HIGH_RISK' }, risk: { score: 92 } });

    await expect.poll(() => bodies.length).toBe(1);
    expect(shapeOf(bodies[0])).toEqual(shapeOf(callbackBody()));
    expect(emulator.inspect.callbacks()[0]).toMatchObject({ attempts: 1 });
  });

  it('the details of a NOT_EXECUTED transaction: the same shape, its score -1', async () => {
    const emulator = await start();
    const access = ((await (await tokenRequest(emulator)).json()) as { access_token: string }).access_token;
    const { answer, api } = await flow(emulator, access, {
      customerInternalReference: 'order-1043',
      workflowDefinition: { key: 10010 },
      userReference: 'shopper-78',
    });
    // A blackbox of the right alphabet the emulator cannot read: NOT_EXECUTED.
    expect((await call(api.parts.device_risk!, api.token, 'POST', { sessionId: '0400AAAA' })).status).toBe(200);
    expect((await call(api.workflowExecution, api.token, 'PUT')).status).toBe(200);
    const path = `/api/v1/accounts/${answer.account.id}/workflow-executions/${answer.workflowExecution.id}`;
    const details = (await (await call(`${emulator.retrievalUrl}${path}`, access)).json()) as { decision: unknown };
    expect(shapeOf(details)).toEqual(
      shapeOf(detailsAnswer({ type: 'NOT_EXECUTED', label: 'TECHNICAL_ERROR', score: -1 })),
    );
    expect(details.decision).toEqual({
      type: 'NOT_EXECUTED',
      details: { label: 'TECHNICAL_ERROR' },
      risk: { score: -1 },
    });
  });

  it("create with the part named prepared_data: the shape of the pages' sample, PREPARED_DATA on the API origin", async () => {
    const emulator = await start({ workflows: { '10010': { deviceRisk: true, part: 'prepared_data' } } });
    const access = ((await (await tokenRequest(emulator)).json()) as { access_token: string }).access_token;
    const { answer, api } = await flow(emulator, access, {
      customerInternalReference: 'order-1044',
      workflowDefinition: { key: 10010 },
    });
    expect(shapeOf(answer)).toEqual(shapeOf(accountAnswer('prepared_data')));
    expect(api.parts.prepared_data).toMatch(new RegExp(`^${emulator.apiUrl}/api/v1/accounts/.+/parts/PREPARED_DATA$`));
    expect((await call(api.parts.prepared_data!, api.token, 'POST', { sessionId: BLACKBOX })).status).toBe(200);
  });

  it('a create routed as the documented account host answers addresses on its api host, as the sample has them', async () => {
    const emulator = await start();
    const access = ((await (await tokenRequest(emulator)).json()) as { access_token: string }).access_token;
    const { api } = await flow(
      emulator,
      access,
      { customerInternalReference: 'order-1045', workflowDefinition: { key: 10010 } },
      { 'x-forwarded-host': new URL(SAMPLE_HOSTS.account).host },
    );
    const sample = accountAnswer().workflowExecution.credentials[0]!.api;
    const pairs: Array<[string, string]> = [
      [api.parts.device_risk!, sample.parts.device_risk!],
      [api.workflowExecution, sample.workflowExecution],
    ];
    for (const [address, sampled] of pairs) expect(new URL(address).origin).toBe(new URL(sampled).origin);
    expect(new URL(api.workflowExecution).origin).toBe(SAMPLE_HOSTS.api);
  });

  it("an intermediate callback has the callback's shape, its status ACQUIRED", async () => {
    const emulator = await start({ intermediateCallbacks: true });
    const { url, bodies } = await receiver();
    const access = ((await (await tokenRequest(emulator)).json()) as { access_token: string }).access_token;
    const { api } = await flow(emulator, access, {
      customerInternalReference: 'order-1046',
      workflowDefinition: { key: 10010 },
      userReference: 'shopper-79',
      callbackUrl: url,
    });
    await call(api.parts.device_risk!, api.token, 'POST', { sessionId: BLACKBOX });
    await expect.poll(() => bodies.length).toBe(1);
    expect(shapeOf(bodies[0])).toEqual(shapeOf(callbackBody('ACQUIRED')));
    expect(bodies[0]).toMatchObject({ workflowExecution: { status: 'ACQUIRED' } });
  });

  it('429, past the token, account and retrieval limits: the documented body, byte for byte', async () => {
    const clock = createManualClock(Date.UTC(2026, 10, 2));
    const emulator = await start({
      clock,
      tokenRequestsPerSecond: 1,
      accountRequestsPerSecond: 1,
      accountBurst: 1,
      retrievalRequestsPerSecond: 1,
    });
    const access = ((await (await tokenRequest(emulator)).json()) as { access_token: string }).access_token;
    const limitedToken = await tokenRequest(emulator);
    const body = { customerInternalReference: 'order-1047', workflowDefinition: { key: 10010 } };
    const { answer } = await flow(emulator, access, body);
    const limitedAccount = await call(`${emulator.accountUrl}/api/v1/accounts`, access, 'POST', body);
    const path = `/api/v1/accounts/${answer.account.id}/workflow-executions/${answer.workflowExecution.id}`;
    expect((await call(`${emulator.retrievalUrl}${path}/status`, access)).status).toBe(200);
    const limitedRead = await call(`${emulator.retrievalUrl}${path}`, access);
    for (const limited of [limitedToken, limitedAccount, limitedRead]) {
      expect([limited.status, limited.headers.get('retry-after')]).toEqual([429, '1']);
      expect(await limited.text()).toBe(JSON.stringify(tooManyRequests));
    }
  });
});
