// The emulated service on its web-standard handlers (no sockets), for the tests of its
// modules (test/emulator/service/): a service on a standing clock, and calls as a client makes them.
import { createService, type ServiceOptions } from '../../src/emulator/service/service.js';
import { ACCOUNT_PATH, ACCOUNTS_PATH, EXECUTION_PATH, STATUS_PATH } from '../../src/emulator/service/state.js';

export const UA = 'AcmeShop Checkout/1.0';
/** The API host: upload and finalize (the addresses of a create answer). */
export const ORIGIN = 'https://api.test';
/** The account host: account create and update. */
export const ACCOUNT_ORIGIN = 'https://account.test';
export const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';

/** An emulated blackbox with these sources; fp_dyn embeds `ua` and `lang`. */
export function blackbox(sources: string[], ua = CHROME, lang = 'de-CH,de;q=0.9'): string {
  const parts: Record<string, string> = {};
  for (const s of sources)
    parts[s] = JSON.stringify({ s, ...(s === 'fp_dyn' || s === 'tp_dyn' ? { ua, lang } : {}) }) + '|xx';
  return '0400' + Buffer.from(JSON.stringify({ v: '5.2.2', s: sources, p: parts })).toString('base64');
}

/** The host a request belongs on: account create and update, the reads, or the API's upload and finalize. */
function hostOf(method: string, path: string): 'account' | 'api' | 'retrieval' {
  if (path === ACCOUNTS_PATH || ACCOUNT_PATH.test(path)) return 'account';
  if (STATUS_PATH.test(path) || (method === 'GET' && EXECUTION_PATH.test(path))) return 'retrieval';
  return 'api';
}

export function setup(extra: Partial<ServiceOptions> = {}) {
  let now = Date.UTC(2026, 10, 21);
  const callbacks: Array<[string, unknown]> = [];
  const service = createService({
    clientId: 'client-1',
    clientSecret: 'secret-1',
    accessTokenLifetimeSeconds: 3600,
    tokenRequestsPerSecond: 10,
    retrievalRequestsPerSecond: 15,
    accountRequestsPerSecond: 0,
    accountBurst: 10,
    sessionTimeoutMs: 15 * 60_000,
    now: () => now,
    sendCallback: async (url, body) => void callbacks.push([url, body]),
    retrievalOrigin: () => 'https://retrieval.test',
    apiOrigin: () => ORIGIN,
    ...extra,
  });
  const advance = (ms: number) => (now += ms);
  const basic = (id = 'client-1', secret = 'secret-1') => 'Basic ' + Buffer.from(`${id}:${secret}`).toString('base64');
  const tokenRequest = (
    headers: Record<string, string | undefined> = {},
    body = 'grant_type=client_credentials',
    method = 'POST',
    path = '/oauth2/token',
  ) => {
    const all: Record<string, string> = {};
    for (const [k, v] of Object.entries({
      authorization: basic(),
      accept: 'application/json',
      'content-type': 'application/x-www-form-urlencoded',
      'user-agent': UA,
      ...headers,
    }))
      if (v !== undefined) all[k] = v;
    return service.token(
      new Request(`https://auth.test${path}`, { method, headers: all, ...(method === 'GET' ? {} : { body }) }),
    );
  };
  let cached: string | undefined;
  // One access token for the harness's calls: the token endpoint allows 10 a second, and the clock stands still.
  const accessToken = async () =>
    (cached ??= ((await (await tokenRequest()).json()) as { access_token: string }).access_token);
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string | undefined> = {},
    /** Default: the host of the path's role (account, retrieval for the reads, else the API host). */
    handler: 'account' | 'api' | 'retrieval' = hostOf(method, path),
  ) => {
    const all: Record<string, string> = {};
    for (const [k, v] of Object.entries({
      authorization: `Bearer ${await accessToken()}`,
      'content-type': 'application/json',
      'user-agent': UA,
      ...headers,
    }))
      if (v !== undefined) all[k] = v;
    const origin = { account: ACCOUNT_ORIGIN, api: ORIGIN, retrieval: 'https://retrieval.test' }[handler];
    const request = new Request(`${origin}${path}`, {
      method,
      headers: all,
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    return service[handler](request);
  };
  const create = async (
    body: unknown = { customerInternalReference: 'order-1', workflowDefinition: { key: 10011 } },
    headers: Record<string, string | undefined> = {},
  ) => call('POST', '/api/v1/accounts', body, headers);
  const transaction = async (body?: unknown) => {
    const answer = (await (await create(body)).json()) as {
      account: { id: string };
      workflowExecution: {
        id: string;
        credentials: Array<{
          id: string;
          api: { token: string; parts: Record<string, string>; workflowExecution: string };
        }>;
      };
    };
    const credential = answer.workflowExecution.credentials[0]!;
    return {
      accountId: answer.account.id,
      executionId: answer.workflowExecution.id,
      credential,
      token: credential.api.token,
      upload: new URL(credential.api.parts.device_risk ?? credential.api.parts.prepared_data ?? '').pathname,
      finalize: new URL(credential.api.workflowExecution).pathname,
    };
  };
  const upload = async (
    tx: { upload: string; token: string },
    sessionId: unknown,
    headers: Record<string, string | undefined> = {},
  ) => call('POST', tx.upload, { sessionId }, { authorization: `Bearer ${tx.token}`, ...headers });
  const finalize = async (tx: { finalize: string; token: string }, headers: Record<string, string | undefined> = {}) =>
    call('PUT', tx.finalize, undefined, { authorization: `Bearer ${tx.token}`, ...headers });
  /** The execution's details, read on the retrieval host. */
  const details = async (tx: { accountId: string; executionId: string }) =>
    (
      await call(
        'GET',
        `/api/v1/accounts/${tx.accountId}/workflow-executions/${tx.executionId}`,
        undefined,
        {},
        'retrieval',
      )
    ).json();
  return {
    service,
    advance,
    basic,
    tokenRequest,
    accessToken,
    call,
    create,
    transaction,
    upload,
    finalize,
    details,
    callbacks,
  };
}

export const problemOf = async (response: Response) => [
  response.status,
  ((await response.json()) as { detail?: string; error?: string }).detail ??
    ((await response.clone().text()) && undefined),
];
export const oauth = async (response: Response) => [
  response.status,
  ((await response.json()) as { error: string }).error,
];
