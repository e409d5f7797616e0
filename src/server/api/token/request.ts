/**
 * One client-credentials request to the token service, with its retries: within one time
 * limit for the whole call (rate-limit slots, the fleet's backoff and Retry-After waits
 * included); 429 waits and retries, 5xx and network failures back off, 400/401/403 fail at once.
 */
import {
  DeviceRiskError,
  ERR_INVALID_RESPONSE,
  ERR_NETWORK,
  ERR_RATE_LIMITED,
  ERR_TOKEN_REJECTED,
  ERR_UPSTREAM,
} from '../../errors.js';
import { tokenMessages } from '../../messages.js';
import type { Now, Sleep } from '../../time/clock.js';
import { deadline, within } from '../../time/deadline.js';
import { recordUpstream } from '../../metrics.js';
import { backoffMs, retryAfterSeconds, upstreamSummary } from '../retry.js';
import type { RateLimiter } from '../rate-limit.js';
import { TOKEN_LIFETIME_BOUNDS, tokenLifetimeSeconds, type TokenCache } from './cache.js';
import type { CachedToken } from '../token-source.js';

export interface TokenRequestContext {
  tokenUrl: string;
  /** The HTTP Basic header of the client credentials. */
  authorization: string;
  userAgent: string;
  fetch: typeof fetch;
  now: Now;
  /** How retries and 429 backoffs wait. */
  pause: Sleep;
  maxAttempts: number;
  timeoutMs: number;
  maxRetryAfterMs: number;
  limiter: RateLimiter;
  cache: TokenCache;
}

/**
 * What a token call made within `limit` fails with: the caller's abort reason as it is, a
 * failure the time limit caused (an abort, not one of ours) as `timedOut(cause)`, else the error.
 */
export function failureWithin(
  error: unknown,
  limit: { readonly expired: boolean },
  timedOut: (cause: unknown) => DeviceRiskError,
  callerSignal?: AbortSignal,
): unknown {
  if (callerSignal?.aborted && error === callerSignal.reason) return error;
  if (limit.expired && !(error instanceof DeviceRiskError)) return timedOut(error);
  return error;
}

export function createTokenRequest(context: TokenRequestContext): (callerSignal?: AbortSignal) => Promise<string> {
  const { tokenUrl, now, maxAttempts, timeoutMs, limiter } = context;
  // Called as a plain function: workerd's fetch refuses a `this` other than the global
  // ("Illegal invocation"), which `context.fetch(…)` would give it.
  const { fetch: doFetch } = context;

  async function requestToken(callerSignal?: AbortSignal): Promise<string> {
    // One limit for the whole call: rate-limit slots, backoff and Retry-After waits included.
    const limit = deadline(timeoutMs, callerSignal);
    const { signal } = limit;
    const timedOut = (cause?: unknown) =>
      new DeviceRiskError(ERR_NETWORK, tokenMessages.noToken(new URL(tokenUrl).origin, timeoutMs), {
        operation: 'token',
        cause,
      });
    /** Waits before the next attempt, unless it would outlast the time limit or none is left: then the last error stands. */
    const wait = async (ms: number, error: DeviceRiskError) => {
      if (attempt >= maxAttempts || now() + ms >= started + timeoutMs) throw error;
      await context.pause(ms, signal);
    };
    const started = now();
    let lastError: DeviceRiskError | undefined;
    let attempt = 0;
    try {
      for (attempt = 1; attempt <= maxAttempts; attempt++) {
        const answered = await limiter.acquire(signal, started + timeoutMs);
        let response: Response;
        try {
          response = await doFetch(tokenUrl, {
            method: 'POST',
            headers: {
              authorization: context.authorization,
              accept: 'application/json',
              'content-type': 'application/x-www-form-urlencoded',
              'user-agent': context.userAgent,
            },
            body: 'grant_type=client_credentials',
            redirect: 'manual',
            signal,
          });
          // Read here, within the limit: a body read can outlive an abort (deadline.ts).
          const body = await within(response.arrayBuffer(), signal);
          response = new Response([204, 205, 304].includes(response.status) ? null : body, {
            status: response.status,
            statusText: response.statusText,
            headers: response.headers,
          });
          await answered();
        } catch (cause) {
          // Before any wait for a retry: the slot's second runs from the failure.
          await answered();
          recordUpstream('token', ERR_NETWORK);
          if (callerSignal?.aborted) throw callerSignal.reason;
          if (limit.expired) throw timedOut(cause);
          lastError = new DeviceRiskError(ERR_NETWORK, tokenMessages.networkError(new URL(tokenUrl).origin), {
            operation: 'token',
            cause,
          });
          await wait(backoffMs(attempt), lastError);
          continue;
        }
        recordUpstream('token', response.status);
        if (response.ok) {
          const body = (await response.json().catch(() => undefined)) as
            { access_token?: unknown; expires_in?: unknown; token_type?: unknown } | undefined;
          if (
            typeof body?.access_token !== 'string' ||
            !body.access_token ||
            typeof body.token_type !== 'string' ||
            body.token_type.toLowerCase() !== 'bearer'
          ) {
            throw new DeviceRiskError(ERR_INVALID_RESPONSE, tokenMessages.notAToken, {
              operation: 'token',
              status: response.status,
            });
          }
          const lifetime = tokenLifetimeSeconds(body.expires_in);
          if (lifetime === undefined) {
            throw new DeviceRiskError(
              ERR_INVALID_RESPONSE,
              tokenMessages.badLifetime(body.expires_in, TOKEN_LIFETIME_BOUNDS.min),
              {
                operation: 'token',
                status: response.status,
              },
            );
          }
          const issuedAt = now();
          const lifetimeMs = lifetime * 1000;
          const token: CachedToken = { accessToken: body.access_token, issuedAt, expiresAt: issuedAt + lifetimeMs };
          await context.cache.save(token, lifetimeMs);
          return body.access_token;
        }
        const summary = await upstreamSummary(response);
        const retryAfter = retryAfterSeconds(response, now);
        if (response.status === 429) {
          lastError = new DeviceRiskError(ERR_RATE_LIMITED, tokenMessages.rateLimited(summary), {
            status: 429,
            operation: 'token',
            retryAfter,
          });
          const waitMs = backoffMs(attempt, retryAfter);
          // Every instance backs off, not only this one.
          await limiter.backOff(waitMs);
          // A long Retry-After is the service's answer for now: say so at once instead of stalling every caller.
          if (retryAfter !== undefined && retryAfter * 1000 > context.maxRetryAfterMs) throw lastError;
          if (attempt >= maxAttempts || now() + waitMs >= started + timeoutMs) throw lastError;
          // The shared backoff at the top of the loop waits it out, as every other instance does.
          continue;
        }
        if (response.status >= 500) {
          lastError = new DeviceRiskError(ERR_UPSTREAM, tokenMessages.answered(response.status, summary), {
            status: response.status,
            operation: 'token',
          });
          // Its Retry-After, when it gives one (at most the longest the kit waits), as the service's calls do.
          await wait(backoffMs(attempt, retryAfter, context.maxRetryAfterMs / 1000), lastError);
          continue;
        }
        // 3xx (redirects are not followed), 400, 401, 403: retrying cannot help.
        throw new DeviceRiskError(ERR_TOKEN_REJECTED, tokenMessages.refused(response.status, summary), {
          status: response.status,
          operation: 'token',
        });
      }
      throw lastError!;
    } catch (error) {
      throw failureWithin(error, limit, timedOut, callerSignal);
    } finally {
      limit.clear();
    }
  }

  return requestToken;
}
