/**
 * The emulated identity-verification service: the OAuth token endpoint, account
 * create and update, the Device Risk upload, finalize and status, with the
 * spec's limits, lifetimes and states. Addresses in answers are built from the
 * request's own origin (or the X-Forwarded-Host and -Proto a proxy in front sets), so the
 * handlers work wherever they are mounted. One module per operation (token, accounts,
 * workflow, retrieval) on one state (state.ts).
 */
import { problem } from './http.js';
import { createAccounts } from './accounts.js';
import { createRetrieval } from './retrieval.js';
import {
  ACCOUNT_PATH,
  createState,
  EXECUTION_PATH,
  PART_PATH,
  STATUS_PATH,
  type DecisionMatch,
  type EmulatedDecision,
  type ServiceOptions,
} from './state.js';
import { createTokenEndpoint } from './token.js';
import { createWorkflow } from './workflow.js';

export type { DecisionMatch, EmulatedDecision, ServiceOptions, Transaction, WorkflowStatus } from './state.js';
export { slidingWindow } from './state.js';
export { parseTokenLifetime } from './accounts.js';
export { BLACKBOX_SHAPE, MAX_BLACKBOX_LENGTH } from './workflow.js';

export function createService(options: ServiceOptions) {
  const state = createState(options);
  const token = createTokenEndpoint(state);
  const createOrUpdate = createAccounts(state);
  const workflow = createWorkflow(state);
  const reads = createRetrieval(state);

  /** The route name of an API request, for counting and fault injection. */
  function apiRoute(request: Request): string {
    const { pathname } = new URL(request.url);
    if (pathname === '/api/v1/accounts') return 'accountCreate';
    if (ACCOUNT_PATH.test(pathname)) return 'accountUpdate';
    if (PART_PATH.test(pathname)) return 'upload';
    if (STATUS_PATH.test(pathname)) return 'status';
    if (EXECUTION_PATH.test(pathname)) return 'finalize';
    return 'unknown';
  }

  async function api(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname === '/api/v1/accounts') {
      return request.method === 'POST'
        ? createOrUpdate(request)
        : problem(405, 'Method Not Allowed', 'Use POST', { allow: 'POST' });
    }
    const account = ACCOUNT_PATH.exec(pathname);
    if (account) {
      return request.method === 'PUT'
        ? createOrUpdate(request, account[1])
        : problem(405, 'Method Not Allowed', 'Use PUT', { allow: 'PUT' });
    }
    const part = PART_PATH.exec(pathname);
    if (part) return workflow.upload(request, part);
    const statusMatch = STATUS_PATH.exec(pathname);
    if (statusMatch) {
      // A status read on the API host counts against the retrieval limit too.
      return request.method === 'GET'
        ? reads.status(request, statusMatch)
        : problem(405, 'Method Not Allowed', 'Use GET', { allow: 'GET' });
    }
    const execution = EXECUTION_PATH.exec(pathname);
    if (execution) {
      return request.method === 'PUT'
        ? workflow.finalize(request, execution)
        : problem(405, 'Method Not Allowed', 'Use PUT', { allow: 'PUT' });
    }
    return problem(404, 'Not Found', 'Unknown path');
  }

  return {
    token,
    api,
    apiRoute,
    retrieval: reads.retrieval,
    retrievalRoute: (request: Request) =>
      STATUS_PATH.test(new URL(request.url).pathname) ? 'retrievalStatus' : 'details',
    /** Forces the decision of the transactions `match` names ('next': the next one processed). */
    decide: (match: DecisionMatch, decision: EmulatedDecision, once = match === 'next') =>
      void state.forcedDecisions.unshift([match, decision, once]),
    callbackBody: workflow.callbackBody,
    statusOf: state.statusOf,
    transactions: () => Array.from(state.transactions.values()),
  };
}
