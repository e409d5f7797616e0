/**
 * The emulated identity-verification service: the OAuth token endpoint, account create and
 * update, the Device Risk upload and finalize, and the retrieval reads, with the spec's limits,
 * lifetimes and states. Each role answers on a host of its own, as the service's do
 * (docs/vendor-contract.md#hosts-by-role): `token` (auth), `account` (create and update only),
 * `api` (the upload and finalize addresses a create answer gives, nothing else) and `retrieval`
 * (status and details). One module per operation (token, accounts, workflow, retrieval) on one
 * state (state.ts).
 */
import { problem } from './http.js';
import { createAccounts } from './accounts.js';
import { createRetrieval } from './retrieval.js';
import {
  ACCOUNT_PATH,
  ACCOUNTS_PATH,
  createState,
  EXECUTION_PATH,
  PART_PATH,
  STATUS_PATH,
  type DecisionMatch,
  type EmulatedDecision,
  type ServiceOptions,
} from './state.js';
import { createTokenEndpoint } from './token.js';
import { createWorkflow, scored } from './workflow.js';

export type {
  DecisionMatch,
  EmulatedDecision,
  PartName,
  ServiceOptions,
  Transaction,
  WorkflowDefinition,
  WorkflowStatus,
} from './state.js';
export { parseTokenLifetime } from './accounts.js';

export function createService(options: ServiceOptions) {
  const state = createState(options);
  const token = createTokenEndpoint(state);
  const createOrUpdate = createAccounts(state);
  const workflow = createWorkflow(state);
  const reads = createRetrieval(state);

  /** The route name of a request to the account host, for counting and fault injection. */
  function accountRoute(request: Request): 'accountCreate' | 'accountUpdate' | 'unknown' {
    const { pathname } = new URL(request.url);
    if (pathname === ACCOUNTS_PATH) return 'accountCreate';
    if (ACCOUNT_PATH.test(pathname)) return 'accountUpdate';
    return 'unknown';
  }

  /** The account host: account create (`POST /api/v1/accounts`) and update (`PUT …/{id}`), nothing else. */
  async function account(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname === ACCOUNTS_PATH) {
      return request.method === 'POST'
        ? createOrUpdate(request)
        : problem(405, 'Method Not Allowed', 'Use POST', { allow: 'POST' });
    }
    const existing = ACCOUNT_PATH.exec(pathname);
    if (existing) {
      return request.method === 'PUT'
        ? createOrUpdate(request, existing[1])
        : problem(405, 'Method Not Allowed', 'Use PUT', { allow: 'PUT' });
    }
    return problem(404, 'Not Found', 'Unknown path');
  }

  /** The route name of a request to the API host, for counting and fault injection. */
  function apiRoute(request: Request): 'upload' | 'finalize' | 'unknown' {
    const { pathname } = new URL(request.url);
    if (PART_PATH.test(pathname)) return 'upload';
    if (EXECUTION_PATH.test(pathname)) return 'finalize';
    return 'unknown';
  }

  /** The API host: the upload and finalize addresses of a create answer, nothing else (status is on retrieval). */
  async function api(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    const part = PART_PATH.exec(pathname);
    if (part) return workflow.upload(request, part);
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
    account,
    accountRoute,
    api,
    apiRoute,
    retrieval: reads.retrieval,
    retrievalRoute: (request: Request): 'retrievalStatus' | 'details' =>
      STATUS_PATH.test(new URL(request.url).pathname) ? 'retrievalStatus' : 'details',
    /** Forces the decision of the transactions `match` names ('next': the next one processed). */
    decide: (match: DecisionMatch, decision: EmulatedDecision, once = match === 'next') =>
      // Scored now: a score the service never gives is refused where the test asked for it.
      void state.forcedDecisions.unshift([match, scored(decision), once]),
    callbackBody: workflow.callbackBody,
    statusOf: state.statusOf,
    transactions: () => Array.from(state.transactions.values()),
  };
}
