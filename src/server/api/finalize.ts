/**
 * Finalize: `PUT` (or POST) to the credential's `api.workflowExecution` with the transaction
 * token, which starts the check. Not under the service's limits
 * (docs/vendor-contract.md#the-service limits account requests and retrievals only).
 */
import type { DeviceRiskError } from '../errors.js';
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
      if ((await status(transaction)) === 'PROCESSED') return;
      throw error;
    }
  };
}
