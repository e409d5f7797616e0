/**
 * Delivery of the final blackbox to the integrator's endpoint: JSON POST with an
 * Idempotency-Key that stays the same across retries, so the server makes one
 * transaction however often the request arrives.
 */
import { BlackboxCaptureError } from './errors.js';
import { messages } from './messages.js';
import type { NormalizedPost } from './options.js';

const BASE_DELAY_MS = 300;
const MAX_DELAY_MS = 20_000;

function idempotencyKey(): string {
  const c = globalThis.crypto;
  if (typeof c.randomUUID === 'function') return c.randomUUID();
  // randomUUID needs a secure context; the key only has to be unique.
  const bytes = c.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Retry-After in ms (seconds or an HTTP date); undefined when absent or unreadable. */
function retryAfterMs(response: Response): number | undefined {
  const header = response.headers.get('retry-after');
  if (!header) return undefined;
  const ms = /^\d+$/.test(header) ? Number(header) * 1000 : Date.parse(header) - Date.now();
  return Number.isNaN(ms) ? undefined : Math.max(0, ms);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * POSTs the blackbox; retries network errors, 5xx and 429 with exponential
 * backoff and full jitter (Retry-After wins when given), never other 4xx.
 * Rejects with `post_failed` carrying the blackbox; rethrows the signal's reason
 * when aborted.
 */
export async function deliver(blackbox: string, post: NormalizedPost, signal?: AbortSignal): Promise<Response> {
  const doFetch = post.fetch ?? fetch;
  const headers = { ...post.headers, 'content-type': 'application/json', 'idempotency-key': idempotencyKey() };
  const body = JSON.stringify(post.body(blackbox));
  let detail = '';
  let status: number | undefined;
  let cause: unknown;
  for (let attempt = 1; ; attempt++) {
    let wait: number | undefined;
    const controller = new AbortController();
    const abort = () => controller.abort(signal!.reason);
    signal?.addEventListener('abort', abort, { once: true });
    const timer = setTimeout(() => controller.abort(), post.timeoutMs);
    try {
      const response = await doFetch(post.url, {
        method: 'POST',
        headers,
        body,
        credentials: post.credentials,
        keepalive: true, // a page being left still delivers
        signal: controller.signal,
      });
      if (response.ok) return response;
      status = response.status;
      detail = `HTTP ${status}`;
      cause = undefined;
      if (status !== 429 && status < 500) break;
      wait = retryAfterMs(response);
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      cause = error;
      status = undefined;
      detail = controller.signal.aborted ? `no answer within ${post.timeoutMs} ms` : 'network error';
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', abort);
    }
    if (attempt >= post.maxAttempts) break;
    await sleep(Math.min(MAX_DELAY_MS, wait ?? Math.random() * BASE_DELAY_MS * 2 ** attempt), signal);
  }
  throw new BlackboxCaptureError('post_failed', messages.postFailed(post.url, detail), {
    blackbox,
    url: post.url,
    ...(status === undefined ? {} : { status }),
    ...(cause === undefined ? {} : { cause }),
  });
}
