/**
 * The callback receiver: the service POSTs the final status of a workflow execution to
 * the account's `callbackUrl`, and that callback is its authoritative answer (field notes
 * §4a). Callbacks carry no signature: the receiver checks their shape and their source,
 * records them in a store, answers 200 at once, then reads the details and hands them to
 * `onResult`, once per workflow execution and final status, retrying from the store with
 * backoff when the details or `onResult` fail. Nothing goes back to the browser.
 *
 * On a fleet sharing one store, the first instance to record a callback handles it, under a
 * lease: a copy delivered to any other instance calls nothing, unless the record is still
 * pending and nobody holds its lease (its instance died): then that instance takes it over.
 */
import { systemNow } from '../clock.js';
import type { DeviceRiskClient } from '../api/device-risk-client.js';
import {
  REFUSED_BODY_TOO_LARGE,
  REFUSED_MEDIA_TYPE,
  REFUSED_METHOD,
  REFUSED_SOURCE,
  json,
  readLimited,
  refuse,
} from '../http.js';
import { DeviceRiskError, ERR_INVALID_CALLBACK, ERR_INVALID_CONFIGURATION, ERR_STORE_UNAVAILABLE } from '../errors.js';

import { sourceMatcher } from './sources.js';
import type { RequestContext } from '../node.js';
import type { DeviceRiskDetails, WorkflowStatus } from '../api/result.js';
import { createMemoryStore, keyPart, withTimeLimit, type Store } from '../store/store.js';
import { takeLease } from '../store/lease.js';

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
  /** Your decision: called once per workflow execution and final status. A throw is retried. */
  onResult: (result: CallbackResult) => void | Promise<void>;
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
  /** Told of every failure (details, onResult, the store); each is retried. */
  onError?: (error: unknown) => void;
  /** First retry after this many ms, doubled each time up to maxRetryDelayMs. Default 1000 and 60000. */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /** How long a callback's record is kept (duplicates within it call nothing). Default 7 days. */
  recordTtlMs?: number;
  /** Largest body in bytes. Default 16384. */
  maxBodyBytes?: number;
  now?: () => number;
}

export type CallbackHandler = ((request: Request, context?: RequestContext) => Promise<Response>) & {
  /** Resolves when every callback received so far is handled (or waits for a retry). For tests and shutdown. */
  idle(): Promise<void>;
  /** Stops the retry timers (records stay in the store). */
  close(): void;
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
  state: 'pending' | 'done';
  attempts: number;
  receivedAt: number;
  callback: CallbackBody;
}

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
  const namespace = `${keyPart(client.clientId ?? '')}:callback`;
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const running = new Set<Promise<void>>();
  let closed = false;

  const allowed = (request: Request, context?: RequestContext) =>
    rule === 'any'
      ? true
      : typeof rule === 'function'
        ? rule(request, context)
        : !!context?.clientAddress && matches!(context.clientAddress);

  /** Reads the details and calls onResult; on failure the record waits in the store for its retry. */
  async function handle(key: string): Promise<void> {
    // One instance at a time: a copy that arrives elsewhere meanwhile calls nothing.
    const lease = await takeLease(store, `${key}:lease`, leaseMs, 'callback lease');
    if (!lease) return;
    try {
      await handleLeased(key);
    } finally {
      await lease.release();
    }
  }

  async function handleLeased(key: string): Promise<void> {
    const stored = await store.get(key);
    if (!stored) return;
    const record = JSON.parse(stored) as CallbackRecord;
    if (record.state === 'done') return;
    const { callback } = record;
    const ids = { accountId: callback.account.id, workflowExecutionId: callback.workflowExecution.id };
    try {
      const details = callback.workflowExecution.status === 'PROCESSED' ? await client.details(ids) : undefined;
      await onResult({
        ...ids,
        status: callback.workflowExecution.status,
        ...(details ? { details } : {}),
        callback,
        receivedAt: record.receivedAt,
      });
      await store.set(key, JSON.stringify({ ...record, state: 'done' }), ttl);
    } catch (error) {
      options.onError?.(error);
      const attempts = record.attempts + 1;
      await store
        .set(key, JSON.stringify({ ...record, attempts }), ttl)
        .catch((storeError: unknown) => options.onError?.(storeError));
      if (closed) return;
      const timer = setTimeout(
        () => {
          timers.delete(timer);
          track(handle(key));
        },
        Math.min(maxDelay, firstDelay * 2 ** (attempts - 1)),
      );
      timer.unref?.();
      timers.add(timer);
    }
  }

  function track(work: Promise<void>): void {
    const settled = work.catch((error: unknown) => options.onError?.(error)).finally(() => running.delete(settled));
    running.add(settled);
  }

  const handler = async (request: Request, context?: RequestContext): Promise<Response> => {
    if (request.method !== 'POST') return refuse(405, REFUSED_METHOD, 'Use POST', { allow: 'POST' });
    if (!allowed(request, context)) return refuse(403, REFUSED_SOURCE, 'This address may not send callbacks');
    if (!/\bjson\b/i.test(request.headers.get('content-type') ?? ''))
      return refuse(415, REFUSED_MEDIA_TYPE, 'Send JSON');
    const text = await readLimited(request, maxBody);
    if (text === undefined) return refuse(413, REFUSED_BODY_TOO_LARGE, `The body is larger than ${maxBody} bytes`);
    let callback: CallbackBody;
    try {
      callback = checkCallback(JSON.parse(text), client.retrievalOrigin);
    } catch (error) {
      return refuse(
        400,
        ERR_INVALID_CALLBACK,
        error instanceof DeviceRiskError ? error.message.replace(/^\[[^\]]+\] /, '') : 'The body must be JSON',
      );
    }
    // UUIDs compare case-insensitively: one execution is one record, however its id is written.
    const key = `${namespace}:${keyPart(callback.workflowExecution.id.toLowerCase())}:${callback.workflowExecution.status}`;
    const record: CallbackRecord = { state: 'pending', attempts: 0, receivedAt: now(), callback };
    let first: boolean;
    try {
      first = await store.setIfAbsent(key, JSON.stringify(record), ttl);
    } catch (error) {
      // Not recorded: the service must send it again.
      options.onError?.(error);
      return refuse(503, ERR_STORE_UNAVAILABLE, 'The callback could not be recorded; send it again', {
        'retry-after': '5',
      });
    }
    // Recorded: answer at once; a duplicate or a late copy calls nothing again, but takes
    // over a record still pending whose lease nobody holds (its instance died).
    track(handle(key));
    return json({ received: true, ...(first ? {} : { duplicate: true }) }, 200);
  };

  return Object.assign(handler, {
    async idle() {
      while (running.size) await Promise.all(running);
    },
    close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  });
}
