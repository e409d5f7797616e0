/**
 * Whose execution a callback is for. Any tenant of the service may set the shop's address as
 * its callbackUrl, so a callback from the service's own addresses proves nothing
 * (docs/answer.md#whose-callback). What does: a read at the retrieval service with the shop's
 * own access token. It answers for the shop's tenant only; another tenant's execution, or a
 * made-up one, answers 404, which is final.
 */
import type { DeviceRiskClient } from '../api/device-risk-client.js';
import type { DeviceRiskDetails, WorkflowStatus } from '../api/result.js';
import { DeviceRiskError, ERR_RESULT_NOT_READY, isDeviceRiskError } from '../errors.js';
import { callbackMessages } from '../messages.js';

type Ids = { accountId: string; workflowExecutionId: string };

/**
 * The details of a PROCESSED execution (one read, which also places it; details that do not say
 * PROCESSED yet reject `result_not_ready`); for an expiry, one status read unless the callback
 * carries the kit's own reference (`tagged`). Rejects as the read does: `isUnknownExecution`
 * tells a final 404.
 */
export async function placeExecution(
  client: Pick<DeviceRiskClient, 'details' | 'status'>,
  ids: Ids,
  status: WorkflowStatus,
  tagged: boolean | undefined,
): Promise<DeviceRiskDetails | undefined> {
  if (status === 'PROCESSED') {
    const details = await client.details(ids);
    // A PROCESSED callback whose details are not yet (read before the service wrote them): its
    // decision is not there, and is never told from them; the callback is tried again later.
    if (details.status !== 'PROCESSED')
      throw new DeviceRiskError(
        ERR_RESULT_NOT_READY,
        callbackMessages.detailsBehind(ids.workflowExecutionId, details.status),
        { operation: 'details', retryAfter: 1 },
      );
    return details;
  }
  if (!tagged) await client.status(ids);
  return undefined;
}

/** The service does not know the execution for this tenant: retrying cannot change that. */
export const isUnknownExecution = (error: unknown): boolean =>
  isDeviceRiskError(error) &&
  (error.operation === 'details' || error.operation === 'status') &&
  (error.status === 404 || error.status === 410);
