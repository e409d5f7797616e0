/**
 * Account create and update: the requests that start a transaction, checked against the
 * service's rules before they are sent, and kept under its account limit for the fleet
 * (docs/vendor-contract.md#the-service; rate-limit.ts).
 */
import {
  DeviceRiskError,
  ERR_INVALID_ACCOUNT_REQUEST,
  ERR_INVALID_CONFIGURATION,
  ERR_INVALID_RESPONSE,
} from '../errors.js';
import { apiMessages } from '../messages.js';
import type { Now } from '../clock.js';
import type { Call } from './call.js';
import type { RateLimiter } from './rate-limit.js';
import type { TokenSource } from './token-source.js';
import {
  DEFAULT_TRANSACTION_TOKEN_LIFETIME_MS,
  UUID,
  type DeviceRiskTransaction,
  type Transactions,
} from './transaction.js';

export interface AccountRequest {
  customerInternalReference: string;
  workflowDefinition: { key: string | number };
  userReference?: string;
  callbackUrl?: string;
  /** Like "30m" (5m to 60d). Default 30m. */
  tokenLifetime?: string;
  [key: string]: unknown;
}

const FORBIDDEN_REFERENCE = /[<>"/;`%{}|]/;

/**
 * The documented rules of an account request (docs/vendor-contract.md#the-service), checked before the
 * call: the service refuses a bad one with a 400 that no retry can mend.
 */
export function checkAccountRequest(body: AccountRequest): void {
  const refuse = (message: string) => {
    throw new DeviceRiskError(ERR_INVALID_ACCOUNT_REQUEST, message, { operation: 'account' });
  };
  const reference = body?.customerInternalReference;
  if (typeof reference !== 'string' || reference === '' || reference.length > 100) refuse(apiMessages.referenceLength);
  if (FORBIDDEN_REFERENCE.test(reference)) refuse(apiMessages.referenceCharacters);
  const key = body.workflowDefinition?.key;
  if ((typeof key !== 'string' && typeof key !== 'number') || key === '') refuse(apiMessages.definitionKeyRequired);
  if (body.userReference !== undefined && (typeof body.userReference !== 'string' || body.userReference.length > 100))
    refuse(apiMessages.userReferenceLength);
  if (body.callbackUrl !== undefined && (typeof body.callbackUrl !== 'string' || body.callbackUrl.length > 255))
    refuse(apiMessages.callbackUrlLength);
  if (body.tokenLifetime !== undefined && !/^\d+[mhd]$/.test(body.tokenLifetime))
    refuse(apiMessages.tokenLifetimeShape);
}

function lifetimeMs(value: string | undefined): number {
  // Stryker disable next-line ConditionalExpression,Regex: checkAccountRequest has refused every other shape before; undefined reads as "undefined", no match either
  const match = value === undefined ? undefined : /^(\d+)([mhd])$/.exec(value);
  if (!match) return DEFAULT_TRANSACTION_TOKEN_LIFETIME_MS;
  return Number(match[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'm' | 'h' | 'd'];
}

export interface AccountContext {
  call: Call;
  transactions: Transactions;
  tokenSource: TokenSource;
  now: Now;
  /** The API's base and the accounts path on it. */
  base: URL;
  accountsPath: string;
  /** The whole time limit of an account call, waits for the limit included. */
  accountTimeoutMs: number;
  limiter: RateLimiter;
}

export function createAccountCalls(context: AccountContext) {
  const { call, tokenSource, now, base, accountsPath, accountTimeoutMs } = context;
  async function account(operation: string, url: string, method: string, body: AccountRequest, repeatable: boolean) {
    checkAccountRequest(body);
    const started = now();
    const response = await call(
      operation,
      url,
      {
        method,
        body: JSON.stringify(body),
        bearer: () => tokenSource.getToken(),
        accessToken: true,
        timeoutMs: accountTimeoutMs,
        limiter: context.limiter,
        wholeCall: true,
      },
      repeatable,
    );
    const answer: unknown = await response.json().catch(() => {
      throw new DeviceRiskError(ERR_INVALID_RESPONSE, apiMessages.notJson(operation), {
        operation,
      });
    });
    // The lifetime counts from when the request left, not from when the answer came.
    return context.transactions.transactionFrom(answer, lifetimeMs(body.tokenLifetime), started);
  }

  return {
    createAccount: (body: AccountRequest): Promise<DeviceRiskTransaction> =>
      account('account create', new URL(accountsPath, base).href, 'POST', body, false),
    updateAccount(accountId: string, body: AccountRequest): Promise<DeviceRiskTransaction> {
      if (!new RegExp(`^${UUID}$`).test(accountId))
        throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, apiMessages.accountIdNotUuid);
      return account('account update', new URL(`${accountsPath}/${accountId}`, base).href, 'PUT', body, true);
    },
  };
}
