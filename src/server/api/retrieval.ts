/**
 * The retrieval API: a workflow execution's status and details, read with the access token
 * under the service's retrieval limit (15 a second per tenant: docs/vendor-contract.md#the-service;
 * rate-limit.ts), and the documented polling schedule.
 */
import {
  DeviceRiskError,
  ERR_ABORTED,
  ERR_INVALID_CONFIGURATION,
  ERR_INVALID_RESPONSE,
  ERR_RESULT_NOT_READY,
  ERR_WORKFLOW_EXPIRED,
} from '../errors.js';
import { apiMessages } from '../messages.js';
import type { UpstreamOperation } from '../status/names.js';
import type { Sleep } from '../time/clock.js';
import type { Call } from './call.js';
import type { RateLimiter } from './rate-limit.js';
import { parseDetails, RESULT_SCHEDULE_SECONDS, type DeviceRiskDetails } from './result.js';
import type { TokenSource } from './token-source.js';
import { UUID, type DeviceRiskTransaction } from './transaction.js';

export interface RetrievalContext {
  call: Call;
  tokenSource: TokenSource;
  retrievalBase: URL;
  limiter: RateLimiter;
  /** How the polls wait. */
  sleep: Sleep;
}

/**
 * The calls the retrieval limit counts: a quota of the tenant's apart from the account
 * requests' (docs/vendor-contract.md), which its own limiter backs every instance off for.
 */
export const RETRIEVAL_OPERATIONS: readonly string[] = ['status', 'details'] satisfies UpstreamOperation[];

export function createRetrieval(context: RetrievalContext) {
  const { call, tokenSource, retrievalBase, limiter: retrievalLimiter, sleep: sleepFor } = context;
  async function status(
    transaction: Pick<DeviceRiskTransaction, 'accountId' | 'workflowExecutionId'>,
  ): Promise<string> {
    const ids = idsOf(transaction, 'status');
    const url = new URL(
      `/api/v1/accounts/${ids.accountId}/workflow-executions/${ids.workflowExecutionId}/status`,
      retrievalBase,
    ).href;
    const response = await call(
      'status',
      url,
      { method: 'GET', bearer: () => tokenSource.getToken(), accessToken: true, limiter: retrievalLimiter },
      true,
    );
    const body = (await response.json().catch(() => undefined)) as
      { workflowExecution?: { status?: unknown } } | undefined;
    const value = body?.workflowExecution?.status;
    if (typeof value !== 'string')
      throw new DeviceRiskError(ERR_INVALID_RESPONSE, apiMessages.statusAnswerNoStatus, {
        operation: 'status',
      });
    return value;
  }

  /** The ids of a transaction, checked: they go into a URL that carries the access token. */
  function idsOf(transaction: Pick<DeviceRiskTransaction, 'accountId' | 'workflowExecutionId'>, operation: string) {
    const { accountId, workflowExecutionId } = transaction ?? {};
    if (![accountId, workflowExecutionId].every((id) => typeof id === 'string' && new RegExp(`^${UUID}$`).test(id))) {
      throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, apiMessages.needsIds(operation), { operation });
    }
    return { accountId, workflowExecutionId };
  }

  async function details(
    transaction: Pick<DeviceRiskTransaction, 'accountId' | 'workflowExecutionId'>,
  ): Promise<DeviceRiskDetails> {
    const ids = idsOf(transaction, 'details');
    const url = new URL(
      `/api/v1/accounts/${ids.accountId}/workflow-executions/${ids.workflowExecutionId}`,
      retrievalBase,
    ).href;
    const response = await call(
      'details',
      url,
      { method: 'GET', bearer: () => tokenSource.getToken(), accessToken: true, limiter: retrievalLimiter },
      true,
    );
    return parseDetails(await response.json().catch(() => undefined), ids);
  }

  async function waitForResult(
    transaction: Pick<DeviceRiskTransaction, 'accountId' | 'workflowExecutionId'>,
    { signal, schedule = RESULT_SCHEDULE_SECONDS }: { signal?: AbortSignal; schedule?: readonly number[] } = {},
  ): Promise<DeviceRiskDetails> {
    const ids = idsOf(transaction, 'waitForResult');
    let last = 'unknown';
    let waited = 0;
    const aborted = (reason: unknown) =>
      new DeviceRiskError(ERR_ABORTED, apiMessages.waitAborted(ids.workflowExecutionId), {
        operation: 'waitForResult',
        cause: reason,
      });
    for (const at of schedule.slice(0, 10)) {
      if (signal?.aborted) throw aborted(signal.reason);
      await sleepFor(Math.max(0, at - waited) * 1000, signal).catch((error: unknown) => {
        throw signal?.aborted ? aborted(signal.reason) : error;
      });
      waited = at;
      if (signal?.aborted) throw aborted(signal.reason);
      last = await status(ids);
      if (last === 'PROCESSED') return details(ids);
      if (last === 'SESSION_EXPIRED' || last === 'TOKEN_EXPIRED') {
        throw new DeviceRiskError(ERR_WORKFLOW_EXPIRED, apiMessages.endedWithoutResult(ids.workflowExecutionId, last), {
          operation: 'waitForResult',
          status: 200,
        });
      }
    }
    throw new DeviceRiskError(
      ERR_RESULT_NOT_READY,
      apiMessages.stillPending(ids.workflowExecutionId, last, schedule.slice(0, 10).length),
      { operation: 'waitForResult' },
    );
  }

  return { status, details, waitForResult };
}
