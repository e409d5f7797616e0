/**
 * What the emulated service holds (access tokens, accounts, transactions, forced decisions),
 * its types, and the checks every operation shares: a transaction's state and the access token.
 */
import { bearer, problem } from './http.js';

export type WorkflowStatus = 'INITIATED' | 'ACQUIRED' | 'PROCESSED' | 'SESSION_EXPIRED' | 'TOKEN_EXPIRED';

export interface ServiceOptions {
  clientId: string;
  clientSecret: string;
  /** Access token lifetime in seconds (spec: 3600). */
  accessTokenLifetimeSeconds: number;
  /** Token requests allowed per second before 429 (spec: 10). 0 disables. */
  tokenRequestsPerSecond: number;
  /** Retrievals (status and details) allowed per second per tenant before 429 (docs/vendor-contract.md#the-service: 15). 0 disables. */
  retrievalRequestsPerSecond: number;
  /** Account create/update requests per second per tenant, and the burst allowed (docs/vendor-contract.md#the-service: 1, with short bursts). 0 disables. */
  accountRequestsPerSecond: number;
  accountBurst: number;
  /** Session timeout in ms, reset by each action (spec: 15 minutes). */
  sessionTimeoutMs: number;
  /**
   * Workflow definition keys, whether they include Device Risk and the name of its credential's
   * part (`device_risk` by default, or `prepared_data`); undefined: every key does, as `device_risk`.
   */
  workflows?: Record<string, WorkflowDefinition>;
  now: () => number;
  /** Sends a status callback: the final one on finalize, an intermediate one on upload when asked. */
  sendCallback: (url: string, body: unknown) => Promise<void>;
  /** Whether an upload sends an intermediate (ACQUIRED) callback before the final one. Default never. */
  intermediateCallbacks?: () => boolean;
  /** The retrieval API's origin: callbacks' hrefs point there. */
  retrievalOrigin: () => string;
  /**
   * The API host's origin: the upload and finalize addresses of a create answer point there
   * (unless the create came through a proxy naming an `account.` host: then its `api.` twin).
   */
  apiOrigin: () => string;
}

/** The part names of a Data credential: the specification's, and the published pages'. */
export type PartName = 'device_risk' | 'prepared_data';

/** A workflow definition of the emulated tenant. */
export interface WorkflowDefinition {
  deviceRisk: boolean;
  /** The name of the Device Risk credential's part. Default `device_risk`. */
  part?: PartName;
}

/** A decision the emulator answers: from the blackbox's sources, or forced by a test. */
export interface EmulatedDecision {
  type: 'PASSED' | 'REJECTED' | 'WARNING' | 'NOT_EXECUTED' | (string & {});
  /** The decision's details label, an open set (documented ones: OK, HIGH_RISK, TECHNICAL_ERROR, …). */
  label: string;
  alerts?: string[];
  /**
   * The overall risk score, an integer from -1 to 100, -1 exactly when the type is
   * NOT_EXECUTED. Default from the type: PASSED 10, WARNING 50, REJECTED 90, NOT_EXECUTED -1.
   */
  score?: number;
}

/** Which transactions a forced decision applies to: a workflow execution id, a customer reference, 'next', or a test. */
export type DecisionMatch = string | ((tx: Transaction) => boolean);

export interface Transaction {
  accountId: string;
  workflowExecutionId: string;
  credentialId?: string;
  /** The part name of its Device Risk credential (the key of `api.parts`, its path in capitals). */
  part?: PartName;
  customerInternalReference: string;
  userReference?: string;
  callbackUrl?: string;
  workflowKey: string;
  token: string;
  tokenExpiresAt: number;
  lastActionAt: number;
  createdAt: number;
  processed: boolean;
  acquired: boolean;
  /** Every blackbox uploaded, in order. */
  blackboxes: string[];
  /** The decision, fixed when the transaction is processed, its score always there. */
  decision?: EmulatedDecision & { score: number };
  processedAt?: number;
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
export const EXECUTION_PATH = new RegExp(`^/api/v1/accounts/(${UUID})/workflow-executions/(${UUID})$`);
export const STATUS_PATH = new RegExp(`^/api/v1/accounts/(${UUID})/workflow-executions/(${UUID})/status$`);
export const PART_PATH = new RegExp(
  `^/api/v1/accounts/(${UUID})/workflow-executions/(${UUID})/credentials/(${UUID})/parts/([A-Z_]+)$`,
);
export const ACCOUNT_PATH = new RegExp(`^/api/v1/accounts/(${UUID})$`);
export const ACCOUNTS_PATH = '/api/v1/accounts';

/** The service's memory, shared by its operations (token, accounts, workflow, retrieval). */
export interface ServiceState {
  options: ServiceOptions;
  accessTokens: Map<string, number>; // token -> expiry
  accounts: Set<string>;
  transactions: Map<string, Transaction>; // by workflow execution id
  /** Newest first; a one-shot rule is removed when it has decided one transaction. */
  forcedDecisions: Array<[DecisionMatch, EmulatedDecision, boolean]>;
  statusOf: (tx: Transaction) => WorkflowStatus;
  /** Undefined when the request carries a valid access token; else the 401 answer. */
  authorizedByAccessToken: (request: Request) => Response | undefined;
}

export function createState(options: ServiceOptions): ServiceState {
  const accessTokens = new Map<string, number>();
  function statusOf(tx: Transaction): WorkflowStatus {
    if (tx.processed) return 'PROCESSED';
    const sessionEnd = tx.lastActionAt + options.sessionTimeoutMs;
    const now = options.now();
    if (now >= tx.tokenExpiresAt && tx.tokenExpiresAt <= sessionEnd) return 'TOKEN_EXPIRED';
    if (now >= sessionEnd) return 'SESSION_EXPIRED';
    return tx.acquired ? 'ACQUIRED' : 'INITIATED';
  }

  function authorizedByAccessToken(request: Request): Response | undefined {
    const token = bearer(request);
    // Stryker disable next-line ConditionalExpression: a map has no entry under undefined either
    const expiry = token === undefined ? undefined : accessTokens.get(token);
    if (expiry === undefined) return problem(401, 'Unauthorized', 'A valid access token is required');
    if (options.now() >= expiry) return problem(401, 'Unauthorized', 'The access token has expired');
    return undefined;
  }

  return {
    options,
    accessTokens,
    accounts: new Set(),
    transactions: new Map(),
    // Stryker disable next-line ArrayDeclaration: a rule that is a bare string matches no transaction; decide() adds the real ones
    forcedDecisions: [],
    statusOf,
    authorizedByAccessToken,
  };
}

/**
 * At most `perSecond` requests in any second (0: no limit): the token and retrieval limits of
 * docs/vendor-contract.md#the-service, as the service counts them.
 */
export function slidingWindow(perSecond: number, now: () => number): { take(): boolean } {
  const times: number[] = [];
  return {
    take() {
      if (perSecond <= 0) return true;
      const at = now();
      // Stryker disable next-line ConditionalExpression,EqualityOperator: an empty window's first time is undefined, which compares false
      while (times.length > 0 && times[0]! <= at - 1000) times.shift();
      if (times.length >= perSecond) return false;
      times.push(at);
      return true;
    },
  };
}
