/**
 * Finalize: `PUT` (or POST) to the credential's `api.workflowExecution` with the transaction
 * token, which starts the check. Not under the service's limits
 * (docs/vendor-contract.md#the-service limits account requests and retrievals only).
 */
import { DeviceRiskError, ERR_RESULT_NOT_READY } from '../errors.js';
import { apiMessages } from '../messages.js';
import type { Call } from './call.js';
import type { DeviceRiskTransaction, Transactions } from './transaction.js';

export function createFinalize(
  call: Call,
  transactions: Transactions,
  method: 'PUT' | 'POST',
  status: (transaction: DeviceRiskTransaction) => Promise<string>,
) {
  return async function finalize(transaction: DeviceRiskTransaction): Promise<void> {
    transactions.usable(transaction, 'finalize');
    try {
      await call('finalize', transaction.finalizeUrl, { method, bearer: () => transaction.token }, true);
    } catch (error) {
      if ((error as DeviceRiskError).status !== 409) throw error;
      // A retried finalize whose first attempt went through answers 409: check before failing.
      // A read that fails leaves it open: its failure stands (trouble that passes), not the 409.
      const now = await status(transaction);
      if (now === 'PROCESSED') return;
      // ACQUIRED is both "uploaded" and "finalized, being checked" (docs/vendor-contract.md#the-answer):
      // neither a refusal for good (a failure told beside the decision to come would be untrue)
      // nor done (a finalize that never took would leave the order without an outcome). Trouble
      // that passes: the check comes back, and finalize and the status read with it.
      if (now === 'ACQUIRED')
        throw new DeviceRiskError(
          ERR_RESULT_NOT_READY,
          apiMessages.finalizeConflictAcquired(transaction.workflowExecutionId),
          { operation: 'finalize', retryAfter: 1, cause: error },
        );
      throw error;
    }
  };
}
