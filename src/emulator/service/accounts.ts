/**
 * Emulated account create and update, on the account host: the body rules of
 * docs/vendor-contract.md#the-account-request, credentials as the spec shapes them (their part
 * and execution addresses on the API host), and the account limit (a token bucket: 1 a second
 * with short bursts by default).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { checkContentType, checkUserAgent, json, problem, readJson, TOO_MANY_REQUESTS } from './http.js';
import type { ServiceState, Transaction } from './state.js';

const FORBIDDEN_REFERENCE = /[<>"/;`%{}|]/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * A tokenLifetime of the documented shape `^([+-]?\d+)([smhd])$` ("600s", "30m", "+12h", "5d")
 * in ms; undefined when malformed or outside the documented 5 minutes to 60 days.
 */
export function parseTokenLifetime(value: string): number | undefined {
  const match = /^([+-]?\d+)([smhd])$/.exec(value);
  if (!match) return undefined;
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  return ms >= 5 * 60_000 && ms <= 60 * 86_400_000 ? ms : undefined;
}

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

/**
 * The rule a callbackUrl breaks, or undefined (docs/vendor-contract.md#the-account-request): at
 * most 255 characters, HTTPS, a host name rather than an IP address, no port, no fragment, no
 * credentials. The emulator's one exception, for local development: a loopback host
 * (127.x.x.x, localhost, [::1]) over HTTP or HTTPS, with a port, is allowed, as the kit allows
 * it against a service on loopback. The service itself allows none of these.
 */
function callbackUrlRefusal(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > 255) return 'callbackUrl must be a URL of at most 255 characters';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'callbackUrl must be a URL';
  }
  if (LOOPBACK.test(url.hostname) && (url.protocol === 'http:' || url.protocol === 'https:')) return undefined;
  if (url.protocol !== 'https:') return 'callbackUrl must use https';
  if (IPV4.test(url.hostname) || url.hostname.startsWith('[')) return 'callbackUrl must name a host, not an IP address';
  if (url.username || url.password) return 'callbackUrl must not carry credentials';
  // From the text: URL drops a default port (":443"), and the rule is no port at all.
  if (/^[a-z][a-z0-9+.-]*:\/\/(?:[^/?#@]*@)?[^/?#:]*:/i.test(value)) return 'callbackUrl must not name a port';
  if (value.includes('#')) return 'callbackUrl must not have a fragment';
  return undefined;
}

export function createAccounts(state: ServiceState) {
  const { options, accounts, transactions, authorizedByAccessToken } = state;
  let accountBucket = { tokens: options.accountBurst, at: options.now() };

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
      const refused = callbackUrlRefusal(b.callbackUrl);
      if (refused) return { error: refused };
    }
    let lifetimeMs = 30 * 60_000;
    if (b.tokenLifetime !== undefined) {
      const parsed = typeof b.tokenLifetime === 'string' ? parseTokenLifetime(b.tokenLifetime) : undefined;
      if (parsed === undefined)
        return { error: 'tokenLifetime must look like "600s", "30m", "12h" or "5d", from 5 minutes to 60 days' };
      lifetimeMs = parsed;
    }
    return {
      value: {
        cir,
        key: String(key),
        lifetimeMs,
        // Stryker disable next-line ConditionalExpression: checked above, an absent one is undefined either way
        ...(typeof b.userReference === 'string' ? { userReference: b.userReference } : {}),
        // Stryker disable next-line ConditionalExpression: checked above, an absent one is undefined either way
        ...(typeof b.callbackUrl === 'string' ? { callbackUrl: b.callbackUrl } : {}),
      },
    };
  }

  /**
   * Where the upload and finalize addresses of a create answer point: the API host. Behind a
   * proxy that names the account host it was called as (`X-Forwarded-Host: account.<region>…`,
   * a test routing the service's documented hosts here), that host's `api.` twin, with the
   * forwarded protocol; else the emulator's own API origin.
   */
  function apiOriginFor(request: Request): string {
    const forwarded = request.headers.get('x-forwarded-host');
    if (forwarded && /^account\./i.test(forwarded))
      return `${request.headers.get('x-forwarded-proto') ?? 'https'}://api.${forwarded.slice('account.'.length)}`;
    return options.apiOrigin();
  }

  async function createOrUpdate(request: Request, existingAccountId?: string): Promise<Response> {
    const denied = authorizedByAccessToken(request);
    if (denied) return denied;
    const agent = checkUserAgent(request) ?? checkContentType(request);
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
      // Stryker disable next-line ConditionalExpression: every reader asks whether it is set (workflow.ts, retrieval.ts)
      ...(userReference === undefined ? {} : { userReference }),
      // Stryker disable next-line ConditionalExpression: every reader asks whether it is set (workflow.ts)
      ...(callbackUrl === undefined ? {} : { callbackUrl }),
    };
    transactions.set(tx.workflowExecutionId, tx);
    const execution = `${apiOriginFor(request)}/api/v1/accounts/${accountId}/workflow-executions/${tx.workflowExecutionId}`;
    const credentials: unknown[] = [];
    if (workflow.deviceRisk) {
      tx.credentialId = randomUUID();
      const part = (tx.part = workflow.part ?? 'device_risk');
      credentials.push({
        id: tx.credentialId,
        category: 'DATA',
        label: 'DATA',
        allowedChannels: ['API'],
        api: {
          token: tx.token,
          parts: { [part]: `${execution}/credentials/${tx.credentialId}/parts/${part.toUpperCase()}` },
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

  return createOrUpdate;
}
