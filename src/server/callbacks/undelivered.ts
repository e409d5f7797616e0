/**
 * A callback given up past `retryForMs` (delivery.ts): its details read or `onResult` kept
 * failing for that long. Told to onError once, naming the execution and, when a check of this
 * tenant remembered it (told.ts), the order, so that whoever tells the shop can say so: the
 * gateway sends `device_risk.failed` with the code `result_undelivered` (docs/gateway.md#the-failure-webhook).
 */
import { DeviceRiskError, ERR_RESULT_UNDELIVERED } from '../errors.js';
import type { CheckoutOrder } from './told.js';

export class ResultUndeliveredError extends DeviceRiskError {
  readonly workflowExecutionId: string;
  /** The callback's workflow status: PROCESSED, or an expiry. */
  readonly workflowStatus: string;
  /** The order's references, when a check of this tenant remembered the execution. */
  readonly customerInternalReference?: string;
  readonly userReference?: string;

  constructor(message: string, workflowExecutionId: string, workflowStatus: string, order?: CheckoutOrder) {
    super(ERR_RESULT_UNDELIVERED, message, { operation: 'callback' });
    this.workflowExecutionId = workflowExecutionId;
    this.workflowStatus = workflowStatus;
    if (order?.customerInternalReference !== undefined)
      this.customerInternalReference = order.customerInternalReference;
    if (order?.userReference !== undefined) this.userReference = order.userReference;
  }
}
