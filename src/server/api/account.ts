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
import type { UpstreamOperation } from '../status/names.js';
import type { Now } from '../time/clock.js';
import type { Call } from './call.js';
import type { RateLimiter } from './rate-limit.js';
import type { TokenSource } from './token-source.js';
import { UUID, type DeviceRiskTransaction, type Transactions } from './transaction.js';

export interface AccountRequest {
  customerInternalReference: string;
  workflowDefinition: { key: string | number };
  userReference?: string;
  /** HTTPS, no IP address, no port, no fragment, at most 255 characters (on loopback against the emulator, any). */
  callbackUrl?: string;
  /** Like "30m", "600s", "12h" or "5d", from 5 minutes to 60 days. Default: the kit asks for 30m. */
  tokenLifetime?: string;
  [key: string]: unknown;
}

const FORBIDDEN_REFERENCE = /[<>"/;`%{}|]/;
/** Half of a UTF-16 pair on its own: no character, which neither UTF-8 nor a key's encoding can carry. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/** The documented shape of tokenLifetime (docs/vendor-contract.md#the-account-request). */
const LIFETIME_SHAPE = /^([+-]?\d+)([smhd])$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** The documented bounds of tokenLifetime: 5 minutes to 60 days. */
const TOKEN_LIFETIME_RANGE_MS = { min: 5 * 60_000, max: 60 * 86_400_000 } as const;
/**
 * What the kit asks for when a request names no tokenLifetime: the documented default, asked
 * for explicitly, so that the transaction's expiry is what was asked and not whatever the
 * tenant's portal setting has become.
 */
const DEFAULT_TOKEN_LIFETIME = '30m';

/** A tokenLifetime in ms, or undefined when it is not of the documented shape or bounds. */
function tokenLifetimeMs(value: unknown): number | undefined {
  const match = typeof value === 'string' ? LIFETIME_SHAPE.exec(value) : null;
  if (!match) return undefined;
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  return ms >= TOKEN_LIFETIME_RANGE_MS.min && ms <= TOKEN_LIFETIME_RANGE_MS.max ? ms : undefined;
}

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
const LOOPBACK_HOST = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

/**
 * The rule a callbackUrl breaks, or undefined (docs/vendor-contract.md#the-account-request):
 * HTTPS, a host name rather than an IP address, no port, no fragment, no credentials, at most
 * 255 characters. `local`: the service is on loopback (the emulator), where a callback to
 * loopback over plain HTTP, with a port, is how local development works.
 */
export function callbackUrlRuleBroken(value: unknown, local = false): string | undefined {
  if (typeof value !== 'string' || value.length > 255) return apiMessages.callbackUrlLength;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return apiMessages.callbackUrlRule('a URL');
  }
  if (local && LOOPBACK_HOST.test(url.hostname) && (url.protocol === 'http:' || url.protocol === 'https:'))
    return undefined;
  if (url.protocol !== 'https:') return apiMessages.callbackUrlRule('HTTPS');
  if (IPV4.test(url.hostname) || url.hostname.startsWith('['))
    return apiMessages.callbackUrlRule('a host name, not an IP address');
  if (url.username || url.password) return apiMessages.callbackUrlRule('without credentials');
  // Read from the text: URL drops a default port (":443"), and the rule is no port at all.
  if (/^[a-z][a-z0-9+.-]*:\/\/(?:[^/?#@]*@)?[^/?#:]*:/i.test(value))
    return apiMessages.callbackUrlRule('without a port');
  if (value.includes('#')) return apiMessages.callbackUrlRule('without a fragment');
  return undefined;
}

/**
 * The service's rules for an order's references (docs/vendor-contract.md#the-account-request):
 * `customerInternalReference` 1 to 100 characters (counted as UTF-16 code units, JavaScript's
 * `length`: the strict reading, never more code points than the service allows), none of `<>"/;\`%{}|`; `userReference` at
 * most 100. The one place they are checked: before the account call, and where a checkout
 * names its order (the endpoint, the gateway's Order-Token), so that an order the service
 * would refuse is refused at the door, never accepted and then dropped. The rule broken, or
 * undefined.
 */
export function referenceRuleBroken(order: { customerInternalReference?: unknown; userReference?: unknown }) {
  const reference = order.customerInternalReference;
  if (typeof reference !== 'string' || reference === '' || reference.length > 100) return apiMessages.referenceLength;
  if (FORBIDDEN_REFERENCE.test(reference)) return apiMessages.referenceCharacters;
  if (LONE_SURROGATE.test(reference)) return apiMessages.referenceUnpaired('customerInternalReference');
  const user = order.userReference;
  if (user !== undefined && (typeof user !== 'string' || user.length > 100)) return apiMessages.userReferenceLength;
  if (user !== undefined && LONE_SURROGATE.test(user)) return apiMessages.referenceUnpaired('userReference');
  return undefined;
}

/**
 * The documented rules of an account request (docs/vendor-contract.md#the-account-request),
 * checked before the call: the service refuses a bad one with a 400 that no retry can mend.
 * `local`: the service is on loopback (callbackUrlRuleBroken).
 */
export function checkAccountRequest(body: AccountRequest, options: { local?: boolean } = {}): void {
  const refuse = (message: string) => {
    throw new DeviceRiskError(ERR_INVALID_ACCOUNT_REQUEST, message, { operation: 'account' });
  };
  const brokenReference = referenceRuleBroken(body ?? {});
  if (brokenReference) refuse(brokenReference);
  const key = body.workflowDefinition?.key;
  if ((typeof key !== 'string' && typeof key !== 'number') || key === '') refuse(apiMessages.definitionKeyRequired);
  if (body.callbackUrl !== undefined) {
    const broken = callbackUrlRuleBroken(body.callbackUrl, options.local);
    if (broken) refuse(broken);
  }
  if (body.tokenLifetime !== undefined && tokenLifetimeMs(body.tokenLifetime) === undefined)
    refuse(apiMessages.tokenLifetimeShape);
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
  /** The service is on loopback (the emulator): a callbackUrl on loopback is allowed. */
  localService?: boolean;
}

export function createAccountCalls(context: AccountContext) {
  const { call, tokenSource, now, base, accountsPath, accountTimeoutMs } = context;
  async function account(
    operation: UpstreamOperation,
    url: string,
    method: string,
    asked: AccountRequest,
    repeatable: boolean,
  ) {
    checkAccountRequest(asked, { local: context.localService ?? false });
    // Asked for explicitly: the expiry the kit keeps is then the one the service was asked for.
    const body = { ...asked, tokenLifetime: asked.tokenLifetime ?? DEFAULT_TOKEN_LIFETIME };
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
    return context.transactions.transactionFrom(answer, tokenLifetimeMs(body.tokenLifetime), started);
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
