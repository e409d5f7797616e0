/**
 * The callback receiver: the service POSTs the final status of a workflow execution to
 * the account's `callbackUrl`, and that callback is its authoritative answer (docs/vendor-contract.md
 * #the-answer). Callbacks carry no signature: the receiver checks their shape and their source,
 * records them in a store, answers 200 at once, then reads the details and hands them to
 * `onResult`, once per workflow execution and final status, retrying from the store with
 * backoff when the details or `onResult` fail. Nothing goes back to the browser.
 *
 * On a fleet sharing one store, the first instance to record a callback handles it, under a
 * lease: a copy delivered to any other instance calls nothing. A callback not yet handled is
 * also listed as pending in the store, and every instance sweeps that list now and then: a
 * callback whose instance died, or whose retry met the store away, is tried again by another,
 * with the same backoff, until `retryForMs` has passed (then `result_undelivered`).
 */
import { sleep, systemNow } from '../clock.js';
import type { DeviceRiskClient } from '../api/device-risk-client.js';
import {
  REFUSED_BODY_TOO_LARGE,
  REFUSED_MEDIA_TYPE,
  REFUSED_METHOD,
  REFUSED_SOURCE,
  REFUSED_TOO_MANY_CALLBACKS,
  bodyTimedOut,
  isBodyTimeout,
  json,
  readLimited,
  refuse,
  type RefusalCode,
} from '../http.js';
import {
  DeviceRiskError,
  ERR_ABORTED,
  ERR_CALLBACK_REFUSED,
  ERR_INVALID_CALLBACK,
  ERR_INVALID_CONFIGURATION,
  ERR_RESULT_UNDELIVERED,
  ERR_STORE_UNAVAILABLE,
  ERR_UNKNOWN_EXECUTION,
  logError,
} from '../errors.js';
import { checkRateLimit, createLimiter, type RateLimit } from '../endpoint/admission.js';
import { callWithin } from '../time-limit.js';
import { isUnknownExecution, placeExecution } from './provenance.js';

import { sourceMatcher } from './sources.js';
import type { RequestContext } from '../node.js';
import type { DeviceRiskDetails, WorkflowStatus } from '../api/result.js';
import { createMemoryStore, keyPart, withTimeLimit, type Store } from '../store/store.js';
import { takeLease, type Lease } from '../store/lease.js';
import { pendingList } from './pending.js';

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
   * that was recorded; make it idempotent by `workflowExecutionId`. A throw is retried, and
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
  /** Where callbacks are recorded until handled. Default this process's memory; a fleet shares one (createRedisStore). */
  store?: Store;
  /** Time limit of each call to `store` in ms: a store that hangs is answered 503, as one that is down. Default 3000. */
  storeTimeoutMs?: number;
  /** How long an instance may take over a callback (details and onResult) before another may, in ms. Default 60000. */
  leaseMs?: number;
  /**
   * Told of every failure (details, onResult, the store), each retried, and of a callback
   * given up after retryForMs (`result_undelivered`, with the execution's ids). Default: one
   * line on console.error, so that a refused callback is never silent.
   */
  onError?: (error: unknown) => void;
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

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const CALLBACK_STATUSES = ['PROCESSED', 'SESSION_EXPIRED', 'TOKEN_EXPIRED'];

/** Checks the documented shape; the hrefs must point at the retrieval host, at these ids. */
function checkCallback(body: unknown, retrievalOrigin: string): CallbackBody {
  const fail = (what: string): never => {
    throw new DeviceRiskError(ERR_INVALID_CALLBACK, `the callback ${what}`);
  };
  const b = body as Partial<CallbackBody> | null;
  if (!b || typeof b !== 'object' || Array.isArray(b)) return fail('is not a JSON object');
  if (typeof b.callbackSentAt !== 'string' || Number.isNaN(Date.parse(b.callbackSentAt)))
    fail('lacks a callbackSentAt date');
  if (b.userReference !== undefined && typeof b.userReference !== 'string')
    fail('has a userReference that is not a string');
  const execution = b.workflowExecution;
  const account = b.account;
  if (!execution || typeof execution.id !== 'string' || !UUID.test(execution.id))
    fail('lacks a workflowExecution.id UUID');
  if (!account || typeof account.id !== 'string' || !UUID.test(account.id)) fail('lacks an account.id UUID');
  if (!CALLBACK_STATUSES.includes(execution!.status))
    fail(`has a status that is not one of ${CALLBACK_STATUSES.join(', ')}`);
  if (typeof execution!.definitionKey !== 'string' && typeof execution!.definitionKey !== 'number')
    fail('lacks workflowExecution.definitionKey');
  const onRetrieval = (href: unknown, path: string) => {
    let url: URL | undefined;
    try {
      url = typeof href === 'string' ? new URL(href) : undefined;
    } catch {
      url = undefined;
    }
    return !!url && url.origin === retrievalOrigin && url.pathname === path && !url.search && !url.username;
  };
  const accountPath = `/api/v1/accounts/${account!.id}`;
  if (!onRetrieval(execution!.href, `${accountPath}/workflow-executions/${execution!.id}`))
    fail(`has a workflowExecution.href off ${retrievalOrigin} or of another execution`);
  if (!onRetrieval(account!.href, accountPath))
    fail(`has an account.href off ${retrievalOrigin} or of another account`);
  return b as CallbackBody;
}

interface CallbackRecord {
  /** `failed`: given up after retryForMs. */
  state: 'pending' | 'done' | 'failed';
  attempts: number;
  receivedAt: number;
  /** Epoch ms of the next try after a failure: kept in the store, so any instance keeps the backoff. */
  nextAttemptAt?: number;
  /** The callback carries the kit's own reference (checked once, on arrival). */
  tagged?: boolean;
  callback: CallbackBody;
}

/** How a callback comes to be handled: on arrival, by this instance's retry timer, or by a sweep. */
type Trigger = 'arrival' | 'retry' | 'sweep';
/** Pause between writes of a delivered result while the store is away. */
const DONE_WRITE_PAUSE_MS = 100;

export function createCallbackHandler(options: CallbackHandlerOptions): CallbackHandler {
  const { client, onResult } = options;
  if (typeof onResult !== 'function')
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, 'onResult is required: it receives each result');
  const rule = options.allowedSources;
  if (rule === undefined) {
    throw new DeviceRiskError(
      ERR_INVALID_CONFIGURATION,
      "allowedSources is required: the service's callback addresses or ranges, a function, or 'any'",
    );
  }
  const matches = typeof rule === 'function' || rule === 'any' ? undefined : sourceMatcher(rule);
  const store = options.store ? withTimeLimit(options.store, options.storeTimeoutMs) : createMemoryStore();
  const now = options.now ?? systemNow;
  const ttl = options.recordTtlMs ?? 7 * 86_400_000;
  const firstDelay = options.retryDelayMs ?? 1000;
  const maxDelay = options.maxRetryDelayMs ?? 60_000;
  const maxBody = options.maxBodyBytes ?? 16 * 1024;
  const leaseMs = options.leaseMs ?? 60_000;
  const retryForMs = options.retryForMs ?? 86_400_000;
  const sweepIntervalMs = options.sweepIntervalMs ?? 30_000;
  const onResultTimeoutMs = options.onResultTimeoutMs ?? 30_000;
  if (!(onResultTimeoutMs > 0))
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, 'onResultTimeoutMs must be a positive number of milliseconds');
  const untagged = createLimiter(
    checkRateLimit(options.untaggedCallbacks ?? { burst: 50, perMinute: 300 }, 'untaggedCallbacks'),
    options.now ?? systemNow,
    1,
  );
  if (!(retryForMs > 0 && retryForMs < ttl))
    throw new DeviceRiskError(
      ERR_INVALID_CONFIGURATION,
      'retryForMs must be positive and less than recordTtlMs: a record must outlive its retries',
    );
  if (!(sweepIntervalMs > 0))
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, 'sweepIntervalMs must be a positive number of milliseconds');
  const namespace = `${keyPart(client.clientId ?? '')}:callback`;
  const pending = pendingList(store, namespace, ttl, now);
  /** This instance's retry timers, one per callback at most. */
  const retryTimers = new Map<string, ReturnType<typeof setTimeout>>();
  const running = new Set<Promise<void>>();
  /** The leases this instance holds, let go by close(). */
  const held = new Set<Lease>();
  /** Aborted by close(): the onResult calls under way. */
  const closing = new AbortController();
  let closed = false;
  let sweepTimer: ReturnType<typeof setInterval> | undefined;
  let lastSweep = -Infinity;
  let sweeping: Promise<void> | undefined;
  const report = options.onError ?? logError;

  const allowed = (request: Request, context?: RequestContext) =>
    rule === 'any'
      ? true
      : typeof rule === 'function'
        ? rule(request, context)
        : !!context?.clientAddress && matches!(context.clientAddress);

  /** Reads the details and calls onResult; on failure the record waits in the store for its retry. */
  async function handle(key: string, trigger: Trigger): Promise<void> {
    // One at a time, on any instance: a copy that arrives meanwhile calls nothing.
    if (closed) return;
    const lease = await takeLease(store, `${key}:lease`, leaseMs, 'callback lease', now);
    if (!lease) return;
    held.add(lease);
    try {
      await handleLeased(key, trigger, lease);
    } finally {
      held.delete(lease);
      await lease.release();
    }
  }

  async function handleLeased(key: string, trigger: Trigger, lease: Lease): Promise<void> {
    const stored = await store.get(key);
    if (!stored) return;
    const record = JSON.parse(stored) as CallbackRecord;
    if (record.state !== 'pending') return void (await pending.remove(key));
    // A copy or a sweep keeps the backoff; this instance's own timer is the backoff.
    if (trigger !== 'retry' && (record.nextAttemptAt ?? 0) > now()) return;
    const { callback } = record;
    const ids = { accountId: callback.account.id, workflowExecutionId: callback.workflowExecution.id };
    if (now() - record.receivedAt >= retryForMs) {
      // Fenced by the record read under the lease: a write that lost the race changes nothing.
      if (await store.compareAndSet(key, stored, JSON.stringify({ ...record, state: 'failed' }), ttl)) {
        report(
          new DeviceRiskError(
            ERR_RESULT_UNDELIVERED,
            `the result of workflow execution ${ids.workflowExecutionId} (account ${ids.accountId}, ${callback.workflowExecution.status}) was not delivered: onResult or the details failed for ${record.attempts} attempts over ${retryForMs} ms`,
          ),
        );
        await pending.remove(key);
      }
      return;
    }
    try {
      const status = callback.workflowExecution.status;
      // A read with the shop's own token: an execution of another tenant answers 404.
      const details = await placeExecution(client, ids, status, record.tagged);
      await callWithin(
        (signal) =>
          onResult(
            { ...ids, status, ...(details ? { details } : {}), callback, receivedAt: record.receivedAt },
            { signal },
          ),
        onResultTimeoutMs,
        closing.signal,
      );
    } catch (error) {
      if (isUnknownExecution(error)) return forget(key, stored, ids);
      // Closed: the record stays as it was, and another instance's sweep takes it a lease later.
      if (closed) return;
      report(error);
      const attempts = record.attempts + 1;
      const delay = Math.min(maxDelay, firstDelay * 2 ** (attempts - 1));
      const next = JSON.stringify({ ...record, attempts, nextAttemptAt: now() + delay });
      // A record another instance changed meanwhile is theirs now; a store away leaves the
      // record as it was, and this instance's timer (or a sweep) tries again.
      const kept = await store.compareAndSet(key, stored, next, ttl).catch((storeError: unknown) => {
        report(storeError);
        return true;
      });
      if (kept && !closed) retryAfter(key, delay);
      return;
    }
    await recordDelivered(key, stored, record, lease);
  }

  /**
   * A callback for an execution the service does not know for this tenant (another tenant
   * set the shop's address as its callbackUrl, or a forgery): final, told once, and its
   * record leaves the store now rather than in `recordTtlMs`.
   */
  async function forget(key: string, stored: string, ids: { workflowExecutionId: string; accountId: string }) {
    report(
      new DeviceRiskError(
        ERR_UNKNOWN_EXECUTION,
        `a callback for workflow execution ${ids.workflowExecutionId} (account ${ids.accountId}) was dropped: the service does not know that execution for this tenant`,
        { status: 404, operation: 'callback' },
      ),
    );
    await store.compareAndDelete(key, stored).catch(report);
    await pending.remove(key).catch(report);
  }

  /**
   * Writes `done` once onResult has returned, through a store that is away for a while, for
   * as long as the lease is held: a record left pending would have onResult called again.
   */
  async function recordDelivered(key: string, stored: string, record: CallbackRecord, lease: Lease): Promise<void> {
    const done = JSON.stringify({ ...record, state: 'done' });
    for (;;) {
      try {
        // False: another instance took the record over when this lease lapsed; it is theirs.
        if (!(await store.compareAndSet(key, stored, done, ttl))) return;
        break;
      } catch (error) {
        if (lease.lost || closed) throw error;
        await sleep(DONE_WRITE_PAUSE_MS);
      }
    }
    await pending.remove(key).catch(report);
  }

  function retryAfter(key: string, delay: number): void {
    clearTimeout(retryTimers.get(key));
    const timer = setTimeout(() => {
      retryTimers.delete(key);
      track(handle(key, 'retry'));
    }, delay);
    timer.unref?.();
    retryTimers.set(key, timer);
  }

  function track(work: Promise<void>): void {
    const settled = work.catch(report).finally(() => running.delete(settled));
    running.add(settled);
  }

  /** Hands every due pending callback to `handle` (whose lease keeps it to one instance at a time). */
  async function sweepOnce(): Promise<void> {
    lastSweep = now();
    for (const entry of await pending.entries()) {
      // This instance's own timer tries it; a lease later, the others may.
      if (retryTimers.has(entry.key)) continue;
      const stored = await store.get(entry.key);
      if (stored === undefined) {
        // Listed before its record is written: the record is written within a store call's
        // time limit, or never (the arrival was answered 503); an entry a lease old is stale.
        if (now() - entry.at >= leaseMs) await pending.remove(entry.key, entry.at);
        continue;
      }
      const record = JSON.parse(stored) as CallbackRecord;
      if (record.state !== 'pending') await pending.remove(entry.key);
      // A callback's own instance tries first: another steps in a lease after it was due.
      else if (now() >= (record.nextAttemptAt ?? record.receivedAt) + leaseMs) track(handle(entry.key, 'sweep'));
    }
  }

  function sweep(): Promise<void> {
    sweeping ??= sweepOnce().finally(() => (sweeping = undefined));
    return sweeping;
  }

  /** Sweeps now when the last sweep is an interval old, and keeps sweeping while the process lives. */
  function sweepWhenDue(): void {
    if (closed) return;
    if (!sweepTimer) {
      sweepTimer = setInterval(() => track(sweep()), sweepIntervalMs);
      sweepTimer.unref?.();
    }
    // Runtimes that freeze between requests run no interval: a callback's arrival sweeps too.
    if (now() - lastSweep >= sweepIntervalMs) track(sweep());
  }

  /**
   * Answers a refusal, and tells onError: a callback refused is a decision that never
   * arrives, most often from a wrong set-up (the caller address, the retrieval host).
   */
  const refused = (
    status: number,
    code: RefusalCode | typeof ERR_INVALID_CALLBACK,
    message: string,
    why = message,
    headers?: Record<string, string>,
  ) => {
    report(
      new DeviceRiskError(
        code === ERR_INVALID_CALLBACK ? ERR_INVALID_CALLBACK : ERR_CALLBACK_REFUSED,
        `a callback was refused with ${status} ${code}: ${why}`,
        { status, operation: 'callback' },
      ),
    );
    return refuse(status, code, message, headers);
  };

  const handler = async (request: Request, context?: RequestContext): Promise<Response> => {
    if (request.method !== 'POST') return refused(405, REFUSED_METHOD, 'Use POST', undefined, { allow: 'POST' });
    if (!allowed(request, context)) {
      const address = context?.clientAddress;
      return refused(
        403,
        REFUSED_SOURCE,
        'This address may not send callbacks',
        address
          ? `its caller address ${address} is not allowed by allowedSources`
          : 'no caller address was given (pass { clientAddress } as the second argument; a route handler must take it from a header its own proxy sets)',
      );
    }
    if (!/\bjson\b/i.test(request.headers.get('content-type') ?? ''))
      return refused(415, REFUSED_MEDIA_TYPE, 'Send JSON');
    let text: string | undefined;
    try {
      text = await readLimited(request, maxBody);
    } catch (error) {
      // A body that trickles in is cut at its time limit: 408, and said.
      if (!isBodyTimeout(error)) throw error;
      report(error);
      return bodyTimedOut(error);
    }
    if (text === undefined) return refused(413, REFUSED_BODY_TOO_LARGE, `The body is larger than ${maxBody} bytes`);
    let callback: CallbackBody;
    try {
      callback = checkCallback(JSON.parse(text), client.retrievalOrigin);
    } catch (error) {
      return refused(
        400,
        ERR_INVALID_CALLBACK,
        error instanceof DeviceRiskError ? error.message.replace(/^\[[^\]]+\] /, '') : 'The body must be JSON',
      );
    }
    // Before any write: a flood of callbacks the kit cannot place takes no store space.
    const tagged = (await client.vouches?.(callback.userReference)) === true;
    if (!tagged) {
      const wait = untagged.take('untagged');
      if (wait)
        return refused(
          503,
          REFUSED_TOO_MANY_CALLBACKS,
          'Too many callbacks at once; send it again later',
          `more than untaggedCallbacks allows of callbacks without the kit's reference (execution ${callback.workflowExecution.id})`,
          { 'retry-after': String(wait) },
        );
    }
    // UUIDs compare case-insensitively: one execution is one record, however its id is written.
    const key = `${namespace}:${keyPart(callback.workflowExecution.id.toLowerCase())}:${callback.workflowExecution.status}`;
    const record: CallbackRecord = { state: 'pending', attempts: 0, receivedAt: now(), tagged, callback };
    let first: boolean;
    try {
      // Listed first, then recorded: a record is never pending without its entry for the sweeps.
      await pending.add(key);
      first = await store.setIfAbsent(key, JSON.stringify(record), ttl);
    } catch (error) {
      // Not recorded: the service must send it again.
      report(error);
      return refuse(503, ERR_STORE_UNAVAILABLE, 'The callback could not be recorded; send it again', {
        'retry-after': '5',
      });
    }
    // Recorded: answer at once; a duplicate or a late copy calls nothing again, but takes
    // over a record still pending, due, whose lease nobody holds (its instance died).
    track(handle(key, 'arrival'));
    sweepWhenDue();
    return json({ received: true, ...(first ? {} : { duplicate: true }) }, 200);
  };

  return Object.assign(handler, {
    async idle() {
      while (running.size) await Promise.all(running);
    },
    sweep,
    async close() {
      closed = true;
      for (const timer of retryTimers.values()) clearTimeout(timer);
      retryTimers.clear();
      clearInterval(sweepTimer);
      closing.abort(new DeviceRiskError(ERR_ABORTED, 'the callback handler was closed'));
      await Promise.all([...held].map((lease) => lease.release()));
    },
  });
}
