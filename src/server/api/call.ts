/**
 * One call to the service's API with its retries: the time limit of each attempt, 429 and
 * 5xx retried with backoff (retry.ts), a refused access token renewed once, and for a call
 * under one of the service's limits (rate-limit.ts) its slot and the fleet's shared backoff.
 */
import {
  DeviceRiskError,
  ERR_NETWORK,
  ERR_RATE_LIMITED,
  ERR_REQUEST_REJECTED,
  ERR_STORE_UNAVAILABLE,
  ERR_UPSTREAM,
} from '../errors.js';
import { apiMessages } from '../messages.js';
import type { Now, Sleep } from '../time/clock.js';
import { deadline, within } from '../time/deadline.js';
import { recordUpstream } from '../metrics.js';
import type { UpstreamOperation } from '../status/names.js';
import { backoffMs, MAX_RETRY_AFTER_SECONDS, retryAfterSeconds, upstreamSummary } from './retry.js';
import type { RateLimiter } from './rate-limit.js';
import type { TokenSource } from './token-source.js';

export interface CallContext {
  userAgent: string;
  fetch: typeof fetch;
  now: Now;
  /** How the waits between attempts wait. */
  sleep: Sleep;
  maxAttempts: number;
  /** Time limit of one attempt in ms, unless the call names its own. */
  timeoutMs: number;
  tokenSource: TokenSource;
}

export interface CallInit {
  method: string;
  body?: string;
  bearer: () => Promise<string> | string;
  /** The bearer is the access token (renewed once when refused), not a transaction token. */
  accessToken?: boolean;
  timeoutMs?: number;
  /** The service's limit the call is under (docs/vendor-contract.md#the-service). */
  limiter?: RateLimiter;
  /** The whole call within `timeoutMs` (slot waits, backoffs and every attempt), not each attempt. */
  wholeCall?: boolean;
}

/** A call to the service, named by its operation: the `upstream` metric's closed list (status/names.ts). */
export type Call = (
  operation: UpstreamOperation,
  url: string,
  init: CallInit,
  repeatable: boolean,
) => Promise<Response>;

export function createCall(context: CallContext): Call {
  const { userAgent, fetch: doFetch, now, sleep: sleepFor, maxAttempts, timeoutMs, tokenSource } = context;
  // Typed by Call: the operation is one of the metric's list.
  return async function call(operation, url, init, repeatable) {
    let lastError: DeviceRiskError | undefined;
    let refreshedToken = false;
    // Waits before the next attempt; after the last one there is nothing to wait for.
    const wait = (attempt: number, ms: number) => (attempt < maxAttempts ? sleepFor(ms) : undefined);
    const attemptMs = init.timeoutMs ?? timeoutMs;
    const started = now();
    const endsAt = started + attemptMs;
    // The limit's waits take at most half the time limit: the request keeps the other half.
    const waitEndsAt = started + attemptMs / 2;
    const callLimit = deadline(attemptMs);
    let waitedUntil: number | undefined;
    try {
      for (let attempt = 1; attempt <= maxAttempts; attempt++) {
        let response: Response;
        // A limited whole call's retry past half its limit would get its slot too late to
        // send (below): the time went on the earlier attempts, so their failure is the answer,
        // not the store's lateness, and no slot is taken for nothing.
        if (init.limiter && init.wholeCall && lastError && now() > waitEndsAt) throw lastError;
        const answered = init.limiter
          ? await init.limiter.acquire(callLimit.signal, endsAt, { waitEndsAt, operation, waitedUntil })
          : undefined;
        if (answered && init.wholeCall && now() > waitEndsAt) {
          // The store answered so late (a Redis frozen a while) that the request would be
          // left too little of its time: one that timed out might still have been made
          // (an orphan). Nothing is sent; the next attempt tries again.
          void answered();
          throw new DeviceRiskError(ERR_STORE_UNAVAILABLE, apiMessages.limitTooLate(operation), {
            retryAfter: 1,
            operation: 'store',
          });
        }
        const limit = deadline(init.wholeCall ? Math.max(0, endsAt - now()) : attemptMs);
        let bearer: string | undefined;
        try {
          bearer = await init.bearer();
          response = await doFetch(url, {
            method: init.method,
            headers: {
              authorization: `Bearer ${bearer}`,
              accept: 'application/json',
              'user-agent': userAgent,
              // On every call, with a body or not: the service lists it as required on each
              // (docs/vendor-contract.md#every-call).
              'content-type': 'application/json',
            },
            ...(init.body === undefined ? {} : { body: init.body }),
            redirect: 'manual',
            signal: limit.signal,
          });
          // The body is read by the caller: the limit covers it too.
          const body = await within(response.arrayBuffer(), limit.signal);
          const { status, statusText, headers } = response;
          recordUpstream(operation, status);
          response = new Response([101, 204, 205, 304].includes(status) ? null : body, { status, statusText, headers });
        } catch (cause) {
          // Before any wait for a retry: the slot's window runs from the failure. Not waited
          // for: a store that is slow to answer must not hold up what the call does next
          // (until the release lands, the slot stays held, never shorter).
          void answered?.();
          if (cause instanceof DeviceRiskError) throw cause; // from the token source
          recordUpstream(operation, ERR_NETWORK);
          lastError = new DeviceRiskError(ERR_NETWORK, apiMessages.callFailed(operation, limit.expired), {
            operation,
            cause,
          });
          if (!repeatable) throw lastError;
          await wait(attempt, backoffMs(attempt));
          continue;
        } finally {
          limit.clear();
        }
        void answered?.();
        if (response.ok) return response;
        const summary = await upstreamSummary(response);
        const retryAfter = retryAfterSeconds(response, now);
        if (response.status === 401 && init.accessToken && !refreshedToken) {
          // The cached access token may have been revoked or expired early: get a new one once.
          refreshedToken = true;
          await tokenSource.invalidate(bearer);
          attempt--;
          continue;
        }
        if (response.status === 429 || (response.status >= 500 && repeatable)) {
          lastError = new DeviceRiskError(
            response.status === 429 ? ERR_RATE_LIMITED : ERR_UPSTREAM,
            apiMessages.answered(operation, response.status, summary),
            { operation, status: response.status, retryAfter },
          );
          const waitMs = backoffMs(attempt, retryAfter, MAX_RETRY_AFTER_SECONDS);
          if (response.status === 429 && init.limiter) {
            // Every instance backs off, not only this one; this one waits here, unless the
            // wait would outlast the call: then the 429 is the answer, with its Retry-After
            // (after the last attempt, wait() waits for nothing).
            waitedUntil = await init.limiter.backOff(waitMs);
            if (now() + waitMs >= waitEndsAt) throw lastError;
          }
          await wait(attempt, waitMs);
          continue;
        }
        throw new DeviceRiskError(
          response.status >= 500 ? ERR_UPSTREAM : ERR_REQUEST_REJECTED,
          apiMessages.answered(operation, response.status, summary),
          { operation, status: response.status, retryAfter },
        );
      }
      throw lastError!;
    } finally {
      callLimit.clear();
    }
  };
}
