/**
 * Emulated account create and update: the body rules of docs/vendor-contract.md#the-service,
 * credentials as the spec shapes them, and the account limit (a token bucket: 1 a second with
 * short bursts by default).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { checkUserAgent, json, problem, readJson, TOO_MANY_REQUESTS } from './http.js';
import type { ServiceState, Transaction } from './state.js';

const FORBIDDEN_REFERENCE = /[<>"/;`%{}|]/;

/** "30m", "12h", "5d" -> ms; undefined when out of the 5m..60d range or malformed. */
export function parseTokenLifetime(value: string): number | undefined {
  const match = /^(\d{1,6})([mhd])$/.exec(value);
  if (!match) return undefined;
  const ms = Number(match[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'm' | 'h' | 'd'];
  return ms >= 5 * 60_000 && ms <= 60 * 86_400_000 ? ms : undefined;
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
      if (typeof b.callbackUrl !== 'string' || b.callbackUrl.length > 255)
        return { error: 'callbackUrl must be a URL of at most 255 characters' };
      try {
        const url = new URL(b.callbackUrl);
        if (
          url.protocol !== 'https:' &&
          !(url.protocol === 'http:' && /^(127\.|localhost$|\[::1\])/.test(url.hostname))
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
        // Stryker disable next-line ConditionalExpression: checked above, an absent one is undefined either way
        ...(typeof b.userReference === 'string' ? { userReference: b.userReference } : {}),
        // Stryker disable next-line ConditionalExpression: checked above, an absent one is undefined either way
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
      // Stryker disable next-line ConditionalExpression: every reader asks whether it is set (workflow.ts, retrieval.ts)
      ...(userReference === undefined ? {} : { userReference }),
      // Stryker disable next-line ConditionalExpression: every reader asks whether it is set (workflow.ts)
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

  return createOrUpdate;
}
