/**
 * The integrator endpoint behind the browser package's `post` option:
 * POST { "blackbox": "..." } -> account create/update, upload, finalize.
 *
 * Retries from the browser carry the same Idempotency-Key. The key's record, in the
 * handler's store, keeps the progress (the transaction once created, its token sealed), so
 * a retry after a failed upload resumes instead of creating a second transaction, on any
 * instance sharing the store, and a retry after success gets the first answer. One instance
 * at a time works on a key: it holds a lease, renewed while it works; a concurrent request
 * waits for its answer (409 with Retry-After after `idempotencyWaitMs`), and a lease whose
 * owner died is taken over when it runs out.
 */
import { type AccountRequest, type DeviceRiskClient, type DeviceRiskTransaction } from './device-risk-client.js';
import {
  DeviceRiskError,
  ERR_IDEMPOTENCY_KEY_IN_USE,
  ERR_INVALID_ACCOUNT_REQUEST,
  ERR_INVALID_CONFIGURATION,
  ERR_NONCE_EXPIRED,
  ERR_NONCE_INVALID,
  ERR_NONCE_MISSING,
  ERR_NETWORK,
  ERR_NONCE_REUSED,
  ERR_ORPHANED_TRANSACTION,
  ERR_REQUEST_REJECTED,
  ERR_RESULT_NOT_READY,
  ERR_STORE_FULL,
  ERR_STORE_UNAVAILABLE,
  isDeviceRiskError,
  sleep,
} from './errors.js';
import { claim, createMemoryStore, fromStore, keyPart, ownerMark, withTimeLimit, type Store } from './store.js';
import { repairBlackbox, type BlackboxRepair } from './repair.js';
import { verifyCaptureNonce, type VerifiedNonce } from './nonce.js';
import { FINAL_STATUSES, type DeviceRiskDetails } from './result.js';
import { json, readLimited, refuse } from './http.js';
import { recordOutcome, recordRepairs } from './metrics.js';
import { parseOutcome } from './outcome.js';
import type { CaptureOutcome } from '../shared/types.js';
import type { RequestContext } from './node.js';

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
}

export interface DeviceRiskHandlerOptions {
  client: DeviceRiskClient;
  /** Origins allowed to post, e.g. ["https://shop.example"]. */
  allowedOrigins: readonly string[];
  /** Maps the request to your customer; return a Response (e.g. 401) to refuse it. */
  resolveCustomer: (
    request: Request,
    context?: RequestContext,
  ) => CustomerMapping | Response | Promise<CustomerMapping | Response>;
  /** Default workflow definition key. */
  workflowKey?: string | number;
  /** Largest request body in bytes. Default 16384. */
  maxBodyBytes?: number;
  /** Read the transaction's status after finalize for the answer. Default true. */
  reportStatus?: boolean;
  /**
   * Where Idempotency-Key records, their leases and nonce claims live. Give every instance of
   * a fleet the same shared store (createRedisStore). Default: this process's memory, holding
   * `idempotencyMaxKeys` keys.
   */
  store?: Store;
  /** Time limit of each call to `store` in ms: a store that hangs is answered 503 with Retry-After, as one that is down. Default 3000. */
  storeTimeoutMs?: number;
  /** How long an Idempotency-Key is remembered, in ms. Default 24 hours. */
  idempotencyTtlMs?: number;
  /**
   * Keys (with their nonce claims) the default memory store holds at most. None is dropped
   * before `idempotencyTtlMs`: when it is full, new checkouts are answered 503 `store_full`
   * with Retry-After until old keys expire. Default 100000; above that, use a shared store.
   */
  idempotencyMaxKeys?: number;
  /** How long an instance holds a key it works on without renewing its lease, in ms: a dead owner's key is taken over after it. Default 10000. */
  idempotencyLeaseMs?: number;
  /** How long a request waits while another works on its key before answering 409 with Retry-After, in ms. Default 10000. */
  idempotencyWaitMs?: number;
  /** Told about every failure (errors serialise without secrets). */
  onError?: (error: unknown) => void;
  /**
   * Replay protection (defence in depth): the secret of `createCaptureNonce`. Given, every
   * request must carry the nonce issued for its customer (`{ blackbox, nonce }`), unexpired
   * and not used before (an atomic claim in `store`: once across a fleet; a retry with the
   * same Idempotency-Key may carry it again).
   */
  nonceSecret?: string;
  /** What the nonce was issued for. Default the customer's `customerInternalReference`. */
  nonceSubject?: (request: Request, customer: CustomerMapping) => string;
  /** Told when a blackbox damaged on its way (spaces for "+", percent-encoding, …) was repaired: count these, then fix the form code. */
  onRepair?: (repairs: BlackboxRepair[]) => void;
  /**
   * Told how each capture went, as the page reported it: with the blackbox (`{ blackbox,
   * outcome }`, once per Idempotency-Key), or alone when the capture produced none
   * (`{ outcome }`, answered 202). Also recorded as OpenTelemetry metrics when
   * `@opentelemetry/api` is installed. Untrusted input: malformed outcomes are dropped.
   * Outcome-only reports come before any customer is known, so they write nothing to the
   * store: they are bounded (`maxOutcomeReportsPerSecond`) and told once per key per process.
   */
  onOutcome?: (outcome: CaptureOutcome, request: Request) => void;
  /** Outcome-only reports taken per second by this process; more are answered 429. Default 20 (bursts of 5 times that). */
  maxOutcomeReportsPerSecond?: number;
  /**
   * Your synchronous decision on the server (see runDeviceRiskCheck); the browser only ever
   * gets the reference. What it does never changes the browser's answer: a throw goes to `onError`.
   */
  onResult?: (details: DeviceRiskDetails) => void | Promise<void>;
  /** How long a request waits for the result before answering. Default 0: one read after finalize. */
  resultWaitMs?: number;
  now?: () => number;
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

export interface DeviceRiskCheckOptions {
  /** Workflow definition key when the customer mapping names none. */
  workflowKey?: string | number;
  /**
   * Your synchronous decision on the server: called with the details once the result is
   * there, if it is within `resultWaitMs`. Never sent to the browser. The service's callback
   * stays the authoritative answer (createCallbackHandler) for results that take longer. A
   * throw (or a rejection) is told to `onError`; the check's answer stays the same.
   */
  onResult?: (details: DeviceRiskDetails) => void | Promise<void>;
  /** How long to wait for the result after finalize, reading the status every second. Default 0: one read. */
  resultWaitMs?: number;
  /** Told when the result was not there within `resultWaitMs` (`result_not_ready`). */
  onError?: (error: unknown) => void;
  /** How the result wait sleeps (tests). Default a timer. */
  sleep?: (ms: number) => Promise<void>;
  /** Read the transaction's status after finalize. Default true. */
  reportStatus?: boolean;
  /** The progress of earlier attempts for this blackbox; updated as the check goes. */
  progress?: DeviceRiskProgress;
  /** Called after each step that changed `progress` (transaction created, blackbox uploaded): persist it here. */
  onProgress?: (progress: DeviceRiskProgress) => void | Promise<void>;
  now?: () => number;
}

/**
 * The whole Device Risk check for one blackbox: account create (or update, or the
 * customer's own transaction), blackbox upload, finalize, status. The endpoint runs it
 * under an Idempotency-Key; call it yourself from a classic form post or your own route.
 */
export async function runDeviceRiskCheck(
  client: DeviceRiskClient,
  blackbox: string,
  customer: CustomerMapping,
  options: DeviceRiskCheckOptions = {},
): Promise<DeviceRiskResult> {
  const { progress = {}, now = Date.now } = options;
  const body: AccountRequest = {
    customerInternalReference: customer.customerInternalReference,
    workflowDefinition: { key: customer.workflowKey ?? options.workflowKey ?? '' },
    ...(customer.userReference ? { userReference: customer.userReference } : {}),
    ...(customer.callbackUrl ? { callbackUrl: customer.callbackUrl } : {}),
    ...(customer.tokenLifetime ? { tokenLifetime: customer.tokenLifetime } : {}),
  };
  if (body.workflowDefinition.key === '' && !customer.transaction)
    throw new DeviceRiskError(
      ERR_INVALID_CONFIGURATION,
      'no workflow key: set workflowKey on the handler or in resolveCustomer',
    );
  // Resume where a failed attempt stopped; a lapsed transaction token means a fresh transaction.
  if (progress.transaction && lapsed(progress.transaction, now)) progress.transaction = progress.uploaded = undefined;
  if (!progress.transaction) {
    progress.transaction =
      customer.transaction ??
      (customer.accountId ? await client.updateAccount(customer.accountId, body) : await client.createAccount(body));
    await options.onProgress?.(progress);
  }
  const tx = progress.transaction;
  if (!progress.uploaded) {
    await client.uploadBlackbox(tx, blackbox);
    progress.uploaded = true;
    await options.onProgress?.(progress);
  }
  await client.finalize(tx);
  let status =
    options.reportStatus === false && !options.onResult
      ? 'FINALIZED'
      : await client.status(tx).catch(() => 'FINALIZED');
  if (options.onResult) {
    const until = now() + (options.resultWaitMs ?? 0);
    while (status !== 'PROCESSED' && !FINAL_STATUSES.includes(status) && now() < until) {
      await (options.sleep ?? sleep)(Math.min(1000, until - now()));
      status = await client.status(tx).catch(() => status);
    }
    if (status === 'PROCESSED') {
      const details = await client.details(tx);
      // The answer must not depend on the integrator's decision code: its status code would tell the browser the decision.
      try {
        await options.onResult(details);
      } catch (error) {
        options.onError?.(error);
      }
    } else
      options.onError?.(
        new DeviceRiskError(
          ERR_RESULT_NOT_READY,
          `workflow execution ${tx.workflowExecutionId} was ${status} after ${options.resultWaitMs ?? 0} ms; its callback will tell`,
          { operation: 'result' },
        ),
      );
  }
  return { accountId: tx.accountId, workflowExecutionId: tx.workflowExecutionId, status };
}

/** A transaction whose token is about to lapse cannot be uploaded to or finalized: a fresh one is made. */
const lapsed = (transaction: DeviceRiskTransaction, now: () => number) => now() >= transaction.tokenExpiresAt - 30_000;

/**
 * What the store keeps per Idempotency-Key. Each attempt replaces exactly the version it
 * last wrote (compare-and-set), so an attempt whose key another has taken over can write
 * nothing more: it is fenced, and stops before its next call to the service.
 */
interface KeyRecord {
  /** SHA-256 of the origin, the customer and the blackbox: the same key with another request is refused. */
  fingerprint: string;
  /** The transaction, its token sealed (client.sealTransaction). */
  transaction?: string;
  uploaded?: boolean;
  result?: DeviceRiskResult;
  /**
   * An account create on the wire: until `until` (epoch ms), its attempt may still record the
   * transaction it made, and no other attempt makes one. After it, the create's owner is
   * taken to have died with it on the wire: the next attempt makes another (the one orphan a
   * crash can leave, reported through onError).
   */
  creating?: { owner: string; until: number };
}

/** How often a request waiting for another instance's work on its key looks again, in ms. */
const KEY_POLL_MS = 50;
/** How often a write of progress is tried again while the store is away, in ms. */
const STORE_RETRY_MS = 100;

async function fingerprintOf(...parts: string[]): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(parts.join('\n')));
  // Stryker disable next-line StringLiteral: every fingerprint is written and compared in the same form
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

export function createDeviceRiskHandler(
  options: DeviceRiskHandlerOptions,
): (request: Request, context?: RequestContext) => Promise<Response> {
  const { client } = options;
  if (!Array.isArray(options.allowedOrigins) || options.allowedOrigins.length === 0) {
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, 'allowedOrigins must list the origins of your checkout pages');
  }
  const allowed = new Set(options.allowedOrigins.map((o) => new URL(o).origin));
  if (
    options.nonceSecret !== undefined &&
    (typeof options.nonceSecret !== 'string' || options.nonceSecret.length < 32)
  ) {
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, 'nonceSecret must be a string of at least 32 characters');
  }
  const maxBody = options.maxBodyBytes ?? 16 * 1024;
  const ttl = options.idempotencyTtlMs ?? 24 * 3_600_000;
  const leaseMs = options.idempotencyLeaseMs ?? 10_000;
  const waitMs = options.idempotencyWaitMs ?? 10_000;
  const now = options.now ?? Date.now;
  // Each key has a record, a nonce claim and, while worked on, a lease: three entries.
  const store = options.store
    ? withTimeLimit(options.store, options.storeTimeoutMs)
    : createMemoryStore({ maxEntries: 3 * (options.idempotencyMaxKeys ?? 100_000), now });
  const reports = outcomeReports(options.maxOutcomeReportsPerSecond ?? 20, now);
  const namespace = `${keyPart(client.clientId ?? '')}:idempotency`;

  const check = (
    progress: DeviceRiskProgress,
    onProgress?: DeviceRiskCheckOptions['onProgress'],
  ): DeviceRiskCheckOptions => ({
    workflowKey: options.workflowKey,
    reportStatus: options.reportStatus,
    progress,
    now,
    ...(onProgress ? { onProgress } : {}),
    ...(options.onResult ? { onResult: options.onResult, resultWaitMs: options.resultWaitMs ?? 0 } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
  });

  /** Runs the check under the key: the answer, a refusal, or (thrown) the failure of the check. */
  async function underKey(
    key: string,
    fingerprint: string,
    customerTransaction: boolean,
    run: (
      progress: DeviceRiskProgress,
      save: (progress: DeviceRiskProgress) => Promise<void>,
    ) => Promise<DeviceRiskResult>,
    onNewKey: () => void,
  ): Promise<Response> {
    const recordKey = `${namespace}:${keyPart(key)}`;
    const leaseKey = `${recordKey}:lease`;
    const read = async () => {
      const stored = await fromStore(store.get(recordKey), 'idempotency record read');
      return { stored, record: stored === undefined ? undefined : (JSON.parse(stored) as KeyRecord) };
    };
    // Waits and retries run on the wall clock: they sleep real time.
    const waitUntil = Date.now() + waitMs;
    for (;;) {
      // The lease first: on the common path (a new key) that is one store operation less.
      const mark = ownerMark();
      if (await claim(store, leaseKey, mark, leaseMs, 'idempotency lease')) {
        let leaseLost = false;
        const renew = setInterval(() => {
          store.compareAndSet(leaseKey, mark, mark, leaseMs).then(
            (held) => void (leaseLost ||= !held),
            () => {},
          );
        }, leaseMs / 3);
        try {
          const { stored, record } = await read();
          if (record && record.fingerprint !== fingerprint) return reused();
          if (record?.result) return json(record.result, 200);
          if (record?.creating && !record.transaction) {
            // Another attempt's create may be on the wire: it records its transaction, or its time runs out.
            if (now() < record.creating.until) return inUse(Math.ceil((record.creating.until - now()) / 1000));
            options.onError?.(
              new DeviceRiskError(
                ERR_ORPHANED_TRANSACTION,
                'an earlier attempt on this Idempotency-Key stopped with its account create on the wire: that transaction, if made, stays INITIATED without a blackbox',
                {
                  operation: 'account create',
                },
              ),
            );
          }
          const written = fencedRecord(stored);
          const saved: KeyRecord = record ?? { fingerprint };
          delete saved.creating;
          const progress: DeviceRiskProgress = {
            ...(saved.transaction ? { transaction: await client.openTransaction(saved.transaction) } : {}),
            ...(saved.uploaded ? { uploaded: true } : {}),
          };
          // A transaction without a recorded upload: an earlier owner may have uploaded and
          // died (or lost the store) before recording it. The service knows: past INITIATED,
          // the blackbox is there, and a second upload would double it.
          if (progress.transaction && !progress.uploaded) {
            const status = await client.status(progress.transaction).catch(() => undefined);
            if (status !== undefined && status !== 'INITIATED') progress.uploaded = true;
          }
          const creates = !customerTransaction && (!progress.transaction || lapsed(progress.transaction, now));
          // Before any call to the service the record is written (a store with no room or no
          // answer refuses the work before a transaction exists), with the create's intent.
          const createWindowMs = (client.accountTimeoutMs ?? 60_000) + leaseMs;
          await written.replace(
            creates ? { ...saved, creating: { owner: mark, until: now() + createWindowMs } } : saved,
            leaseMs,
          );
          if (!record) onNewKey();
          /** The lease must still be this attempt's before each call to the service. */
          const stillOwner = () => {
            if (leaseLost)
              throw new DeviceRiskError(
                ERR_IDEMPOTENCY_KEY_IN_USE,
                'this attempt lost its lease on the Idempotency-Key',
                { retryAfter: 1, operation: 'store' },
              );
          };
          let recorded = progress.transaction;
          let madeUnrecorded = false;
          /**
           * The create ended without a transaction to record: its intent goes, so that the next
           * attempt does not wait for it. An answer that never came may still have made one.
           */
          const createEnded = async (error: unknown) => {
            await written.replace(saved, leaseMs).catch(() => {});
            if (isDeviceRiskError(error) && error.code === ERR_NETWORK && /^account/.test(error.operation ?? '')) {
              options.onError?.(
                new DeviceRiskError(
                  ERR_ORPHANED_TRANSACTION,
                  'an account create got no answer: the transaction it may have made stays INITIATED without a blackbox',
                  { operation: error.operation, cause: error },
                ),
              );
            }
          };
          const save = async (next: DeviceRiskProgress) => {
            const made = next.transaction && next.transaction !== recorded ? next.transaction : undefined;
            madeUnrecorded = !!made;
            saved.transaction = next.transaction ? await client.sealTransaction(next.transaction) : undefined;
            saved.uploaded = next.uploaded;
            try {
              // The transaction just made is kept for as long as no other attempt may make one.
              await written.replace(saved, made ? createWindowMs : leaseMs);
            } catch (error) {
              if (made) {
                options.onError?.(
                  new DeviceRiskError(
                    ERR_ORPHANED_TRANSACTION,
                    `workflow execution ${made.workflowExecutionId} was created but could not be recorded: it stays INITIATED without a blackbox`,
                    {
                      operation: 'account create',
                      cause: error,
                    },
                  ),
                );
              }
              throw error;
            }
            recorded = next.transaction;
            stillOwner();
          };
          stillOwner();
          let result: DeviceRiskResult;
          const before = recorded;
          try {
            result = await run(progress, save);
          } catch (error) {
            // Nothing new recorded and nothing made unrecorded: the create (if it ran) made nothing we know of.
            if (creates && recorded === before && !madeUnrecorded) await createEnded(error);
            throw error;
          }
          // Nothing is lost: should this write fail, the next attempt finds the progress and finalize answers as before.
          // Done, the record needs only what answers a retry: no transaction token is kept.
          await written.replace({ fingerprint, result }, leaseMs).catch((error: unknown) => options.onError?.(error));
          return json(result, 200);
        } finally {
          clearInterval(renew);
          await store.compareAndDelete(leaseKey, mark).catch(() => {});
        }
      }
      // Another instance works on the key, or it is done: its answer, a refusal, or wait.
      const { record } = await read();
      if (record && record.fingerprint !== fingerprint) return reused();
      // Stryker disable next-line ConditionalExpression: a waiter that misses the answer here takes the lease once the owner lets go, and answers the same from there
      if (record?.result) return json(record.result, 200);
      if (Date.now() >= waitUntil) return inUse(1);
      await sleep(KEY_POLL_MS);
    }

    /**
     * The key's record as this attempt last wrote it (`stored`, or none yet):
     * each write replaces exactly that version. A store that is away is waited for, up to
     * `withinMs`; a version that another attempt replaced means the key was taken over
     * (`idempotency_key_in_use`): nothing more is written or called.
     */
    function fencedRecord(stored: string | undefined) {
      let last = stored;
      return {
        async replace(next: KeyRecord, withinMs: number): Promise<void> {
          const text = JSON.stringify(next);
          const until = Date.now() + withinMs;
          for (let attempt = 0; ; attempt++) {
            try {
              const done =
                last === undefined
                  ? await fromStore(store.setIfAbsent(recordKey, text, ttl), 'idempotency record write')
                  : await fromStore(store.compareAndSet(recordKey, last, text, ttl), 'idempotency record write');
              // A write that timed out may have landed: then the record is already `text`.
              if (!done && !(attempt > 0 && (await read()).stored === text)) {
                throw new DeviceRiskError(
                  ERR_IDEMPOTENCY_KEY_IN_USE,
                  'another attempt took this Idempotency-Key over',
                  { retryAfter: 1, operation: 'store' },
                );
              }
              last = text;
              return;
            } catch (error) {
              if (
                isDeviceRiskError(error) &&
                (error.code === ERR_IDEMPOTENCY_KEY_IN_USE || error.code === ERR_STORE_FULL)
              )
                throw error;
              if (Date.now() + STORE_RETRY_MS >= until) throw error;
              await sleep(STORE_RETRY_MS);
            }
          }
        },
      };
    }
  }

  const inUse = (seconds: number) =>
    refuse(
      409,
      ERR_IDEMPOTENCY_KEY_IN_USE,
      'Another attempt with this Idempotency-Key is still running; retry with the same key',
      { 'retry-after': String(Math.min(60, Math.max(1, seconds))) },
    );

  /** Verifies the nonce and claims it for this Idempotency-Key; a refusal, or undefined to go on. */
  async function claimNonce(nonce: unknown, subject: string, claimant: string): Promise<Response | undefined> {
    if (nonce === undefined || nonce === null || nonce === '')
      return refuse(400, ERR_NONCE_MISSING, 'This endpoint requires the capture nonce issued with the page');
    let verified: VerifiedNonce;
    try {
      verified = await verifyCaptureNonce(nonce, { secret: options.nonceSecret!, subject, now });
    } catch (error) {
      const code = isDeviceRiskError(error) ? error.code : ERR_NONCE_INVALID;
      return refuse(
        code === ERR_NONCE_EXPIRED ? 400 : 403,
        code,
        code === ERR_NONCE_EXPIRED
          ? 'The capture nonce has expired'
          : 'The capture nonce is not valid for this customer',
      );
    }
    const nonceKey = `${keyPart(client.clientId ?? '')}:nonce:${verified.id}`;
    const ttl = Math.max(1, verified.expiresAt - now());
    // A store failure throws store_unavailable: the handler answers it as every other (503, Retry-After).
    if (await fromStore(store.setIfAbsent(nonceKey, claimant, ttl), 'nonce claim')) return undefined;
    // Used before: by this very request's earlier attempt (same key) is fine.
    if ((await fromStore(store.get(nonceKey), 'nonce read')) === claimant) return undefined;
    return refuse(409, ERR_NONCE_REUSED, 'This capture nonce was used before: a blackbox is checked once');
  }

  const reused = () => refuse(422, 'idempotency_key_reused', 'This Idempotency-Key was used with another request');

  function tell(outcome: CaptureOutcome, request: Request): void {
    recordOutcome(outcome);
    try {
      options.onOutcome?.(outcome, request);
    } catch (error) {
      options.onError?.(error);
    }
  }

  /**
   * An outcome-only report: anyone can send one, before any customer is known, so it writes
   * nothing to the store. Told once per Idempotency-Key (the page retries it once) as far as
   * this process remembers, answered 202; past the rate bound, 429.
   */
  function outcomeOnly(outcome: CaptureOutcome, request: Request): Response {
    if (!reports.take())
      return refuse(429, 'too_many_reports', 'Too many outcome reports; this one was not recorded', {
        'retry-after': '1',
      });
    const key = request.headers.get('idempotency-key');
    if (key === null || !/^[\x21-\x7e]{8,200}$/.test(key) || reports.first(key)) tell(outcome, request);
    return json({ recorded: true }, 202);
  }

  return async (request, context) => {
    if (request.method !== 'POST') return refuse(405, 'method_not_allowed', 'Use POST', { allow: 'POST' });
    const origin = request.headers.get('origin');
    if (!origin || !allowed.has(origin))
      return refuse(403, 'origin_not_allowed', 'This origin may not post blackboxes');
    if (!/^application\/json\b/i.test(request.headers.get('content-type') ?? '')) {
      return refuse(415, 'unsupported_media_type', 'Send JSON: Content-Type: application/json');
    }
    const text = await readLimited(request, maxBody);
    if (text === undefined) return refuse(413, 'body_too_large', `The body is larger than ${maxBody} bytes`);
    let blackbox: string;
    let nonce: unknown;
    let outcome: CaptureOutcome | undefined;
    try {
      const body = JSON.parse(text) as { blackbox?: unknown; nonce?: unknown; outcome?: unknown } | null;
      nonce = body?.nonce;
      outcome = parseOutcome(body?.outcome);
      // A capture that produced no blackbox: its outcome alone, recorded, no call to the service.
      if (body?.blackbox === undefined && outcome) return outcomeOnly(outcome, request);
      const repaired = repairBlackbox(body?.blackbox);
      blackbox = repaired.blackbox;
      if (repaired.repairs.length) {
        recordRepairs(repaired.repairs);
        options.onRepair?.(repaired.repairs);
      }
    } catch (error) {
      const code = isDeviceRiskError(error) ? error.code : 'invalid_blackbox';
      return refuse(
        400,
        code,
        isDeviceRiskError(error) ? error.message : 'The body must be JSON: { "blackbox": "..." }',
      );
    }
    const key = request.headers.get('idempotency-key');
    if (key !== null && !/^[\x21-\x7e]{8,200}$/.test(key))
      return refuse(400, 'invalid_idempotency_key', 'Idempotency-Key must be 8 to 200 visible ASCII characters');

    let customer: CustomerMapping | Response;
    try {
      customer = await options.resolveCustomer(request, context);
    } catch (error) {
      options.onError?.(error);
      return refuse(500, 'customer_lookup_failed', 'The customer could not be resolved');
    }
    if (customer instanceof Response) return customer;

    try {
      if (options.nonceSecret !== undefined) {
        const refused = await claimNonce(
          nonce,
          options.nonceSubject?.(request, customer) ?? customer.customerInternalReference,
          key ?? ownerMark(),
        );
        if (refused) return refused;
      }
      const told = () => outcome && tell(outcome, request);
      if (key === null) {
        told();
        return json(await runDeviceRiskCheck(client, blackbox, customer, check({})), 200);
      }
      const fingerprint = await fingerprintOf(origin, customer.customerInternalReference, blackbox);
      return await underKey(
        key,
        fingerprint,
        customer.transaction !== undefined,
        (progress, save) => runDeviceRiskCheck(client, blackbox, customer, check(progress, save)),
        told,
      );
    } catch (error) {
      options.onError?.(error);
      const status = isDeviceRiskError(error) ? error.status : undefined;
      const code = isDeviceRiskError(error) ? error.code : 'internal_error';
      if (isDeviceRiskError(error) && (error.code === ERR_INVALID_CONFIGURATION || error.code === 'forged_address')) {
        return refuse(500, code, 'The device-risk check is misconfigured');
      }
      // Permanent refusals: no Retry-After, and a 4xx so that the browser does not try again.
      if (code === ERR_INVALID_ACCOUNT_REQUEST)
        return refuse(
          422,
          code,
          'The account request for this customer breaks the service rules; retrying will not help',
        );
      if (code === ERR_REQUEST_REJECTED && status !== undefined && status >= 400 && status < 500 && status !== 429) {
        return refuse(
          status,
          code,
          `The device-risk service refused the request (HTTP ${status}); retrying will not help`,
        );
      }
      // Upstream trouble: tell the browser to try again later with the same key.
      const retryAfter = String(
        Math.min(isDeviceRiskError(error) && error.retryAfter !== undefined ? error.retryAfter : 2, 60),
      );
      if (code === ERR_IDEMPOTENCY_KEY_IN_USE) return inUse(1);
      const unavailable =
        status === 429 ||
        status === 503 ||
        code === 'network_error' ||
        code === 'rate_limited' ||
        code === ERR_STORE_UNAVAILABLE ||
        code === ERR_STORE_FULL;
      return refuse(
        unavailable ? 503 : 502,
        code,
        'The device-risk service could not be reached; retry with the same Idempotency-Key',
        { 'retry-after': retryAfter },
      );
    }
  };
}

/** How many report keys a process remembers to tell each once; the oldest go first (a count doubled now and then). */
const REMEMBERED_REPORTS = 10_000;

/**
 * The bound on outcome-only reports, in this process only: a token bucket of
 * `perSecond`, holding five seconds' worth, and the keys already told.
 */
function outcomeReports(perSecond: number, now: () => number) {
  if (!(perSecond > 0))
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, 'maxOutcomeReportsPerSecond must be a positive number');
  const capacity = perSecond * 5;
  let tokens = capacity;
  let refilledAt = now();
  const told = new Set<string>();
  return {
    /** True when a report may be taken now. */
    take(): boolean {
      const at = now();
      tokens = Math.min(capacity, tokens + ((at - refilledAt) / 1000) * perSecond);
      refilledAt = at;
      if (tokens < 1) return false;
      tokens -= 1;
      return true;
    },
    /** True the first time this process sees `key`. */
    first(key: string): boolean {
      if (told.has(key)) return false;
      told.add(key);
      if (told.size > REMEMBERED_REPORTS) told.delete(told.values().next().value!);
      return true;
    },
  };
}
