/**
 * The Device Risk answer: the workflow details the retrieval API returns, reduced to
 * what an integrator decides on (docs/vendor-contract.md#the-answer), and the polling schedule for
 * integrators without callbacks. Labels, types and alerts are open sets of strings:
 * a value the service adds tomorrow passes through and never throws.
 */
import { DeviceRiskError, ERR_INVALID_RESPONSE } from '../errors.js';
import { apiMessages } from '../messages.js';

/** Open string unions: the documented values, and any other string. */
export type WorkflowStatus =
  'INITIATED' | 'ACQUIRED' | 'PROCESSED' | 'SESSION_EXPIRED' | 'TOKEN_EXPIRED' | (string & {});
/** The decision types the service documents (docs/vendor-contract.md#the-answer): the `decisions` metric counts these by name. */
export const DECISION_TYPES = ['PASSED', 'REJECTED', 'WARNING', 'NOT_EXECUTED'] as const;
export type DecisionType = (typeof DECISION_TYPES)[number] | (string & {});

/** The statuses after which nothing changes any more. */
export const FINAL_STATUSES: readonly string[] = ['PROCESSED', 'SESSION_EXPIRED', 'TOKEN_EXPIRED'];

export interface DeviceRiskDetails {
  accountId: string;
  workflowExecutionId: string;
  status: WorkflowStatus;
  /** The account request's own, as the service holds it (the order): `workflow.customerInternalReference`. */
  customerInternalReference?: string;
  /** The account request's `userReference`, if it had one (`workflow.userReference`). */
  userReference?: string;
  /** The decision on the whole workflow. */
  decision: { type: DecisionType; label: string; score?: number };
  /** The Device Risk capability's answer: undefined when the workflow has none. */
  deviceRisk:
    | {
        decision: { type: DecisionType; label: string };
        /** What the vendor flagged, as free text ("Device Risk Global", "IP Mismatch", …). */
        alerts: string[];
        /** What the vendor saw of the device: deviceModel, browser, trueIP, ipLocationCountry, … */
        device: Record<string, unknown>;
      }
    | undefined;
  /** The whole answer, for the fields not modelled here. */
  raw: unknown;
}

/**
 * The documented polling schedule without callbacks: at most 10 reads, at these
 * seconds after the upload (docs/vendor-contract.md#the-answer).
 */
export const RESULT_SCHEDULE_SECONDS: readonly number[] = [40, 60, 100, 160, 240, 340, 460, 600, 760, 940];

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the service's JSON, read field by field with typeof checks
const isObject = (value: unknown): value is Record<string, any> =>
  !!value && typeof value === 'object' && !Array.isArray(value);
const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/** Reads a workflow details answer; throws `invalid_response` when it is not one. */
export function parseDetails(
  body: unknown,
  ids: { accountId: string; workflowExecutionId: string },
): DeviceRiskDetails {
  if (!isObject(body) || !isObject(body.workflow)) {
    throw new DeviceRiskError(ERR_INVALID_RESPONSE, apiMessages.detailsNoWorkflow, {
      operation: 'details',
    });
  }
  const status: unknown = body.workflow.status;
  if (typeof status !== 'string' || !status)
    throw new DeviceRiskError(ERR_INVALID_RESPONSE, apiMessages.detailsNoStatus, {
      operation: 'details',
    });
  const decision = isObject(body.decision) ? body.decision : {};
  const score = isObject(decision.risk) && typeof decision.risk.score === 'number' ? decision.risk.score : undefined;
  const capability =
    isObject(body.capabilities) && Array.isArray(body.capabilities.deviceRiskVerification)
      ? body.capabilities.deviceRiskVerification.find(isObject)
      : undefined;
  const { customerInternalReference, userReference } = body.workflow;
  return {
    accountId: ids.accountId,
    workflowExecutionId: ids.workflowExecutionId,
    status,
    ...(typeof customerInternalReference === 'string' && customerInternalReference
      ? { customerInternalReference }
      : {}),
    ...(typeof userReference === 'string' && userReference ? { userReference } : {}),
    decision: {
      type: text(decision.type) || 'NOT_EXECUTED',
      label: text(isObject(decision.details) ? decision.details.label : undefined),
      ...(score === undefined ? {} : { score }),
    },
    deviceRisk: capability && {
      decision: {
        type: text(isObject(capability.decision) ? capability.decision.type : undefined) || 'NOT_EXECUTED',
        label: text(
          isObject(capability.decision) && isObject(capability.decision.details)
            ? capability.decision.details.label
            : undefined,
        ),
      },
      alerts:
        isObject(capability.data) && Array.isArray(capability.data.deviceAlerts)
          ? capability.data.deviceAlerts.filter((a: unknown): a is string => typeof a === 'string')
          : [],
      device: isObject(capability.data)
        ? Object.fromEntries(Object.entries(capability.data).filter(([key]) => key !== 'deviceAlerts'))
        : {},
    },
    raw: body,
  };
}
