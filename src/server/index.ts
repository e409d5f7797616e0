/**
 * blackbox-capture/server: everything that runs on the integrator's server, and only what its
 * users call (docs/server.md#the-public-api): the kit's plumbing (the check's fence and
 * progress, the outcome parser, the adapter's halves) is reached by the tests through its own
 * modules, never through this entry.
 * Web-standard Request -> Response handlers on fetch (Node 22+, Deno, Bun, Next.js route
 * handlers, Hono, edge runtimes), plus Node and Fastify adapters. Secrets and tokens stay here.
 */
export { createTokenSource, TOKEN_LIFETIME_BOUNDS, TOKEN_URLS } from './api/token-source.js';
export type { Region, TokenSource, TokenSourceOptions, CachedToken } from './api/token-source.js';
export { REGIONS, CALLBACK_SOURCES, regionOrigin } from './api/regions.js';
export type { HostRole, RegionEntry } from './api/regions.js';
export {
  createDeviceRiskClient,
  checkBlackbox,
  checkAccountRequest,
  DeviceRiskTransaction,
  API_BASE_URLS,
  TRANSACTION_BASE_URLS,
  RETRIEVAL_BASE_URLS,
  BLACKBOX_PATTERN,
  MAX_BLACKBOX_LENGTH,
} from './api/device-risk-client.js';
export type {
  AccountRequest,
  DeviceRiskClient,
  DeviceRiskClientOptions,
  DeviceRiskLimits,
} from './api/device-risk-client.js';
export { createDeviceRiskHandler } from './endpoint/handler.js';
export type { DeviceRiskHandler, DeviceRiskHandlerOptions } from './endpoint/handler.js';
export { runDeviceRiskCheck } from './endpoint/check.js';
export type { CustomerMapping, DeviceRiskCheckOptions, DeviceRiskResult } from './endpoint/check.js';
export { createCallbackHandler } from './callbacks/handler.js';
export type {
  CallbackBody,
  CallbackHandler,
  CallbackHandlerOptions,
  CallbackResult,
  SourceRule,
} from './callbacks/handler.js';
export { FINAL_STATUSES, RESULT_SCHEDULE_SECONDS, parseDetails } from './api/result.js';
export type { DecisionType, DeviceRiskDetails, WorkflowStatus } from './api/result.js';
export { createMemoryStore, STORE_TIMEOUT_MS } from './store/store.js';
export type { Store, MemoryStoreOptions } from './store/store.js';
export { createFirstPartyProxy, collectorPath, COLLECTOR_URLS } from './proxy/proxy.js';
export type { FirstPartyProxyOptions, ProxyMethod } from './proxy/proxy.js';
export type { FetchHandler, RequestContext } from './fetch-handler.js';
// The Node and Fastify adapters (src/server/adapter/node/), re-exported: one of the few ways
// into the adapter from outside it that test/house.test.ts allows, each named there.
export { toNodeHandler } from './adapter/node/handler.js';
export type { NodeHandler, NodeHandlerOptions } from './adapter/node/handler.js';
export { toFastifyHandler } from './adapter/node/fastify.js';
export type { FastifyHandlerOptions, FastifyReplyLike, FastifyRequestLike } from './adapter/node/fastify.js';
export { BodyTimeoutError, BODY_TIMEOUT_MS } from './net/http.js';
// The error codes as one object (ERROR_CODES.QUEUE_FULL is `queue_full`) and their union.
export { DeviceRiskError, isDeviceRiskError, ERROR_CODES } from './errors.js';
export { createMemoryQueue } from './queue/queue.js';
export { NotCheckedError } from './endpoint/queued.js';
export { ResultUndeliveredError } from './callbacks/undelivered.js';
export type {
  CheckQueue,
  CheckJob,
  JobRun,
  GivenUp,
  AddResult,
  QueueCounts,
  QueuedCustomer,
  MemoryQueueOptions,
} from './queue/queue.js';
export type { BacklogFigures } from './queue/backlog.js';
export type { RateLimit } from './endpoint/admission.js';
export type { AddressPrefix } from './net/address.js';
export { createCaptureNonce, verifyCaptureNonce } from './endpoint/nonce.js';
export type { CaptureNonceOptions, VerifiedNonce } from './endpoint/nonce.js';
export { repairBlackbox } from './endpoint/repair.js';
export type { BlackboxRepair, RepairedBlackbox } from './endpoint/repair.js';
export type { DeviceRiskErrorCode } from './errors.js';
export type { CaptureOutcome, CaptureOutcomeKind } from '../shared/types.js';
