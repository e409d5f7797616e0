/**
 * blackbox-capture/server: everything that runs on the integrator's server.
 * Web-standard Request -> Response handlers on fetch (Node 20+, Next.js route
 * handlers, Hono, edge runtimes), plus a Node adapter. Secrets and tokens stay here.
 */
export { createTokenSource, TOKEN_LIFETIME_BOUNDS, TOKEN_URLS } from './token-source.js';
export type { Region, TokenSource, TokenSourceOptions, CachedToken } from './token-source.js';
export {
  createDeviceRiskClient,
  checkBlackbox,
  checkAccountRequest,
  DeviceRiskTransaction,
  API_BASE_URLS,
  RETRIEVAL_BASE_URLS,
  BLACKBOX_PATTERN,
  MAX_BLACKBOX_LENGTH,
} from './device-risk-client.js';
export type { AccountRequest, DeviceRiskClient, DeviceRiskClientOptions } from './device-risk-client.js';
export { createDeviceRiskHandler, runDeviceRiskCheck } from './endpoint.js';
export type {
  CustomerMapping,
  DeviceRiskCheckOptions,
  DeviceRiskHandlerOptions,
  DeviceRiskProgress,
  DeviceRiskResult,
} from './endpoint.js';
export { createCallbackHandler } from './callbacks.js';
export type { CallbackBody, CallbackHandler, CallbackHandlerOptions, CallbackResult, SourceRule } from './callbacks.js';
export { FINAL_STATUSES, RESULT_SCHEDULE_SECONDS, parseDetails } from './result.js';
export type { DecisionType, DeviceRiskDetails, WorkflowStatus } from './result.js';
export { createMemoryStore, withTimeLimit, STORE_TIMEOUT_MS } from './store.js';
export type { Store, MemoryStoreOptions } from './store.js';
export { createFirstPartyProxy, collectorPath, COLLECTOR_URLS } from './proxy.js';
export type { FirstPartyProxyOptions, ProxyMethod } from './proxy.js';
export { toNodeHandler, toRequest, writeResponse, validHost, BadRequestError } from './node.js';
export type { FetchHandler, NodeHandler, RequestContext } from './node.js';
export {
  DeviceRiskError,
  isDeviceRiskError,
  ERR_INVALID_CONFIGURATION,
  ERR_INSECURE_URL,
  ERR_TOKEN_REJECTED,
  ERR_RATE_LIMITED,
  ERR_UPSTREAM,
  ERR_NETWORK,
  ERR_INVALID_RESPONSE,
  ERR_NO_DEVICE_RISK_CREDENTIAL,
  ERR_FORGED_ADDRESS,
  ERR_TRANSACTION_TOKEN_EXPIRED,
  ERR_INVALID_BLACKBOX,
  ERR_REQUEST_REJECTED,
  ERR_INVALID_ACCOUNT_REQUEST,
  ERR_WORKFLOW_EXPIRED,
  ERR_RESULT_NOT_READY,
  ERR_INVALID_CALLBACK,
  ERR_ABORTED,
  ERR_STORE_UNAVAILABLE,
  ERR_STORE_FULL,
  ERR_ORPHANED_TRANSACTION,
  ERR_IDEMPOTENCY_KEY_IN_USE,
  ERR_BLACKBOX_DAMAGED,
  ERR_NONCE_MISSING,
  ERR_NONCE_INVALID,
  ERR_NONCE_EXPIRED,
  ERR_NONCE_REUSED,
} from './errors.js';
export { createCaptureNonce, verifyCaptureNonce } from './nonce.js';
export type { CaptureNonceOptions, VerifiedNonce } from './nonce.js';
export { repairBlackbox } from './repair.js';
export type { BlackboxRepair, RepairedBlackbox } from './repair.js';
export type { DeviceRiskErrorCode } from './errors.js';
export { parseOutcome, OUTCOME_KINDS } from './outcome.js';
export type { CaptureOutcome, CaptureOutcomeKind } from '../shared/types.js';
