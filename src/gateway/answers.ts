/**
 * The codes the gateway answers, by route, with their HTTP statuses and what each means to the
 * caller: the one list. src/gateway/openapi.json's code schemas (CheckoutCode, CallbackCode,
 * DecisionsCode, FailureCode) and docs/gateway.md's table of codes are written from it
 * (`node scripts/reference-docs.mjs --write`); test/gateway/openapi.test.ts holds it to the
 * kit's lists of codes, and test/gateway/openapi.emulator.test.ts to the running gateway's
 * answers.
 */

/** What the browser package does after the answer: the sentence that ends its description. */
const AFTER = {
  final: 'Final: the browser package does not post again.',
  passing:
    'Passing: the browser package posts again with the same Idempotency-Key after Retry-After (at most 20 s, 4 attempts in all).',
} as const;

export interface CodeAnswer {
  readonly code: string;
  /** The HTTP statuses it comes with; none for a code that is told, not answered (FailureCode). */
  readonly status?: readonly number[];
  readonly description: string;
  readonly after?: keyof typeof AFTER;
}

/** The full description of an answer, as the OpenAPI document and the docs give it. */
export const describeAnswer = (answer: CodeAnswer): string =>
  answer.after ? `${answer.description} ${AFTER[answer.after]}` : answer.description;

/** POST /device-risk: the checkout. */
export const CHECKOUT_CODES: readonly CodeAnswer[] = [
  {
    code: 'method_not_allowed',
    status: [405],
    description: 'The route takes another method (its Allow header names it).',
    after: 'final',
  },
  {
    code: 'origin_not_allowed',
    status: [403],
    description: 'The Origin header is missing or not one of ALLOWED_ORIGINS.',
    after: 'final',
  },
  {
    code: 'unsupported_media_type',
    status: [415],
    description: 'The body is not sent as application/json.',
    after: 'final',
  },
  { code: 'body_too_large', status: [413], description: 'The body is over 16 KiB.', after: 'final' },
  {
    code: 'body_timeout',
    status: [408],
    description:
      'The body did not arrive within 10 s. The connection is closed; the browser package does not post again (a 4xx).',
  },
  {
    code: 'invalid_blackbox',
    status: [400],
    description:
      'The body is not JSON, or its blackbox is missing, too long (over 8,001 characters) or off its alphabet.',
    after: 'final',
  },
  {
    code: 'blackbox_damaged',
    status: [400],
    description:
      'The blackbox was damaged on its way (by form or URL code) where no lossless repair exists; the message names the cause.',
    after: 'final',
  },
  {
    code: 'blackbox_reused',
    status: [422],
    description:
      'The blackbox was already used for another Idempotency-Key within the trust bound: a device check on it would not be the check of this checkout. The page captures afresh (a full load of the checkout).',
    after: 'final',
  },
  {
    code: 'invalid_idempotency_key',
    status: [400],
    description: 'The Idempotency-Key is not 8 to 200 printable ASCII characters.',
    after: 'final',
  },
  { code: 'order_token_missing', status: [401], description: 'The request has no Order-Token header.', after: 'final' },
  {
    code: 'order_token_invalid',
    status: [401],
    description:
      'The Order-Token is not an HS256 JWT signed with ORDER_SECRET, has no exp or one more than an hour ahead, or its sub is missing or no string, or its uref (1 to 100 UTF-16 code units of text) malformed.',
    after: 'final',
  },
  {
    code: 'order_token_expired',
    status: [401],
    description: "The Order-Token's exp has passed: render the page again with a new token.",
    after: 'final',
  },
  {
    code: 'order_token_sub_invalid',
    status: [422],
    description: `The Order-Token is authentic, but its sub (the order's customerInternalReference) breaks the service's rule: 1 to 100 UTF-16 code units of text (no half of a surrogate pair), none of < > " / ; \` % { } |; nor is it . or .. (no URL path could poll it at GET /decisions). Refused before anything is accepted; the log says which rule.`,
    after: 'final',
  },
  {
    code: 'too_many_checkouts',
    status: [429],
    description: 'One address or one order started more checkouts than its admission limit allows, before any cost.',
    after: 'passing',
  },
  {
    code: 'too_many_reports',
    status: [429],
    description: 'Outcome-only reports (a capture with no blackbox) past their rate bound.',
    after: 'passing',
  },
  {
    code: 'idempotency_key_reused',
    status: [422],
    description: 'The Idempotency-Key was used with another body or another order.',
    after: 'final',
  },
  {
    code: 'idempotency_key_in_use',
    status: [409],
    description: 'A check under this key is still running (on this or another instance).',
    after: 'passing',
  },
  {
    code: 'order_already_checked',
    status: [409],
    description:
      "The order (the Order-Token's sub) already has a checkout of its own under another Idempotency-Key: one order, one check, one outcome (its decision or its device_risk.failed). A retry under the first key gets the first answer.",
    after: 'final',
  },
  {
    code: 'blackbox_stale',
    status: [410],
    description: 'The check under this key could not start within the trust bound (15 minutes) and never will.',
    after: 'final',
  },
  {
    code: 'invalid_account_request',
    status: [422],
    description:
      "The service's account rules refuse the order (customerInternalReference, userReference, callbackUrl), checked before the call.",
    after: 'final',
  },
  {
    code: 'request_rejected',
    status: [400, 401, 403, 404, 409, 410, 422],
    description: 'The service refused the request for good: its own 4xx status is passed on.',
    after: 'final',
  },
  {
    code: 'customer_lookup_failed',
    status: [500],
    description:
      'The order could not be resolved. The browser package posts again, as after any 5xx (no Retry-After: its own backoff); the same answer is likely.',
  },
  {
    code: 'invalid_configuration',
    status: [500],
    description:
      "The gateway's configuration is refused by the service's rules. The browser package posts again, as after any 5xx (no Retry-After: its own backoff); the same answer is likely.",
  },
  {
    code: 'forged_address',
    status: [500],
    description:
      'The service named an upload or finalize address off its API host: not followed. The browser package posts again, as after any 5xx (no Retry-After: its own backoff); the same answer is likely.',
  },
  { code: 'internal_error', status: [502], description: 'A failure of no kind the kit knows.', after: 'passing' },
  {
    code: 'shutting_down',
    status: [503],
    description:
      'The gateway is stopping (SIGTERM) and takes no new checkout; another instance, or this one restarted, takes the retry.',
    after: 'passing',
  },
  {
    code: 'queue_full',
    status: [503],
    description: 'The queue holds as many checks as can start within the trust bound.',
    after: 'passing',
  },
  {
    code: 'store_unavailable',
    status: [503],
    description:
      "The shared store (REDIS_URL) or the gateway's data folder cannot be reached. Passing: the browser package posts again with the same Idempotency-Key after Retry-After (at most 20 s, 4 attempts in all). Passing: the service posts the callback again, if it resends.",
  },
  { code: 'store_full', status: [503], description: 'Redis is at its maxmemory.', after: 'passing' },
  {
    code: 'rate_limited',
    status: [503],
    description: "The service's rate limit, for longer than the gateway waits.",
    after: 'passing',
  },
  { code: 'network_error', status: [503], description: 'The service could not be reached.', after: 'passing' },
  {
    code: 'upstream_error',
    status: [502, 503],
    description: 'The service answered with a 5xx (503 when it asked for time).',
    after: 'passing',
  },
  {
    code: 'token_rejected',
    status: [502],
    description: "The service refused the gateway's client credentials.",
    after: 'passing',
  },
  {
    code: 'invalid_response',
    status: [502],
    description: "The service's answer was not what it documents.",
    after: 'passing',
  },
  {
    code: 'no_device_risk_credential',
    status: [502],
    description: 'The workflow (WORKFLOW_KEY) has no Device Risk credential.',
    after: 'passing',
  },
  { code: 'insecure_url', status: [502], description: 'An address of the service is not https.', after: 'passing' },
  {
    code: 'transaction_token_expired',
    status: [502],
    description: 'The transaction token lapsed before the call.',
    after: 'passing',
  },
  {
    code: 'orphaned_transaction',
    status: [502],
    description: 'A transaction whose record was lost.',
    after: 'passing',
  },
  { code: 'aborted', status: [502], description: 'The check was aborted.', after: 'passing' },
];

/** An answer of the checkout's that the callback route gives too; the service, not the browser, gets it. */
function sameAsCheckout(code: string): CodeAnswer {
  const answer = CHECKOUT_CODES.find((entry) => entry.code === code);
  if (!answer) throw new Error(`no checkout answer ${code}`);
  return { code: answer.code, description: answer.description, ...(answer.status ? { status: answer.status } : {}) };
}

/** POST /callback: the service's callback. */
export const CALLBACK_CODES: readonly CodeAnswer[] = [
  sameAsCheckout('method_not_allowed'),
  sameAsCheckout('unsupported_media_type'),
  sameAsCheckout('body_too_large'),
  sameAsCheckout('body_timeout'),
  sameAsCheckout('store_unavailable'),
  {
    code: 'source_not_allowed',
    status: [403],
    description: 'The callback came from an address off CALLBACK_SOURCES.',
    after: 'final',
  },
  {
    code: 'invalid_callback',
    status: [400],
    description: "The callback body is not the documented one (UUIDs, status, hrefs on the region's retrieval host).",
    after: 'final',
  },
  {
    code: 'too_many_callbacks',
    status: [503],
    description:
      "More callbacks without the kit's reference than the gateway takes at once. Passing: the service posts the callback again, if it resends.",
  },
];

/** GET /decisions/{customerInternalReference}: a decision polled. */
export const DECISIONS_CODES: readonly CodeAnswer[] = [
  { code: 'invalid_reference', status: [400], description: 'The reference in the path is not valid percent-encoding.' },
  {
    code: 'not_found',
    status: [404],
    description:
      'No such route (on any path the gateway does not serve); also GET /decisions/{customerInternalReference} while DECISIONS_TOKEN is unset.',
    after: 'final',
  },
  {
    code: 'decisions_unauthorized',
    status: [401],
    description: 'The Authorization header is not Bearer DECISIONS_TOKEN.',
    after: 'final',
  },
  { code: 'decision_not_found', status: [404], description: 'No decision for this order yet. Poll again later.' },
  {
    code: 'method_not_allowed',
    status: [405],
    description: 'Another method than GET or HEAD (the Allow header names them).',
    after: 'final',
  },
];

/** The device_risk.failed webhook's reasons: a code of the kit's (NotCheckedError's reason). */
export const FAILURE_CODES: readonly CodeAnswer[] = [
  {
    code: 'request_rejected',
    description: 'The service refused the account create or a later call for good (its 4xx).',
  },
  {
    code: 'invalid_account_request',
    description: "The service's account rules refuse the request (checked before the call).",
  },
  {
    code: 'invalid_configuration',
    description: "The gateway's configuration is refused (WORKFLOW_KEY, CALLBACK_URL...).",
  },
  { code: 'forged_address', description: 'The service named an upload or finalize address off its API host.' },
  {
    code: 'workflow_expired',
    description:
      'Uploaded, but the service let the execution expire before it decided (its transaction token lapsed before its finalize took, or the status read after finalize says SESSION_EXPIRED or TOKEN_EXPIRED).',
  },
  {
    code: 'result_not_ready',
    description:
      "Finalized, but neither the status reads on the documented schedule (10 in all, the last 760 s after the upload) nor a callback brought its decision. A decision the service's callback brings later is sent all the same.",
  },
  {
    code: 'blackbox_stale',
    description:
      'Not checked within the trust bound (15 minutes): lastError names what kept it, e.g. token_rejected (the client credentials are refused: /readyz says so too), network_error, upstream_error, rate_limited.',
  },
  {
    code: 'shutting_down',
    description: "Held in a memory queue when its instance stopped (not with the gateway's own queues, which keep it).",
  },
  {
    code: 'result_undelivered',
    description:
      "The decision could not be kept for the shop: the service's callback came, but its details could not be read or kept for 24 hours (the callbacks' retryForMs), or a queued check's decision could not be kept for 12 hours (half the life of its Idempotency-Key's record). A decision the service's callback brings later is sent all the same.",
  },
  { code: 'internal_error', description: 'A failure of no kind the kit knows.' },
];
