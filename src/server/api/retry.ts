/**
 * The retry policy of every call to the service (token requests and API calls alike): how
 * long to wait before the next attempt, and what an error answer says about it.
 */
import { systemNow, type Now } from '../time/clock.js';

/** The longest Retry-After waited for by default, in seconds. */
export const MAX_RETRY_AFTER_SECONDS = 30;

/** The first backoff's longest wait, in ms; each attempt doubles it. */
const BASE_BACKOFF_MS = 250;

/**
 * `firstMs` doubled `attempt` times, at most `maxMs`: the schedule of every backoff of the
 * server kit (the service's calls below, the callbacks' retries and their store writes).
 */
export function doublingMs(attempt: number, firstMs: number, maxMs = Infinity): number {
  return Math.min(maxMs, firstMs * 2 ** attempt);
}

/**
 * The wait before attempt `attempt + 1`: the service's Retry-After when it gave one (at most
 * `maxRetryAfterSeconds`), else exponential backoff with full jitter, so that a fleet that
 * failed together does not retry together.
 */
export function backoffMs(attempt: number, retryAfter?: number, maxRetryAfterSeconds = Infinity): number {
  if (retryAfter !== undefined) return Math.min(retryAfter, maxRetryAfterSeconds) * 1000;
  return Math.random() * doublingMs(attempt, BASE_BACKOFF_MS);
}

/** Seconds from a Retry-After header (delta or HTTP date); undefined when absent. */
export function retryAfterSeconds(response: Response, now: Now = systemNow): number | undefined {
  const header = response.headers.get('retry-after');
  // Stryker disable next-line ConditionalExpression: an absent header parses as neither form and gives undefined anyway; this only says so first
  if (!header) return undefined;
  // Headers strip a value's surrounding whitespace already.
  if (/^\d+$/.test(header)) return Number(header);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now()) / 1000));
}

/** The problem title or OAuth error code of an error answer, for messages (never the body). */
export async function upstreamSummary(response: Response): Promise<string> {
  try {
    const body = (await response.clone().json()) as { title?: unknown; detail?: unknown; error?: unknown };
    const text = [body.error, body.title, body.detail]
      .filter((v) => typeof v === 'string' && v.length < 200)
      .join(': ');
    return text ? ` (${text})` : '';
  } catch {
    return '';
  }
}
