/**
 * Delivery of the final blackbox to the integrator's endpoint: JSON POST with an
 * Idempotency-Key that stays the same across retries, so the server makes one
 * transaction however often the request arrives. Loaded only when `post` is used.
 */
import type { CaptureOutcome } from '../shared/types.js';
import type { NormalizedPost } from './options.js';
import { retryAfterMs } from './retry-after.js';

/** Why delivery failed, for the core to turn into a `post_failed` error (this chunk imports nothing from it). */
export interface DeliveryFailure {
  /**
   * "network error", "no answer within N ms", or "HTTP 403" followed by the answer's body (the
   * messages read its code); "body" when the request body could not be built; '' from the core
   * when this chunk did not load.
   */
  detail: string;
  status?: number | undefined;
  cause?: unknown;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    // An abort that landed while an answer was being read has fired already: no listener would hear it.
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    // Stryker disable ObjectLiteral,BooleanLiteral: a second call of the listener finds the promise settled; `once` only frees it sooner
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
    // Stryker restore ObjectLiteral,BooleanLiteral
  });
}

/**
 * POSTs the blackbox; retries network errors, 5xx and 429 with exponential
 * backoff and full jitter (Retry-After wins when given, up to 20 s), never other
 * 4xx. Rejects with a `DeliveryFailure` (the core makes it a `post_failed` error
 * carrying the blackbox); rethrows the signal's reason when aborted.
 */
export async function deliver(
  blackbox: string,
  post: NormalizedPost,
  outcome: CaptureOutcome,
  signal?: AbortSignal,
  capturedAt?: number,
  body?: unknown,
): Promise<Response> {
  const { url, headers, orderToken, credentials = 'same-origin', maxAttempts = 4, timeoutMs = 10_000 } = post;
  // randomUUID needs a secure context; the key only has to be unique.
  const key =
    crypto.randomUUID?.() ??
    Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
  let json: string;
  try {
    // The JSON body unless `post.body` builds another: the outcome, the capture nonce and when the
    // blackbox became final, so that the server can tell its age (left out when there is none:
    // JSON has no undefined), travel with the blackbox.
    json = JSON.stringify(
      body ?? (post.body ? post.body(blackbox, outcome) : { blackbox, outcome, nonce: post.captureNonce, capturedAt }),
    );
  } catch (cause) {
    // A `post.body` that throws, or builds what JSON cannot hold (a BigInt): said, with its cause.
    // (The message's words are the messages chunk's: deliveryDetail.)
    const failure: DeliveryFailure = { detail: 'body', cause };
    throw failure;
  }
  const init = {
    method: 'POST',
    // The gateway's order token (`orderToken`), when there is one, as its Order-Token header.
    headers: {
      ...headers,
      ...(orderToken && { 'order-token': orderToken }),
      'content-type': 'application/json',
      'idempotency-key': key,
    },
    body: json,
    credentials,
    // A page being left still delivers. Browsers refuse a keep-alive body over 64 KiB (in flight,
    // all requests together): a larger one goes without (docs/browser.md#delivery-limits). At
    // most 3 bytes a character in UTF-8: under 20,000 characters fit whatever they are.
    keepalive: json.length < 2e4,
  };
  let detail: string;
  let status: number | undefined;
  let cause: unknown;
  for (let attempt = 1; ; attempt++) {
    // Aborted before this attempt (a call that ended as its delivery began): nothing is sent.
    if (signal?.aborted) throw signal.reason;
    let wait = NaN;
    const controller = new AbortController();
    const abort = () => controller.abort(signal!.reason);
    signal?.addEventListener('abort', abort);
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    // The attempt's time limit holds even for a `post.fetch` that ignores its signal.
    const expired = new Promise<never>((_, reject) =>
      controller.signal.addEventListener('abort', () => reject(controller.signal.reason)),
    );
    try {
      const response = await Promise.race([
        (post.fetch ?? fetch)(url, { ...init, signal: controller.signal }),
        expired,
      ]);
      if (response.ok) return response;
      cause = undefined;
      // The body too: the message names the server's error code (a body that cannot be read is a network error).
      detail = 'HTTP ' + (status = response.status) + (await Promise.race([response.text(), expired]));
      // A 409 that says the server is still working on this key (another attempt, maybe on another
      // instance): its Retry-After, or its code where a cross-origin answer hides the header. Any
      // other 409 (an order already checked, a service's refusal) is final.
      const inUse = response.headers.has('retry-after') || detail.includes('idempotency_key_in_use');
      if (status === 409 ? !inUse : status !== 429 && status < 500) break;
      wait = retryAfterMs(response);
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      cause = error;
      status = undefined;
      detail = controller.signal.aborted ? `no answer within ${timeoutMs} ms` : 'network error';
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', abort);
    }
    if (attempt >= maxAttempts) break;
    await sleep(Math.min(20_000, wait >= 0 ? wait : Math.random() * 300 * 2 ** attempt), signal);
  }
  const failure: DeliveryFailure = { detail, status, cause };
  throw failure;
}

/**
 * A capture that produced no final blackbox, told to the same endpoint as `{ outcome }`:
 * one attempt and one retry, kept alive if the page goes. Its answer is not waited for by
 * anyone, and its failure is not reported (the capture's own error is).
 */
export function report(post: NormalizedPost, outcome: CaptureOutcome): Promise<Response> {
  // Stryker disable next-line StringLiteral: with a body given, the blackbox argument is not read
  return deliver('', { ...post, maxAttempts: Math.min(2, post.maxAttempts ?? 2) }, outcome, undefined, 0, { outcome });
}
