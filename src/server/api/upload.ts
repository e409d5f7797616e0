/**
 * The blackbox upload: `POST { sessionId }` to exactly the credential's `api.parts.device_risk`
 * with the transaction token. Not under the service's limits (docs/vendor-contract.md#the-service
 * limits account requests and retrievals only).
 */
import { BLACKBOX_PATTERN, MAX_BLACKBOX_LENGTH } from '../../shared/constants.js';
import { DeviceRiskError, ERR_INVALID_BLACKBOX } from '../errors.js';
import { apiMessages } from '../messages.js';
import type { Call } from './call.js';
import type { DeviceRiskTransaction, Transactions } from './transaction.js';

/** The blackbox alphabet (base64, "@" in some old ones) and the longest one accepted: the emulator's too. */
export { BLACKBOX_PATTERN, MAX_BLACKBOX_LENGTH };

/** Checks a blackbox before it is sent anywhere. */
export function checkBlackbox(blackbox: unknown): string {
  // Stryker disable next-line StringLiteral: the alphabet check refuses '' with the same code; only the words would differ
  if (typeof blackbox !== 'string' || blackbox === '')
    throw new DeviceRiskError(ERR_INVALID_BLACKBOX, apiMessages.blackboxEmpty);
  if (blackbox.length > MAX_BLACKBOX_LENGTH)
    throw new DeviceRiskError(ERR_INVALID_BLACKBOX, apiMessages.blackboxTooLong(MAX_BLACKBOX_LENGTH));
  if (!BLACKBOX_PATTERN.test(blackbox)) throw new DeviceRiskError(ERR_INVALID_BLACKBOX, apiMessages.blackboxAlphabet);
  return blackbox;
}

export function createUpload(call: Call, transactions: Transactions) {
  return async function uploadBlackbox(transaction: DeviceRiskTransaction, blackbox: string): Promise<void> {
    transactions.usable(transaction, 'upload');
    const sessionId = checkBlackbox(blackbox);
    // Uploading the same blackbox again is harmless, so failures are retried.
    await call(
      'upload',
      transaction.uploadUrl,
      { method: 'POST', body: JSON.stringify({ sessionId }), bearer: () => transaction.token },
      true,
    );
  };
}
