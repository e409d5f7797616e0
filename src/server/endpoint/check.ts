/**
 * The Device Risk check itself, for one blackbox: account create (or update, or the
 * customer's own transaction), blackbox upload, finalize, status, and the result for
 * `onResult`. Resumable: the progress of an earlier attempt is passed back in.
 */
import { type AccountRequest, type DeviceRiskClient, type DeviceRiskTransaction } from '../api/device-risk-client.js';
import { FINAL_STATUSES, type DeviceRiskDetails } from '../api/result.js';
import { sleep, systemNow } from '../time/clock.js';
import { callWithin } from '../time/time-limit.js';
import {
  DeviceRiskError,
  ERR_INVALID_CONFIGURATION,
  ERR_RESULT_NOT_READY,
  ERR_WORKFLOW_EXPIRED,
  isDeviceRiskError,
  safeOnError,
} from '../errors.js';
import { apiMessages, endpointMessages } from '../messages.js';
import { recordDecision } from '../metrics.js';
import { ResultPending, TellingElsewhere, TellingLater, type Telling, type ToldMarkers } from '../callbacks/told.js';

/** What the integrator's hook says about the customer behind a request. */
export interface CustomerMapping {
  customerInternalReference: string;
  userReference?: string;
  /** Update this existing account (a new workflow execution on it) instead of creating one. */
  accountId?: string;
  /**
   * Use this transaction's Device Risk credential, created earlier in your own flow
   * (`client.createAccount` or `client.transactionFrom(answer)`): no account call is made.
   */
  transaction?: DeviceRiskTransaction;
  /** Workflow definition key; default the handler's `workflowKey`. */
  workflowKey?: string | number;
  callbackUrl?: string;
  tokenLifetime?: string;
  /**
   * For a shop that tells signed-in shoppers apart (the gateway: an order token with `uref`).
   * `true`: signed in to the account `userReference`; the queue takes its turns by that account
   * and serves it ahead of every other checkout. `false`: a guest, refused first at the queue's
   * bound (docs/server.md#signed-in-shoppers-first). Absent: neither, as every checkout was.
   */
  signedIn?: boolean;
}

export interface DeviceRiskResult {
  accountId: string;
  workflowExecutionId: string;
  status: string;
}

/** How far a check got. Kept between attempts, a retry resumes: one transaction, one upload. */
export interface DeviceRiskProgress {
  transaction?: DeviceRiskTransaction;
  uploaded?: boolean;
}

/** runDeviceRiskCheck's options: what a caller of its own gives. */
export interface DeviceRiskCheckOptions {
  /** Workflow definition key when the customer mapping names none. */
  workflowKey?: string | number;
  /** The callback URL when the customer mapping names none (the service's rules: callbackUrlRuleBroken). */
  callbackUrl?: string;
  /**
   * Your synchronous decision on the server: called with the details once the result is
   * there, if it is within `resultWaitMs`. Never sent to the browser. The service's callback
   * stays the authoritative answer (createCallbackHandler) for results that take longer. A
   * throw (or a rejection) is told to `onError`; the check's answer stays the same.
   */
  onResult?: (
    details: DeviceRiskDetails,
    options: { signal: AbortSignal; reference?: string; customerInternalReference?: string; userReference?: string },
  ) => void | Promise<void>;
  /** How long `onResult` may take, in ms: past it `onError` hears `result_handler_timeout`, its signal aborts, and the answer goes. Default 30000. */
  onResultTimeoutMs?: number;
  /** How long to wait for the result after finalize, reading the status every second. Default 0: one read. */
  resultWaitMs?: number;
  /** Told when the result was not there within `resultWaitMs` (`result_not_ready`). */
  onError?: (error: unknown) => void;
  /** Read the transaction's status after finalize. Default true. */
  reportStatus?: boolean;
  now?: () => number;
  /** How the result wait sleeps (tests). Default a timer. */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * The check's options as the endpoint runs it (runCheck): the public ones, and its own plumbing
 * (progress kept between attempts, the fence, the told markers), which the package does not export.
 */
export interface CheckRunOptions extends DeviceRiskCheckOptions {
  /** Which checkout the decision is for, given to `onResult` beside its signal. */
  resultContext?: { reference?: string; customerInternalReference?: string; userReference?: string };
  /**
   * Each decision told once per execution (src/server/callbacks/told.ts): claimed right before
   * `onResult`; one another path told calls nothing here. One another path is telling: with
   * `retryFailedResultRead` the check throws `TellingElsewhere` (tried again later), else it
   * calls nothing. A store that cannot answer the claim makes the check throw, as a failed read does.
   */
  told?: ToldMarkers;
  /**
   * With `onResult`: a status read after finalize that fails throws (the check is tried again
   * later; finalize then answers 409 and the read comes again) instead of `result_not_ready`,
   * and an `onResult` that fails throws TellingLater (tried again later, to tell it then).
   * The queue's checks set it: nobody waits for them, and a decision must not be lost to a
   * read the service refused for a second, or to a shop's store that was full. Default false.
   */
  retryFailedResultRead?: boolean;
  /**
   * Called right before `onResult`; throws when this attempt may no longer tell the decision
   * (another attempt took its key over), and the check then throws. The endpoint writes the
   * key's record there, compare-and-set: of two attempts that both reached the decision (a
   * lease lapsed while the store was away), one tells it.
   */
  fence?: () => void | Promise<void>;
  /** The progress of earlier attempts for this blackbox; updated as the check goes. */
  progress?: DeviceRiskProgress;
  /** Called after each step that changed `progress` (transaction created, blackbox uploaded): persist it here. */
  onProgress?: (progress: DeviceRiskProgress) => void | Promise<void>;
}

/**
 * The whole Device Risk check for one blackbox: account create (or update, or the
 * customer's own transaction), blackbox upload, finalize, status. The endpoint runs it
 * under an Idempotency-Key; call it yourself from a classic form post or your own route.
 */
export const runDeviceRiskCheck = (
  client: DeviceRiskClient,
  blackbox: string,
  customer: CustomerMapping,
  options: DeviceRiskCheckOptions = {},
): Promise<DeviceRiskResult> =>
  runCheck(client, blackbox, customer, {
    ...options,
    // A hook of the caller's that fails is logged, never the check's answer (errors.ts).
    ...(options.onError ? { onError: safeOnError(options.onError) } : {}),
  });

/** runDeviceRiskCheck with the endpoint's plumbing (CheckRunOptions): resumable, fenced, told once. */
export async function runCheck(
  client: DeviceRiskClient,
  blackbox: string,
  customer: CustomerMapping,
  options: CheckRunOptions = {},
): Promise<DeviceRiskResult> {
  const { progress = {}, now = systemNow } = options;
  // Without a reference of the integrator's own, the kit's tag: the callback then shows the execution is the shop's.
  const userReference = customer.userReference || (customer.transaction ? undefined : await client.referenceTag?.());
  const body: AccountRequest = {
    customerInternalReference: customer.customerInternalReference,
    workflowDefinition: { key: customer.workflowKey ?? options.workflowKey ?? '' },
    ...(userReference ? { userReference } : {}),
    ...((customer.callbackUrl ?? options.callbackUrl)
      ? { callbackUrl: customer.callbackUrl ?? options.callbackUrl }
      : {}),
    ...(customer.tokenLifetime ? { tokenLifetime: customer.tokenLifetime } : {}),
  };
  if (body.workflowDefinition.key === '' && !customer.transaction)
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, endpointMessages.noWorkflowKey);
  // Resume where a failed attempt stopped. A lapsed transaction token before the upload means a
  // fresh transaction (the old one expires unchecked); after it, never: a second execution of one
  // blackbox would be a second decision for one order (finalizedAlready).
  if (progress.transaction && !progress.uploaded && lapsed(progress.transaction, now))
    progress.transaction = progress.uploaded = undefined;
  const created = !progress.transaction;
  if (!progress.transaction)
    progress.transaction =
      customer.transaction ??
      (customer.accountId ? await client.updateAccount(customer.accountId, body) : await client.createAccount(body));
  // Which checkout the execution is for, for the callback's onResult (told.ts): on every attempt,
  // so that a store away at the create's costs the callback its order only if no attempt resumes.
  await options.told
    ?.remember(progress.transaction.workflowExecutionId, { ...options.resultContext })
    .catch((error: unknown) => void options.onError?.(error));
  if (created) await options.onProgress?.(progress);
  const tx = progress.transaction;
  if (!progress.uploaded) {
    await client.uploadBlackbox(tx, blackbox);
    progress.uploaded = true;
    await options.onProgress?.(progress);
  }
  const retryRead = options.retryFailedResultRead === true && options.onResult !== undefined;
  await (lapsed(tx, now) ? finalizedAlready(client, tx) : client.finalize(tx)).catch((error: unknown) => {
    // Finalized, and not checked yet (ACQUIRED): a queued check reads it again later, quietly.
    throw retryRead && isDeviceRiskError(error) && error.code === ERR_RESULT_NOT_READY
      ? new ResultPending(tx.workflowExecutionId)
      : error;
  });
  let status =
    options.reportStatus === false && !options.onResult
      ? 'FINALIZED'
      : await client.status(tx).catch((error: unknown) => {
          if (retryRead) throw error;
          return 'FINALIZED';
        });
  if (options.onResult) {
    const until = now() + (options.resultWaitMs ?? 0);
    while (status !== 'PROCESSED' && !FINAL_STATUSES.includes(status) && now() < until) {
      await (options.sleep ?? sleep)(Math.min(1000, until - now()));
      status = await client.status(tx).catch(() => status);
    }
    if (status === 'PROCESSED') {
      const details = await client.details(tx);
      await options.fence?.();
      const telling = await options.told?.claim(tx.workflowExecutionId, status);
      // Being told by another path: a queued check comes back (told then, or let go and told by it).
      if (telling === 'busy' && retryRead) throw new TellingElsewhere(tx.workflowExecutionId, status);
      // Told by another path; within the request, one being told is left to it (the callback handler retries).
      if (telling !== 'told' && telling !== 'busy') await tell(details, telling, options, retryRead);
    } else if (retryRead) {
      // No callback may come (none asked for, its address wrong, lost in a restart): a queued
      // check reads again until the decision is there, or tells the order it never will be.
      if (!FINAL_STATUSES.includes(status)) throw new ResultPending(tx.workflowExecutionId);
      throw new DeviceRiskError(ERR_WORKFLOW_EXPIRED, apiMessages.endedWithoutResult(tx.workflowExecutionId, status), {
        operation: 'result',
      });
    } else
      options.onError?.(
        new DeviceRiskError(
          ERR_RESULT_NOT_READY,
          endpointMessages.resultNotReady(tx.workflowExecutionId, status, options.resultWaitMs ?? 0),
          { operation: 'result' },
        ),
      );
  }
  return { accountId: tx.accountId, workflowExecutionId: tx.workflowExecutionId, status };
}

/**
 * Calls onResult under the claim: marked told once it returned, let go when it failed. Within a
 * request the callback handler then tells the decision, and the answer does not depend on the
 * integrator's decision code (its status code would tell the browser the decision). A queued
 * check (`comeBack`) throws TellingLater: no callback may come (none is asked for, or it was
 * told already), so the job comes back and tells it (a shop's store full at that moment loses nothing).
 */
async function tell(
  details: DeviceRiskDetails,
  telling: Telling | undefined,
  options: CheckRunOptions,
  comeBack: boolean,
) {
  try {
    await callWithin(
      (signal) => options.onResult!(details, { ...options.resultContext, signal }),
      options.onResultTimeoutMs ?? 30_000,
    );
  } catch (error) {
    await telling?.abandon();
    options.onError?.(error);
    if (comeBack) throw new TellingLater(details.workflowExecutionId, details.status, error);
    return;
  }
  recordDecision(details);
  await telling?.done();
}

/**
 * An uploaded transaction whose token lapsed before its finalize was known to take (a status
 * read or finalize that kept failing): it cannot be finalized now, so its status says what
 * became of it. PROCESSED: finalized, its result read next. Expired: never checked, for good
 * (the order is told so, once). ACQUIRED or INITIATED: trouble that passes, read again later,
 * until it is one or the other (the service ends an execution no one finalizes).
 */
async function finalizedAlready(client: DeviceRiskClient, tx: DeviceRiskTransaction): Promise<void> {
  const status = await client.status(tx);
  if (status === 'PROCESSED') return;
  const ended = FINAL_STATUSES.includes(status);
  throw new DeviceRiskError(
    ended ? ERR_WORKFLOW_EXPIRED : ERR_RESULT_NOT_READY,
    apiMessages.tokenLapsedAfterUpload(tx.workflowExecutionId, status),
    { operation: 'finalize' },
  );
}

/** A transaction whose token is about to lapse cannot be uploaded to or finalized: a fresh one is made. */
export const lapsed = (transaction: DeviceRiskTransaction, now: () => number) =>
  now() >= transaction.tokenExpiresAt - 30_000;
