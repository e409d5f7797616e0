/**
 * One transaction's Device Risk credential: picked from an account answer and checked
 * (addresses on the API's origin, of the documented shapes: docs/vendor-contract.md#the-service)
 * before any request carries its token, and checked again before each use.
 */
import {
  DeviceRiskError,
  ERR_FORGED_ADDRESS,
  ERR_INVALID_CONFIGURATION,
  ERR_INVALID_RESPONSE,
  ERR_NO_DEVICE_RISK_CREDENTIAL,
  ERR_TRANSACTION_TOKEN_EXPIRED,
} from '../errors.js';
import { apiMessages } from '../messages.js';
import type { Now } from '../clock.js';

export const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
const EXECUTION_SHAPE = new RegExp(`^/api/v1/accounts/${UUID}/workflow-executions/${UUID}$`);
const PART_SHAPE = new RegExp(
  `^/api/v1/accounts/${UUID}/workflow-executions/${UUID}/credentials/${UUID}/parts/DEVICE_RISK$`,
);
export const DEFAULT_TRANSACTION_TOKEN_LIFETIME_MS = 30 * 60_000;

/**
 * One transaction's Device Risk credential. The transaction token is held
 * privately: it does not show in `JSON.stringify`, logs or `console.log`.
 */
export class DeviceRiskTransaction {
  readonly accountId: string;
  readonly workflowExecutionId: string;
  readonly credentialId: string;
  readonly uploadUrl: string;
  readonly finalizeUrl: string;
  /** Epoch ms after which the transaction token is no longer accepted. */
  readonly tokenExpiresAt: number;
  readonly #token: string;

  constructor(fields: Omit<DeviceRiskTransaction, 'token' | 'toJSON'> & { token: string }) {
    this.accountId = fields.accountId;
    this.workflowExecutionId = fields.workflowExecutionId;
    this.credentialId = fields.credentialId;
    this.uploadUrl = fields.uploadUrl;
    this.finalizeUrl = fields.finalizeUrl;
    this.tokenExpiresAt = fields.tokenExpiresAt;
    this.#token = fields.token;
  }

  /** @internal The bearer token for upload and finalize. */
  get token(): string {
    return this.#token;
  }

  toJSON() {
    const { accountId, workflowExecutionId, credentialId, uploadUrl, finalizeUrl, tokenExpiresAt } = this;
    return { accountId, workflowExecutionId, credentialId, uploadUrl, finalizeUrl, tokenExpiresAt };
  }
}

export interface Transactions {
  /** Picks and checks the Device Risk credential of an account create/update answer. */
  transactionFrom(answer: unknown, tokenLifetimeMs?: number, issuedAt?: number): DeviceRiskTransaction;
  /** Throws unless the transaction is one of ours, its addresses still check, and its token has not expired. */
  usable(transaction: DeviceRiskTransaction, operation: string): void;
}

/** The checks of transactions on the API at `base`; `marginMs` before expiry a token counts as expired. */
export function createTransactions(base: URL, now: Now, marginMs: number): Transactions {
  function checkAddress(value: unknown, shape: RegExp, what: string): string {
    let url: URL | undefined;
    try {
      url = typeof value === 'string' ? new URL(value) : undefined;
    } catch {
      // No URL: refused below, as every address off the API is.
    }
    if (!url || url.origin !== base.origin || !shape.test(url.pathname) || url.search || url.hash || url.username) {
      throw new DeviceRiskError(ERR_FORGED_ADDRESS, apiMessages.addressRefused(what, base.origin));
    }
    return url.href;
  }

  /**
   * One API call with retries. `repeatable` says whether a 5xx or a network
   * failure may be retried (the call is safe to repeat); 429 always may. A call under one
   * of the service's limits (`limiter`) waits for its slot first, within the call's time
   * limit, and a 429 it gets makes every instance sharing the store back off.
   */

  function transactionFrom(
    answer: unknown,
    tokenLifetime = DEFAULT_TRANSACTION_TOKEN_LIFETIME_MS,
    issuedAt = now(),
  ): DeviceRiskTransaction {
    const a = answer as
      { account?: { id?: unknown }; workflowExecution?: { id?: unknown; credentials?: unknown } } | undefined;
    const credentials = a?.workflowExecution?.credentials ?? (a as { credentials?: unknown } | undefined)?.credentials;
    if (!Array.isArray(credentials))
      throw new DeviceRiskError(ERR_INVALID_RESPONSE, apiMessages.noCredentials, {
        operation: 'account',
      });
    const credential = credentials.find(
      (c: { category?: unknown; allowedChannels?: unknown; api?: { parts?: { device_risk?: unknown } } }) =>
        c?.category === 'DATA' &&
        Array.isArray(c.allowedChannels) &&
        c.allowedChannels.includes('API') &&
        typeof c.api?.parts?.device_risk === 'string',
    ) as
      | { id?: unknown; api: { token?: unknown; parts: { device_risk: string }; workflowExecution?: unknown } }
      | undefined;
    if (!credential) {
      throw new DeviceRiskError(ERR_NO_DEVICE_RISK_CREDENTIAL, apiMessages.noDeviceRiskCredential, {
        operation: 'account',
      });
    }
    const { token } = credential.api;
    if (typeof token !== 'string' || !token)
      throw new DeviceRiskError(ERR_INVALID_RESPONSE, apiMessages.noApiToken, {
        operation: 'account',
      });
    const uploadUrl = checkAddress(credential.api.parts.device_risk, PART_SHAPE, 'upload (api.parts.device_risk)');
    const finalizeUrl = checkAddress(
      credential.api.workflowExecution,
      EXECUTION_SHAPE,
      'finalize (api.workflowExecution)',
    );
    const [, , , , accountId, , workflowExecutionId, , credentialId] = new URL(uploadUrl).pathname.split('/');
    if (
      finalizeUrl !== uploadUrl.slice(0, finalizeUrl.length) ||
      (credential.id !== undefined && credential.id !== credentialId)
    ) {
      throw new DeviceRiskError(ERR_FORGED_ADDRESS, apiMessages.addressesApart);
    }
    return new DeviceRiskTransaction({
      accountId: accountId!,
      workflowExecutionId: workflowExecutionId!,
      credentialId: credentialId!,
      uploadUrl,
      finalizeUrl,
      tokenExpiresAt: issuedAt + tokenLifetime,
      token,
    });
  }

  function usable(transaction: DeviceRiskTransaction, operation: string): void {
    if (!(transaction instanceof DeviceRiskTransaction))
      throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, apiMessages.needsTransaction(operation));
    // Re-check: a transaction object may have been rebuilt from stored data.
    checkAddress(transaction.uploadUrl, PART_SHAPE, 'upload');
    checkAddress(transaction.finalizeUrl, EXECUTION_SHAPE, 'finalize');
    if (now() >= transaction.tokenExpiresAt - marginMs) {
      throw new DeviceRiskError(
        ERR_TRANSACTION_TOKEN_EXPIRED,
        apiMessages.transactionExpired(transaction.workflowExecutionId),
        { operation },
      );
    }
  }

  return { transactionFrom, usable };
}
