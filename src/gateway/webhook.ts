/**
 * Decisions told to the shop as Standard Webhooks (https://www.standardwebhooks.com/):
 * `webhook-id` (the same on every retry), `webhook-timestamp` (seconds, this attempt) and
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">` keyed with the bytes of
 * the `whsec_` secret (docs/gateway.md#the-decision-webhook).
 */
import { createHash } from 'node:crypto';
import {
  NotCheckedError,
  ResultUndeliveredError,
  type DeviceRiskDetails,
  type WorkflowStatus,
} from '../server/index.js';

const DECISION_EVENT = 'device_risk.decision';

/** The body's `data`: which order, which execution, and its decision. */
interface DecisionData {
  customerInternalReference: string | null;
  userReference: string | null;
  workflowExecutionId: string;
  accountId: string;
  status: WorkflowStatus;
  decision: { type: string; label?: string; score?: number } | null;
}

export interface DecisionEvent {
  type: typeof DECISION_EVENT;
  /** When the gateway learned the decision (ISO 8601). */
  timestamp: string;
  data: DecisionData;
}

const FAILURE_EVENT = 'device_risk.failed';

/**
 * An accepted checkout that will never be checked, told once instead of a decision: which
 * order, and why (`code`, stable: the kit's NotCheckedError reason, docs/gateway.md#the-failure-webhook).
 */
export interface FailureEvent {
  type: typeof FAILURE_EVENT;
  /** When the gateway gave the checkout up (ISO 8601). */
  timestamp: string;
  data: {
    customerInternalReference: string;
    userReference: string | null;
    /** Why: `invalid_account_request`, `request_rejected`, `blackbox_stale` (not checked in time), `shutting_down`... */
    code: string;
    /** The last try's failure, when it was given up in time (`token_rejected`, `network_error`...). */
    lastError: string | null;
  };
}

/** What the outbox sends: a decision, or the failure that stands for one. */
export type WebhookEvent = DecisionEvent | FailureEvent;

/** The event of a checkout never checked (the kit's NotCheckedError). */
export function failureEvent(
  failure: { customerInternalReference: string; userReference?: string; reason: string; lastError?: string },
  at: number,
): FailureEvent {
  return {
    type: FAILURE_EVENT,
    timestamp: new Date(at).toISOString(),
    data: {
      customerInternalReference: failure.customerInternalReference,
      userReference: failure.userReference ?? null,
      code: failure.reason,
      lastError: failure.lastError ?? null,
    },
  };
}

/**
 * The failure an error of the kit tells the shop, if any: a checkout that will never be checked
 * (NotCheckedError), or a decision given up past the callbacks' retryForMs
 * (ResultUndeliveredError, for an order a check remembered: `result_undelivered`).
 */
export function failureOf(error: unknown, at: number): FailureEvent | undefined {
  if (error instanceof NotCheckedError) return failureEvent(error, at);
  if (!(error instanceof ResultUndeliveredError) || error.customerInternalReference === undefined) return undefined;
  const { customerInternalReference, userReference, code } = error;
  return failureEvent({ customerInternalReference, reason: code, ...(userReference ? { userReference } : {}) }, at);
}

/**
 * The webhook-id of an event, the same on every retry and instance: a decision's is its
 * execution's; a failure's is its order's (one order, one check: gateway.ts), so that each
 * is told once.
 */
export const eventWebhookId = (event: WebhookEvent): string =>
  event.type === FAILURE_EVENT
    ? `msg_failed_${createHash('sha256').update(event.data.customerInternalReference).digest('hex').slice(0, 32)}`
    : webhookId(event.data.workflowExecutionId);

/** The webhook-id of an execution's decision: the same on every retry and instance, so the shop can drop duplicates. */
export const webhookId = (workflowExecutionId: string): string => `msg_${workflowExecutionId.toLowerCase()}`;

/** The event of a decision, from the details (PROCESSED) or the status alone (an expired execution). */
export function decisionEvent(
  ids: { accountId: string; workflowExecutionId: string; status: WorkflowStatus },
  order: { customerInternalReference?: string | undefined; userReference?: string | undefined },
  details: DeviceRiskDetails | undefined,
  at: number,
): DecisionEvent {
  const decision = details?.decision;
  return {
    type: DECISION_EVENT,
    timestamp: new Date(at).toISOString(),
    data: {
      customerInternalReference: order.customerInternalReference ?? details?.customerInternalReference ?? null,
      // Never the details' own: without the shop's, it is the kit's reference tag (check.ts).
      userReference: order.userReference ?? null,
      workflowExecutionId: ids.workflowExecutionId,
      accountId: ids.accountId,
      status: ids.status,
      decision: decision
        ? {
            type: decision.type,
            ...(decision.label ? { label: decision.label } : {}),
            ...(decision.score === undefined ? {} : { score: decision.score }),
          }
        : null,
    },
  };
}

/** The three Standard Webhooks headers of one attempt. */
export async function signWebhook(
  key: Uint8Array<ArrayBuffer>,
  id: string,
  timestampSeconds: number,
  body: string,
): Promise<Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string>> {
  const hmac = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const mac = await crypto.subtle.sign('HMAC', hmac, new TextEncoder().encode(`${id}.${timestampSeconds}.${body}`));
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': `v1,${btoa(String.fromCharCode(...new Uint8Array(mac)))}`,
  };
}
