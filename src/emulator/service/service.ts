/**
 * The emulated identity-verification service: the OAuth token endpoint, account
 * create and update, the Device Risk upload, finalize and status, with the
 * spec's limits, lifetimes and states. Addresses in answers are built from the
 * request's own origin (or the X-Forwarded-Host and -Proto a proxy in front sets), so the
 * handlers work wherever they are mounted.
 */
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { decodeBlackbox } from '../scripts/routes.js';
import { bearer, checkUserAgent, json, problem, readJson, TOO_MANY_REQUESTS } from './http.js';

export type WorkflowStatus = 'INITIATED' | 'ACQUIRED' | 'PROCESSED' | 'SESSION_EXPIRED' | 'TOKEN_EXPIRED';

export interface ServiceOptions {
  clientId: string;
  clientSecret: string;
  /** Access token lifetime in seconds (spec: 3600). */
  accessTokenLifetimeSeconds: number;
  /** Token requests allowed per second before 429 (spec: 10). 0 disables. */
  tokenRequestsPerSecond: number;
  /** Retrievals (status and details) allowed per second per tenant before 429 (docs/vendor-contract.md#the-service: 15). 0 disables. */
  retrievalRequestsPerSecond: number;
  /** Account create/update requests per second per tenant, and the burst allowed (docs/vendor-contract.md#the-service: 1, with short bursts). 0 disables. */
  accountRequestsPerSecond: number;
  accountBurst: number;
  /** Session timeout in ms, reset by each action (spec: 15 minutes). */
  sessionTimeoutMs: number;
  /** Workflow definition keys and whether they include Device Risk; undefined: every key does. */
  workflows?: Record<string, { deviceRisk: boolean }>;
  now: () => number;
  /** Sends the status callback on finalize. */
  sendCallback: (url: string, body: unknown) => Promise<void>;
  /** The retrieval API's origin: callbacks' hrefs point there. */
  retrievalOrigin: () => string;
}

/** A decision the emulator answers: from the blackbox's sources, or forced by a test. */
export interface EmulatedDecision {
  type: 'PASSED' | 'REJECTED' | 'WARNING' | 'NOT_EXECUTED' | (string & {});
  label: string;
  alerts?: string[];
  score?: number;
}

/** Which transactions a forced decision applies to: a workflow execution id, a customer reference, 'next', or a test. */
export type DecisionMatch = string | ((tx: Transaction) => boolean);

export interface Transaction {
  accountId: string;
  workflowExecutionId: string;
  credentialId?: string;
  customerInternalReference: string;
  userReference?: string;
  callbackUrl?: string;
  workflowKey: string;
  token: string;
  tokenExpiresAt: number;
  lastActionAt: number;
  createdAt: number;
  processed: boolean;
  acquired: boolean;
  /** Every blackbox uploaded, in order. */
  blackboxes: string[];
  /** The decision, fixed when the transaction is processed. */
  decision?: EmulatedDecision;
  processedAt?: number;
}

const FORBIDDEN_REFERENCE = /[<>"/;`%{}|]/;
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const EXECUTION_PATH = new RegExp(`^/api/v1/accounts/(${UUID})/workflow-executions/(${UUID})$`);
const STATUS_PATH = new RegExp(`^/api/v1/accounts/(${UUID})/workflow-executions/(${UUID})/status$`);
const PART_PATH = new RegExp(
  `^/api/v1/accounts/(${UUID})/workflow-executions/(${UUID})/credentials/(${UUID})/parts/([A-Z_]+)$`,
);
const ACCOUNT_PATH = new RegExp(`^/api/v1/accounts/(${UUID})$`);
/** The blackbox alphabet: base64, plus "@" in some old ones. */
export const BLACKBOX_SHAPE = /^[A-Za-z0-9+/@]+=*$/;
export const MAX_BLACKBOX_LENGTH = 8001;

/** "30m", "12h", "5d" -> ms; undefined when out of the 5m..60d range or malformed. */
export function parseTokenLifetime(value: string): number | undefined {
  const match = /^(\d{1,6})([mhd])$/.exec(value);
  if (!match) return undefined;
  const ms = Number(match[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'm' | 'h' | 'd'];
  return ms >= 5 * 60_000 && ms <= 60 * 86_400_000 ? ms : undefined;
}

/**
 * At most `perSecond` requests in any second (0: no limit): the token and retrieval limits of
 * docs/vendor-contract.md#the-service, as the service counts them.
 */
export function slidingWindow(perSecond: number, now: () => number): { take(): boolean } {
  const times: number[] = [];
  return {
    take() {
      if (perSecond <= 0) return true;
      const at = now();
      while (times.length > 0 && times[0]! <= at - 1000) times.shift();
      if (times.length >= perSecond) return false;
      times.push(at);
      return true;
    },
  };
}

export function createService(options: ServiceOptions) {
  const accessTokens = new Map<string, number>(); // token -> expiry
  const accounts = new Set<string>();
  const transactions = new Map<string, Transaction>(); // by workflow execution id
  /** Newest first; a one-shot rule is removed when it has decided one transaction. */
  const forcedDecisions: Array<[DecisionMatch, EmulatedDecision, boolean]> = [];
  const tokenWindow = slidingWindow(options.tokenRequestsPerSecond, options.now);
  const retrievalWindow = slidingWindow(options.retrievalRequestsPerSecond, options.now);
  let accountBucket = { tokens: options.accountBurst, at: options.now() };

  function statusOf(tx: Transaction): WorkflowStatus {
    if (tx.processed) return 'PROCESSED';
    const sessionEnd = tx.lastActionAt + options.sessionTimeoutMs;
    const now = options.now();
    if (now >= tx.tokenExpiresAt && tx.tokenExpiresAt <= sessionEnd) return 'TOKEN_EXPIRED';
    if (now >= sessionEnd) return 'SESSION_EXPIRED';
    return tx.acquired ? 'ACQUIRED' : 'INITIATED';
  }

  function authorizedByAccessToken(request: Request): Response | undefined {
    const token = bearer(request);
    const expiry = token === undefined ? undefined : accessTokens.get(token);
    if (expiry === undefined) return problem(401, 'Unauthorized', 'A valid access token is required');
    if (options.now() >= expiry) return problem(401, 'Unauthorized', 'The access token has expired');
    return undefined;
  }

  // ---- POST /oauth2/token ---------------------------------------------------------------
  async function token(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname !== '/oauth2/token') return problem(404, 'Not Found', 'Unknown path');
    const now = options.now();
    if (!tokenWindow.take()) return TOO_MANY_REQUESTS(1);

    const oauthError = (status: number, error: string, description: string) =>
      json({ error, error_description: description }, status);
    if (request.method !== 'POST') return oauthError(400, 'invalid_request', 'Use POST');
    const agent = checkUserAgent(request);
    if (agent) return agent;
    if (!/\bapplication\/json\b/i.test(request.headers.get('accept') ?? '')) {
      return oauthError(400, 'invalid_request', 'Accept: application/json is required');
    }
    if (!/^application\/x-www-form-urlencoded\b/i.test(request.headers.get('content-type') ?? '')) {
      return oauthError(400, 'invalid_request', 'The body must be application/x-www-form-urlencoded');
    }
    const basic = /^Basic ([A-Za-z0-9+/]+=*)$/.exec(request.headers.get('authorization') ?? '');
    if (!basic) return oauthError(400, 'invalid_request', 'HTTP Basic client authentication is required');
    const [rawId = '', ...rest] = Buffer.from(basic[1]!, 'base64').toString('utf8').split(':');
    // RFC 6749 2.3.1: both parts are form-encoded before Basic encoding.
    const formDecode = (value: string) => {
      try {
        return decodeURIComponent(value.replace(/\+/g, ' '));
      } catch {
        return value;
      }
    };
    const id = formDecode(rawId);
    const secret = formDecode(rest.join(':'));
    const form = new URLSearchParams(await request.text());
    if (form.get('grant_type') !== 'client_credentials') {
      return oauthError(400, 'unsupported_grant_type', 'grant_type must be client_credentials');
    }
    const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
    if (!same(id ?? '', options.clientId) || !same(secret, options.clientSecret)) {
      return json({ error: 'invalid_client', error_description: 'Client authentication failed' }, 401, {
        'www-authenticate': 'Basic realm="oauth2"',
      });
    }
    const accessToken = randomBytes(32).toString('base64url');
    accessTokens.set(accessToken, now + options.accessTokenLifetimeSeconds * 1000);
    return json({ access_token: accessToken, expires_in: options.accessTokenLifetimeSeconds, token_type: 'Bearer' });
  }

  // ---- accounts -------------------------------------------------------------------------
  function takeAccountSlot(): boolean {
    if (options.accountRequestsPerSecond <= 0) return true;
    const now = options.now();
    const refill = ((now - accountBucket.at) / 1000) * options.accountRequestsPerSecond;
    accountBucket = { tokens: Math.min(options.accountBurst, accountBucket.tokens + refill), at: now };
    if (accountBucket.tokens < 1) return false;
    accountBucket.tokens -= 1;
    return true;
  }

  function validateAccountBody(
    body: unknown,
  ):
    | { error: string }
    | { value: { cir: string; userReference?: string; callbackUrl?: string; key: string; lifetimeMs: number } } {
    if (typeof body !== 'object' || body === null) return { error: 'The body must be a JSON object' };
    const b = body as Record<string, unknown>;
    const cir = b.customerInternalReference;
    if (typeof cir !== 'string' || cir === '') return { error: 'customerInternalReference is required' };
    if (cir.length > 100) return { error: 'customerInternalReference must be at most 100 characters' };
    if (FORBIDDEN_REFERENCE.test(cir)) return { error: 'customerInternalReference contains a forbidden character' };
    const key = (b.workflowDefinition as { key?: unknown } | undefined)?.key;
    if ((typeof key !== 'string' || key === '') && typeof key !== 'number')
      return { error: 'workflowDefinition.key is required' };
    if (b.userReference !== undefined && (typeof b.userReference !== 'string' || b.userReference.length > 100)) {
      return { error: 'userReference must be a string of at most 100 characters' };
    }
    if (b.callbackUrl !== undefined) {
      if (typeof b.callbackUrl !== 'string' || b.callbackUrl.length > 255)
        return { error: 'callbackUrl must be a URL of at most 255 characters' };
      try {
        const url = new URL(b.callbackUrl);
        if (
          url.protocol !== 'https:' &&
          !(url.protocol === 'http:' && /^(127\.|localhost$|\[::1\]$)/.test(url.hostname))
        ) {
          return { error: 'callbackUrl must use https' };
        }
      } catch {
        return { error: 'callbackUrl must be a URL' };
      }
    }
    let lifetimeMs = 30 * 60_000;
    if (b.tokenLifetime !== undefined) {
      const parsed = typeof b.tokenLifetime === 'string' ? parseTokenLifetime(b.tokenLifetime) : undefined;
      if (parsed === undefined) return { error: 'tokenLifetime must look like "30m", "12h" or "5d", from 5m to 60d' };
      lifetimeMs = parsed;
    }
    return {
      value: {
        cir,
        key: String(key),
        lifetimeMs,
        ...(typeof b.userReference === 'string' ? { userReference: b.userReference } : {}),
        ...(typeof b.callbackUrl === 'string' ? { callbackUrl: b.callbackUrl } : {}),
      },
    };
  }

  async function createOrUpdate(request: Request, existingAccountId?: string): Promise<Response> {
    const denied = authorizedByAccessToken(request);
    if (denied) return denied;
    const agent = checkUserAgent(request);
    if (agent) return agent;
    if (existingAccountId && !accounts.has(existingAccountId)) return problem(404, 'Not Found', 'Unknown account');
    if (!takeAccountSlot()) return TOO_MANY_REQUESTS(1);
    const read = await readJson(request, 64 * 1024);
    if ('error' in read) return read.error;
    const checked = validateAccountBody(read.body);
    if ('error' in checked) return problem(400, 'Bad Request', checked.error);
    const { cir, key, lifetimeMs, userReference, callbackUrl } = checked.value;
    const workflow = options.workflows ? options.workflows[key] : { deviceRisk: true };
    if (!workflow) return problem(400, 'Bad Request', `Unknown workflowDefinition.key ${key}`);

    const now = options.now();
    const accountId = existingAccountId ?? randomUUID();
    accounts.add(accountId);
    const tx: Transaction = {
      accountId,
      workflowExecutionId: randomUUID(),
      customerInternalReference: cir,
      workflowKey: key,
      token: randomBytes(48).toString('base64url'),
      tokenExpiresAt: now + lifetimeMs,
      lastActionAt: now,
      createdAt: now,
      processed: false,
      acquired: false,
      blackboxes: [],
      ...(userReference === undefined ? {} : { userReference }),
      ...(callbackUrl === undefined ? {} : { callbackUrl }),
    };
    transactions.set(tx.workflowExecutionId, tx);
    // Behind a proxy (a test routing the real hosts here), the origin the client called.
    const forwarded = request.headers.get('x-forwarded-host');
    const origin = forwarded
      ? `${request.headers.get('x-forwarded-proto') ?? 'https'}://${forwarded}`
      : new URL(request.url).origin;
    const execution = `${origin}/api/v1/accounts/${accountId}/workflow-executions/${tx.workflowExecutionId}`;
    const credentials: unknown[] = [];
    if (workflow.deviceRisk) {
      tx.credentialId = randomUUID();
      credentials.push({
        id: tx.credentialId,
        category: 'DATA',
        label: 'DATA',
        allowedChannels: ['API'],
        api: {
          token: tx.token,
          parts: { device_risk: `${execution}/credentials/${tx.credentialId}/parts/DEVICE_RISK` },
          workflowExecution: execution,
        },
      });
    } else {
      // A workflow without Device Risk still returns some credential, of another kind.
      credentials.push({
        id: randomUUID(),
        category: 'ID',
        allowedChannels: ['WEB', 'API', 'SDK'],
        api: {
          token: tx.token,
          parts: { front: `${execution}/credentials/x/parts/FRONT` },
          workflowExecution: execution,
        },
      });
    }
    return json({
      timestamp: new Date(now).toISOString(),
      account: { id: accountId },
      workflowExecution: { id: tx.workflowExecutionId, credentials },
    });
  }

  // ---- transaction calls ----------------------------------------------------------------
  function transactionFor(
    request: Request,
    accountId: string,
    executionId: string,
  ): { tx: Transaction } | { error: Response } {
    const token = bearer(request);
    if (!token) return { error: problem(401, 'Unauthorized', 'The transaction token is required') };
    const tx = transactions.get(executionId);
    if (!tx || tx.accountId !== accountId)
      return { error: problem(404, 'Not Found', 'Unknown account or workflow execution') };
    if (token !== tx.token)
      return { error: problem(403, 'Forbidden', 'The token does not belong to this transaction') };
    if (options.now() >= tx.tokenExpiresAt)
      return { error: problem(401, 'Unauthorized', 'The transaction token has expired') };
    return { tx };
  }

  async function upload(request: Request, match: RegExpExecArray): Promise<Response> {
    if (request.method !== 'POST') return problem(405, 'Method Not Allowed', 'Use POST', { allow: 'POST' });
    const agent = checkUserAgent(request);
    if (agent) return agent;
    const found = transactionFor(request, match[1]!, match[2]!);
    if ('error' in found) return found.error;
    const { tx } = found;
    if (match[3] !== tx.credentialId || match[4] !== 'DEVICE_RISK')
      return problem(404, 'Not Found', 'Unknown credential or part');
    const status = statusOf(tx);
    if (status !== 'INITIATED' && status !== 'ACQUIRED')
      return problem(409, 'Conflict', `The workflow execution is ${status}`);
    const read = await readJson(request, 32 * 1024);
    if ('error' in read) return read.error;
    const sessionId = (read.body as { sessionId?: unknown } | null)?.sessionId;
    if (typeof sessionId !== 'string' || sessionId === '')
      return problem(400, 'Bad Request', 'sessionId is required and must be a non-empty string');
    if (sessionId.length > MAX_BLACKBOX_LENGTH)
      return problem(400, 'Bad Request', `sessionId is longer than ${MAX_BLACKBOX_LENGTH} characters`);
    if (!BLACKBOX_SHAPE.test(sessionId))
      return problem(400, 'Bad Request', 'sessionId is not a blackbox (base64 characters expected)');
    tx.blackboxes.push(sessionId);
    tx.acquired = true;
    tx.lastActionAt = options.now();
    return json({
      timestamp: new Date(tx.lastActionAt).toISOString(),
      account: { id: tx.accountId },
      workflowExecution: { id: tx.workflowExecutionId },
    });
  }

  async function finalize(request: Request, match: RegExpExecArray): Promise<Response> {
    const agent = checkUserAgent(request);
    if (agent) return agent;
    const found = transactionFor(request, match[1]!, match[2]!);
    if ('error' in found) return found.error;
    const { tx } = found;
    const status = statusOf(tx);
    if (status !== 'ACQUIRED') {
      return problem(
        409,
        'Conflict',
        status === 'INITIATED' ? 'Nothing was uploaded yet' : `The workflow execution is ${status}`,
      );
    }
    tx.processed = true;
    tx.lastActionAt = tx.processedAt = options.now();
    tx.decision = decisionOf(tx);
    const answer = {
      timestamp: new Date(tx.lastActionAt).toISOString(),
      account: { id: tx.accountId },
      workflowExecution: { id: tx.workflowExecutionId },
    };
    if (tx.callbackUrl) void options.sendCallback(tx.callbackUrl, callbackBody(tx, 'PROCESSED')).catch(() => {});
    return json(answer);
  }

  function status(request: Request, match: RegExpExecArray): Response {
    const denied = authorizedByAccessToken(request);
    if (denied) return denied;
    const tx = transactions.get(match[2]!);
    if (!tx || tx.accountId !== match[1]) return problem(404, 'Not Found', 'Unknown account or workflow execution');
    return json({
      account: { id: tx.accountId },
      workflowExecution: { id: tx.workflowExecutionId, definitionKey: tx.workflowKey, status: statusOf(tx) },
    });
  }

  /** The documented callback body (docs/vendor-contract.md#the-answer), its hrefs on the retrieval host. */
  function callbackBody(tx: Transaction, status: WorkflowStatus) {
    const account = `${options.retrievalOrigin()}/api/v1/accounts/${tx.accountId}`;
    return {
      callbackSentAt: new Date(options.now()).toISOString(),
      ...(tx.userReference ? { userReference: tx.userReference } : {}),
      workflowExecution: {
        id: tx.workflowExecutionId,
        href: `${account}/workflow-executions/${tx.workflowExecutionId}`,
        definitionKey: tx.workflowKey,
        status,
      },
      account: { id: tx.accountId, href: account },
    };
  }

  /**
   * What a real service would make of the blackbox: every source, PASSED; one collection path
   * missing, WARNING with an alert naming it; none it can read, NOT_EXECUTED. A decision a test
   * forced wins.
   */
  function decisionOf(tx: Transaction): EmulatedDecision {
    const forced = forcedDecisions.findIndex(([match]) =>
      typeof match === 'function'
        ? match(tx)
        : match === 'next' || match === tx.workflowExecutionId || match === tx.customerInternalReference,
    );
    if (forced >= 0) {
      const [, decision, once] = forcedDecisions[forced]!;
      if (once) forcedDecisions.splice(forced, 1);
      return decision;
    }
    const sources = decodeBlackbox(tx.blackboxes.at(-1) ?? '')?.sources ?? [];
    const firstParty = sources.some((s) => s.startsWith('fp_'));
    const thirdParty = sources.some((s) => s.startsWith('tp'));
    if (firstParty && thirdParty) return { type: 'PASSED', label: 'OK', alerts: [], score: 8 };
    if (firstParty)
      return {
        type: 'WARNING',
        label: 'PARTIAL_COLLECTION',
        alerts: ['Third-party collection missing (blocked)'],
        score: 45,
      };
    if (thirdParty)
      return {
        type: 'WARNING',
        label: 'PARTIAL_COLLECTION',
        alerts: ['First-party collection missing (proxy)'],
        score: 40,
      };
    return { type: 'NOT_EXECUTED', label: 'TECHNICAL_ERROR', alerts: ['Blackbox could not be read'] };
  }

  /** What the vendor saw of the device, from the values the dynamic first-party script embedded. */
  function deviceData(tx: Transaction, decision: EmulatedDecision): Record<string, unknown> {
    const decoded = decodeBlackbox(tx.blackboxes.at(-1) ?? '');
    const embedded = decoded?.embedded.fp_dyn ?? decoded?.embedded.tp_dyn ?? {};
    const ua = embedded.ua ?? '';
    const browser = /(Edg|Firefox|Chrome|Safari)\/([\d.]+)/.exec(ua);
    // The most specific first: an Android user agent names Linux before Android.
    const os = ['Android', 'iPhone', 'iPad', 'Windows', 'Mac OS X', 'Linux'].find((name) => ua.includes(name));
    return {
      deviceModel: /Mobile|Android|iPhone/.test(ua) ? 'Mobile' : 'Desktop',
      deviceOS: os === 'Mac OS X' ? 'MacOS' : (os ?? 'Unknown'),
      browser: browser
        ? { Edg: 'Edge', Firefox: 'Firefox', Chrome: 'Chrome', Safari: 'Safari' }[browser[1]!]
        : 'Unknown',
      browserVersion: browser?.[2] ?? '',
      browserLanguage: (embedded.lang ?? '').split(',')[0] ?? '',
      browserTimezone: 'UTC',
      browserCookiesEnabled: true,
      deviceScreen: '1280x720',
      trueIP: '127.0.0.1',
      statedIp: '127.0.0.1',
      isp: 'Loopback',
      ipLocationCity: 'Localhost',
      ipLocationRegion: '',
      ipLocationCountry: 'ZZ',
      ipLocationLatitude: 0,
      ipLocationLongitude: 0,
      deviceFirstSeen: new Date(tx.createdAt).toISOString(),
      deviceIsNew: true,
      metaDataAge: 0,
      deviceAlerts: [...(decision.alerts ?? [])],
    };
  }

  /** The workflow details, in the documented shape: the decision, and the Device Risk capability's. */
  function details(request: Request, match: RegExpExecArray): Response {
    const denied = authorizedByAccessToken(request);
    if (denied) return denied;
    const tx = transactions.get(match[2]!);
    if (!tx || tx.accountId !== match[1]) return problem(404, 'Not Found', 'Unknown account or workflow execution');
    const decision = tx.decision ?? { type: 'NOT_EXECUTED', label: 'NOT_PROCESSED' };
    return json({
      createdAt: new Date(tx.createdAt).toISOString(),
      startedAt: new Date(tx.createdAt).toISOString(),
      ...(tx.processedAt === undefined ? {} : { completedAt: new Date(tx.processedAt).toISOString() }),
      account: { id: tx.accountId },
      workflow: {
        id: tx.workflowExecutionId,
        status: statusOf(tx),
        definitionKey: tx.workflowKey,
        customerInternalReference: tx.customerInternalReference,
        ...(tx.userReference ? { userReference: tx.userReference } : {}),
      },
      decision: {
        type: decision.type,
        details: { label: decision.label },
        ...(decision.score === undefined ? {} : { risk: { score: decision.score } }),
      },
      capabilities: {
        deviceRiskVerification: [
          {
            id: randomUUID(),
            credentials: tx.credentialId ? [{ id: tx.credentialId, category: 'DATA', label: 'DATA' }] : [],
            decision: { type: decision.type, details: { label: decision.label } },
            data: deviceData(tx, decision),
          },
        ],
      },
    });
  }

  /** The retrieval API: status and details, with the access token. */
  function retrieval(request: Request): Response {
    const { pathname } = new URL(request.url);
    const agent = checkUserAgent(request);
    if (agent) return agent;
    if (request.method !== 'GET') return problem(405, 'Method Not Allowed', 'Use GET', { allow: 'GET' });
    if (!retrievalWindow.take()) return TOO_MANY_REQUESTS(1);
    const statusMatch = STATUS_PATH.exec(pathname);
    if (statusMatch) return status(request, statusMatch);
    const executionMatch = EXECUTION_PATH.exec(pathname);
    if (executionMatch) return details(request, executionMatch);
    return problem(404, 'Not Found', 'Unknown path');
  }

  /** The route name of an API request, for counting and fault injection. */
  function apiRoute(request: Request): string {
    const { pathname } = new URL(request.url);
    if (pathname === '/api/v1/accounts') return 'accountCreate';
    if (ACCOUNT_PATH.test(pathname)) return 'accountUpdate';
    if (PART_PATH.test(pathname)) return 'upload';
    if (STATUS_PATH.test(pathname)) return 'status';
    if (EXECUTION_PATH.test(pathname)) return 'finalize';
    return 'unknown';
  }

  async function api(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname === '/api/v1/accounts') {
      return request.method === 'POST'
        ? createOrUpdate(request)
        : problem(405, 'Method Not Allowed', 'Use POST', { allow: 'POST' });
    }
    const account = ACCOUNT_PATH.exec(pathname);
    if (account) {
      return request.method === 'PUT'
        ? createOrUpdate(request, account[1])
        : problem(405, 'Method Not Allowed', 'Use PUT', { allow: 'PUT' });
    }
    const part = PART_PATH.exec(pathname);
    if (part) return upload(request, part);
    const statusMatch = STATUS_PATH.exec(pathname);
    if (statusMatch) {
      if (request.method !== 'GET') return problem(405, 'Method Not Allowed', 'Use GET', { allow: 'GET' });
      // A status read on the API host counts against the retrieval limit too.
      return retrievalWindow.take() ? status(request, statusMatch) : TOO_MANY_REQUESTS(1);
    }
    const execution = EXECUTION_PATH.exec(pathname);
    if (execution) {
      return request.method === 'PUT'
        ? finalize(request, execution)
        : problem(405, 'Method Not Allowed', 'Use PUT', { allow: 'PUT' });
    }
    return problem(404, 'Not Found', 'Unknown path');
  }

  return {
    token,
    api,
    apiRoute,
    retrieval,
    retrievalRoute: (request: Request) =>
      STATUS_PATH.test(new URL(request.url).pathname) ? 'retrievalStatus' : 'details',
    /** Forces the decision of the transactions `match` names ('next': the next one processed). */
    decide: (match: DecisionMatch, decision: EmulatedDecision, once = match === 'next') =>
      void forcedDecisions.unshift([match, decision, once]),
    callbackBody,
    statusOf,
    transactions: () => Array.from(transactions.values()),
  };
}
