/**
 * The emulated workflow of one transaction: the Device Risk upload, finalize (which fixes the
 * decision and sends the status callback), and the callback body. Not under any rate limit
 * (docs/vendor-contract.md#the-service limits account requests and retrievals only).
 */
import { BLACKBOX_PATTERN, MAX_BLACKBOX_LENGTH } from '../../shared/constants.js';
import { decodeBlackbox } from '../scripts/routes.js';
import { bearer, checkUserAgent, json, problem, readJson } from './http.js';
import type { EmulatedDecision, ServiceState, Transaction, WorkflowStatus } from './state.js';

/** The blackbox alphabet (base64, plus "@" in some old ones) and the longest one: the kit's rules. */
export const BLACKBOX_SHAPE = BLACKBOX_PATTERN;
export { MAX_BLACKBOX_LENGTH };

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
    if (match[3] !== tx.credentialId || match[4] !== 'DEVICE_RISK')
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
    tx.acquired = true;
    tx.lastActionAt = options.now();
    return json({
      timestamp: new Date(tx.lastActionAt).toISOString(),
      account: { id: tx.accountId },
      workflowExecution: { id: tx.workflowExecutionId },
    });
  }

  async function finalize(request: Request, match: RegExpExecArray): Promise<Response> {
    const agent = checkUserAgent(request);
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
   * missing, WARNING with an alert naming it; none it can read, NOT_EXECUTED. A decision a test
   * forced wins.
   */
  function decisionOf(tx: Transaction): EmulatedDecision {
    const forced = forcedDecisions.findIndex(([match]) =>
      typeof match === 'function'
        ? match(tx)
        : match === 'next' || match === tx.workflowExecutionId || match === tx.customerInternalReference,
    );
    if (forced >= 0) {
      const [, decision, once] = forcedDecisions[forced]!;
      if (once) forcedDecisions.splice(forced, 1);
      return decision;
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
    return { type: 'NOT_EXECUTED', label: 'TECHNICAL_ERROR', alerts: ['Blackbox could not be read'] };
  }

  return { upload, finalize, callbackBody };
}
