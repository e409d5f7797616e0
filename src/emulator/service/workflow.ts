/**
 * The emulated workflow of one transaction: the Device Risk upload, finalize (which fixes the
 * decision and sends the status callback), and the callback body. Not under any rate limit
 * (docs/vendor-contract.md#the-service limits account requests and retrievals only).
 */
import { BLACKBOX_PATTERN, MAX_BLACKBOX_LENGTH } from '../../shared/constants.js';
import { decodeBlackbox } from '../scripts/routes.js';
import { bearer, checkContentType, checkUserAgent, json, problem, readJson } from './http.js';
import type { EmulatedDecision, ServiceState, Transaction, WorkflowStatus } from './state.js';

/** A decision as the service gives it: its risk score always there. */
export type Decision = EmulatedDecision & { score: number };

/**
 * The overall risk score a decision of `type` gets when none is given: low for PASSED, in the
 * middle for WARNING, high for REJECTED, and -1 for NOT_EXECUTED, the one type the service
 * scores -1 (docs/vendor-contract.md#the-answer).
 */
function defaultScore(type: string): number {
  return { PASSED: 10, WARNING: 50, REJECTED: 90, NOT_EXECUTED: -1 }[type] ?? 50;
}

/**
 * The decision with its score: the one given, or the type's default. A score that is not an
 * integer from -1 to 100, or that is -1 for any type but NOT_EXECUTED (or not -1 for it), is
 * one the service never gives: refused.
 */
export function scored(decision: EmulatedDecision): Decision {
  const score = decision.score ?? defaultScore(decision.type);
  if (!Number.isInteger(score) || score < -1 || score > 100)
    throw new RangeError(`a decision's risk score is an integer from -1 to 100 (got ${score})`);
  if ((score === -1) !== (decision.type === 'NOT_EXECUTED'))
    throw new RangeError(`a risk score of -1 is NOT_EXECUTED's, and only its (got ${decision.type} ${score})`);
  return { ...decision, score };
}

/** The blackbox alphabet (base64, plus "@" in some old ones): the kit's rule. */
const BLACKBOX_SHAPE = BLACKBOX_PATTERN;

export function createWorkflow(state: ServiceState) {
  const { options, transactions, forcedDecisions, statusOf } = state;

  // ---- transaction calls ----------------------------------------------------------------
  function transactionFor(
    request: Request,
    accountId: string,
    executionId: string,
  ): { tx: Transaction } | { error: Response } {
    const token = bearer(request);
    if (!token) return { error: problem(401, 'Unauthorized', 'The transaction token is required') };
    const tx = transactions.get(executionId);
    if (!tx || tx.accountId !== accountId)
      return { error: problem(404, 'Not Found', 'Unknown account or workflow execution') };
    if (token !== tx.token)
      return { error: problem(403, 'Forbidden', 'The token does not belong to this transaction') };
    if (options.now() >= tx.tokenExpiresAt)
      return { error: problem(401, 'Unauthorized', 'The transaction token has expired') };
    return { tx };
  }

  async function upload(request: Request, match: RegExpExecArray): Promise<Response> {
    if (request.method !== 'POST') return problem(405, 'Method Not Allowed', 'Use POST', { allow: 'POST' });
    const agent = checkUserAgent(request);
    if (agent) return agent;
    const found = transactionFor(request, match[1]!, match[2]!);
    if ('error' in found) return found.error;
    const { tx } = found;
    // Only the credential's own part: DEVICE_RISK or PREPARED_DATA, as its create answer named it.
    if (match[3] !== tx.credentialId || match[4] !== (tx.part ?? 'device_risk').toUpperCase())
      return problem(404, 'Not Found', 'Unknown credential or part');
    const status = statusOf(tx);
    if (status !== 'INITIATED' && status !== 'ACQUIRED')
      return problem(409, 'Conflict', `The workflow execution is ${status}`);
    const read = await readJson(request, 32 * 1024);
    if ('error' in read) return read.error;
    const sessionId = (read.body as { sessionId?: unknown } | null)?.sessionId;
    if (typeof sessionId !== 'string' || sessionId === '')
      return problem(400, 'Bad Request', 'sessionId is required and must be a non-empty string');
    if (sessionId.length > MAX_BLACKBOX_LENGTH)
      return problem(400, 'Bad Request', `sessionId is longer than ${MAX_BLACKBOX_LENGTH} characters`);
    if (!BLACKBOX_SHAPE.test(sessionId))
      return problem(400, 'Bad Request', 'sessionId is not a blackbox (base64 characters expected)');
    tx.blackboxes.push(sessionId);
    const first = !tx.acquired;
    tx.acquired = true;
    tx.lastActionAt = options.now();
    // An intermediate status, when a test asks for one: the service mentions them, the kit ignores them.
    if (first && tx.callbackUrl && options.intermediateCallbacks?.())
      void options.sendCallback(tx.callbackUrl, callbackBody(tx, 'ACQUIRED')).catch(() => {});
    return json({
      timestamp: new Date(tx.lastActionAt).toISOString(),
      account: { id: tx.accountId },
      workflowExecution: { id: tx.workflowExecutionId },
    });
  }

  async function finalize(request: Request, match: RegExpExecArray): Promise<Response> {
    const agent = checkUserAgent(request) ?? checkContentType(request);
    if (agent) return agent;
    const found = transactionFor(request, match[1]!, match[2]!);
    if ('error' in found) return found.error;
    const { tx } = found;
    const status = statusOf(tx);
    if (status !== 'ACQUIRED') {
      return problem(
        409,
        'Conflict',
        status === 'INITIATED' ? 'Nothing was uploaded yet' : `The workflow execution is ${status}`,
      );
    }
    tx.processed = true;
    tx.lastActionAt = tx.processedAt = options.now();
    tx.decision = decisionOf(tx);
    const answer = {
      timestamp: new Date(tx.lastActionAt).toISOString(),
      account: { id: tx.accountId },
      workflowExecution: { id: tx.workflowExecutionId },
    };
    if (tx.callbackUrl) void options.sendCallback(tx.callbackUrl, callbackBody(tx, 'PROCESSED')).catch(() => {});
    return json(answer);
  }

  /** The documented callback body (docs/vendor-contract.md#the-answer), its hrefs on the retrieval host. */
  function callbackBody(tx: Transaction, status: WorkflowStatus) {
    const account = `${options.retrievalOrigin()}/api/v1/accounts/${tx.accountId}`;
    return {
      callbackSentAt: new Date(options.now()).toISOString(),
      ...(tx.userReference ? { userReference: tx.userReference } : {}),
      workflowExecution: {
        id: tx.workflowExecutionId,
        href: `${account}/workflow-executions/${tx.workflowExecutionId}`,
        definitionKey: tx.workflowKey,
        status,
      },
      account: { id: tx.accountId, href: account },
    };
  }

  /**
   * What a real service would make of the blackbox: every source, PASSED; one collection path
   * missing, WARNING with an alert naming it; none it can read, NOT_EXECUTED (score -1). A
   * decision a test forced wins, scored by its type when it names no score.
   */
  function decisionOf(tx: Transaction): Decision {
    const forced = forcedDecisions.findIndex(([match]) =>
      typeof match === 'function'
        ? match(tx)
        : match === 'next' || match === tx.workflowExecutionId || match === tx.customerInternalReference,
    );
    if (forced >= 0) {
      const [, decision, once] = forcedDecisions[forced]!;
      if (once) forcedDecisions.splice(forced, 1);
      return scored(decision);
    }
    // Stryker disable next-line StringLiteral,ArrayDeclaration: finalize comes after an upload, and any source list without fp_ or tp reads the same
    const sources = decodeBlackbox(tx.blackboxes.at(-1) ?? '')?.sources ?? [];
    const firstParty = sources.some((s) => s.startsWith('fp_'));
    const thirdParty = sources.some((s) => s.startsWith('tp'));
    if (firstParty && thirdParty) return { type: 'PASSED', label: 'OK', alerts: [], score: 8 };
    if (firstParty)
      return {
        type: 'WARNING',
        label: 'PARTIAL_COLLECTION',
        alerts: ['Third-party collection missing (blocked)'],
        score: 45,
      };
    if (thirdParty)
      return {
        type: 'WARNING',
        label: 'PARTIAL_COLLECTION',
        alerts: ['First-party collection missing (proxy)'],
        score: 40,
      };
    return { type: 'NOT_EXECUTED', label: 'TECHNICAL_ERROR', alerts: ['Blackbox could not be read'], score: -1 };
  }

  return { upload, finalize, callbackBody };
}
