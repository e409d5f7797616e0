/**
 * One transaction's Device Risk credential: picked from an account answer and checked
 * (addresses on the API host, of the documented shapes: docs/vendor-contract.md#hosts-by-role)
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
import type { Now } from '../time/clock.js';

export const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
const EXECUTION_SHAPE = new RegExp(`^/api/v1/accounts/${UUID}/workflow-executions/${UUID}$`);
/**
 * The credential's part names: `device_risk` as the specification names it, and
 * `prepared_data`, the name the service's published pages give the Data credential of a
 * standalone workflow (docs/vendor-contract.md#the-part-name). The first one an answer holds
 * is used; the address ends in the name in capitals.
 */
const DEVICE_RISK_PARTS = ['device_risk', 'prepared_data'] as const;
export type DeviceRiskPart = (typeof DEVICE_RISK_PARTS)[number];
const partShape = (part: DeviceRiskPart) =>
  new RegExp(`^/api/v1/accounts/${UUID}/workflow-executions/${UUID}/credentials/${UUID}/parts/${part.toUpperCase()}$`);
const PART_SHAPES = Object.fromEntries(DEVICE_RISK_PARTS.map((part) => [part, partShape(part)])) as Record<
  DeviceRiskPart,
  RegExp
>;
const DEFAULT_TRANSACTION_TOKEN_LIFETIME_MS = 30 * 60_000;

/**
 * One transaction's Device Risk credential. The transaction token is held
 * privately: it does not show in `JSON.stringify`, logs or `console.log`.
 */
export class DeviceRiskTransaction {
  readonly accountId: string;
  readonly workflowExecutionId: string;
  readonly credentialId: string;
  /** Which part name the service gave the upload address (`device_risk` or `prepared_data`). */
  readonly part: DeviceRiskPart;
  readonly uploadUrl: string;
  readonly finalizeUrl: string;
  /** Epoch ms after which the transaction token is no longer accepted. */
  readonly tokenExpiresAt: number;
  readonly #token: string;

  constructor(
    fields: Omit<DeviceRiskTransaction, 'token' | 'toJSON' | 'part'> & { token: string; part?: DeviceRiskPart },
  ) {
    this.accountId = fields.accountId;
    this.workflowExecutionId = fields.workflowExecutionId;
    this.credentialId = fields.credentialId;
    // A record sealed before the part was kept is a device_risk one: it was the only name then.
    this.part = fields.part ?? 'device_risk';
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
    const { accountId, workflowExecutionId, credentialId, part, uploadUrl, finalizeUrl, tokenExpiresAt } = this;
    return { accountId, workflowExecutionId, credentialId, part, uploadUrl, finalizeUrl, tokenExpiresAt };
  }
}

export interface Transactions {
  /** Picks and checks the Device Risk credential of an account create/update answer. */
  transactionFrom(answer: unknown, tokenLifetimeMs?: number, issuedAt?: number): DeviceRiskTransaction;
  /** Throws unless the transaction is one of ours, its addresses still check, and its token has not expired. */
  usable(transaction: DeviceRiskTransaction, operation: string): void;
}

/**
 * The checks of transactions whose upload and finalize addresses are on `apiBase` (the API
 * host, not the account host the create went to); `marginMs` before expiry a token counts as
 * expired.
 */
export function createTransactions(apiBase: URL, now: Now, marginMs: number): Transactions {
  function checkAddress(value: unknown, shape: RegExp, what: string): string {
    let url: URL | undefined;
    try {
      url = typeof value === 'string' ? new URL(value) : undefined;
    } catch {
      // No URL: refused below, as every address off the API is.
    }
    if (!url || url.origin !== apiBase.origin || !shape.test(url.pathname) || url.search || url.hash || url.username) {
      throw new DeviceRiskError(ERR_FORGED_ADDRESS, apiMessages.addressRefused(what, apiBase.origin));
    }
    return url.href;
  }

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
    type Credential = {
      id?: unknown;
      category?: unknown;
      allowedChannels?: unknown;
      api?: { token?: unknown; parts?: Record<string, unknown>; workflowExecution?: unknown };
    };
    const partOf = (c: Credential) => DEVICE_RISK_PARTS.find((name) => typeof c.api?.parts?.[name] === 'string');
    const credential = (credentials as Credential[]).find(
      (c) =>
        c?.category === 'DATA' &&
        Array.isArray(c.allowedChannels) &&
        c.allowedChannels.includes('API') &&
        partOf(c) !== undefined,
    );
    const part = credential && partOf(credential);
    if (!credential?.api || !part) {
      throw new DeviceRiskError(ERR_NO_DEVICE_RISK_CREDENTIAL, apiMessages.noDeviceRiskCredential, {
        operation: 'account',
      });
    }
    const { token } = credential.api;
    if (typeof token !== 'string' || !token)
      throw new DeviceRiskError(ERR_INVALID_RESPONSE, apiMessages.noApiToken, {
        operation: 'account',
      });
    const uploadUrl = checkAddress(credential.api.parts![part], PART_SHAPES[part], `upload (api.parts.${part})`);
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
      part,
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
    // A part name from stored data that is none of ours matches no address.
    const shape = Object.hasOwn(PART_SHAPES, transaction.part) ? PART_SHAPES[transaction.part] : /$^/;
    checkAddress(transaction.uploadUrl, shape, 'upload');
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
