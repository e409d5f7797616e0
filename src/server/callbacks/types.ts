/**
 * The callback handler's public types: the callback as the service sends it, the result
 * handed to `onResult`, the options and the handler (docs/answer.md, docs/server.md).
 */
import type { DeviceRiskClient } from '../api/device-risk-client.js';
import type { DeviceRiskDetails, WorkflowStatus } from '../api/result.js';
import type { RateLimit } from '../endpoint/admission.js';
import type { RequestContext } from '../fetch-handler.js';
import type { Store } from '../store/store.js';
/** The callback body, as documented. */
export interface CallbackBody {
  callbackSentAt: string;
  userReference?: string;
  workflowExecution: { id: string; href: string; definitionKey: string | number; status: WorkflowStatus };
  account: { id: string; href: string };
}

export interface CallbackResult {
  accountId: string;
  workflowExecutionId: string;
  /** PROCESSED, SESSION_EXPIRED or TOKEN_EXPIRED. */
  status: WorkflowStatus;
  /** The workflow details, for PROCESSED (an expired execution has no result to read). */
  details?: DeviceRiskDetails;
  /** Yours, from the account request (the order), as the service's details give it: PROCESSED only. */
  customerInternalReference?: string;
  /**
   * Yours, from the account request, if you gave one: from the details (PROCESSED) or the
   * callback. Never the kit's own reference tag.
   */
  userReference?: string;
  /**
   * The checkout's reference (its Idempotency-Key, as the browser's 202 answer gave it), when
   * the endpoint's check of this tenant made the execution (same store, or none: told.ts).
   */
  reference?: string;
  callback: CallbackBody;
  /** Epoch ms when the callback arrived. */
  receivedAt: number;
}

export type SourceRule = readonly string[] | ((request: Request, context?: RequestContext) => boolean) | 'any';

export interface CallbackHandlerOptions {
  client: DeviceRiskClient;
  /**
   * Your decision: called for each workflow execution and final status, once, and again only
   * when an instance dies (or the store is away for a whole lease) after it returned and before
   * that was recorded; make it idempotent by `workflowExecutionId`. Once with the endpoint's
   * `onResult` too: a decision the endpoint's check told already calls nothing here, when both
   * handlers are given the same `store` (or neither is given one: docs/answer.md). A throw is retried, and
   * so is a call that takes longer than `onResultTimeoutMs` (its `signal` is aborted then).
   * Only executions of this shop's tenant reach it (docs/answer.md#whose-callback).
   */
  onResult: (result: CallbackResult, options: { signal: AbortSignal }) => void | Promise<void>;
  /**
   * How long `onResult` may take, in ms: past it the call counts as failed, is retried with
   * backoff, and the lease is let go. Default 30000 (less than `leaseMs`).
   */
  onResultTimeoutMs?: number;
  /**
   * Callbacks the kit cannot yet place as this shop's (no reference tag of its own: see
   * docs/answer.md#whose-callback) taken by this process: `burst` at once, then `perMinute`;
   * more are answered 503 with Retry-After, nothing written. Each costs one retrieval read
   * before it reaches `onResult`. Default { burst: 50, perMinute: 300 }: a third of the
   * service's default retrieval limit (15 a second). Callbacks with the kit's tag are never limited.
   */
  untaggedCallbacks?: RateLimit;
  /**
   * Who may call: addresses and CIDR ranges (the service publishes its callback source
   * addresses per region), a function of the request and its context, or 'any' (tests,
   * or a gateway that already checks). Required: a callback carries no signature.
   */
  allowedSources: SourceRule;
  /**
   * Where callbacks are recorded until handled, and each decision marked told. Default this
   * process's memory; a fleet shares one (createRedisStore). Give the endpoint the same one.
   */
  store?: Store;
  /** Time limit of each call to `store` in ms: a store that hangs is answered 503, as one that is down. Default 3000. */
  storeTimeoutMs?: number;
  /** How long an instance may take over a callback (details and onResult) before another may, in ms. Default 60000. */
  leaseMs?: number;
  /**
   * Told of every failure (details, onResult, the store), each retried, and of a callback
   * given up after retryForMs (`result_undelivered`, with the execution's ids). For that one it
   * may return a promise (keeping the failure for the shop): the callback is marked failed once
   * it resolves, and given up again on a later try if it rejects. Default: one line on
   * console.error, so that a refused callback is never silent.
   */
  onError?: (error: unknown) => unknown;
  /** First retry after this many ms, doubled each time up to maxRetryDelayMs. Default 1000 and 60000. */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /** How long after its arrival a callback is still tried, in ms. Default 24 hours; less than recordTtlMs. */
  retryForMs?: number;
  /**
   * How often this instance sweeps the store's pending callbacks (those of instances that died
   * or whose retry met the store away), in ms; also on a callback that arrives after as long.
   * Default 30000.
   */
  sweepIntervalMs?: number;
  /** How long a callback's record is kept (duplicates within it call nothing). Default 7 days. */
  recordTtlMs?: number;
  /** Largest body in bytes. Default 16384. */
  maxBodyBytes?: number;
  now?: () => number;
}

export type CallbackHandler = ((request: Request, context?: RequestContext) => Promise<Response>) & {
  /** Resolves when every callback received so far is handled (or waits for a retry). For tests and shutdown. */
  idle(): Promise<void>;
  /**
   * Tries again every callback listed as pending in the store whose retry is due and that no
   * instance is handling: runs every sweepIntervalMs on its own; call it to run it now.
   */
  sweep(): Promise<void>;
  /**
   * Stops the retry timers and the sweep, aborts the `onResult` calls under way and lets go of
   * every lease this instance holds, so that another instance takes its callbacks over at once
   * (records stay in the store, for the fleet's sweeps). Resolves once the leases are released.
   */
  close(): Promise<void>;
};
