/**
 * The words of the server kit's errors and refusals, in one place, as src/browser/messages.ts
 * holds the browser's. A message names the option, the status or the id at fault and never
 * carries a secret or a body (errors.ts): callers pass only codes, numbers, ids and
 * addresses. Held here so far: errors.ts, http.ts, node.ts, secure-url.ts, time-limit.ts,
 * store/ and callbacks/; the other folders keep theirs beside the code until they move here.
 */

/** The first words of every message of the kit, so that a log line says whose it is. */
export const MESSAGE_PREFIX = '[blackbox-capture/server] ';

/** http.ts: a body that did not arrive within its time limit (the error, then the answer). */
export const httpMessages = {
  bodyTimeout: (ms: number) => `the request body did not arrive within ${ms} ms`,
  bodyTimeoutAnswer: (ms: number) => `The body did not arrive within ${ms} ms`,
};

/** secure-url.ts: a configured address that is not one, or not a safe one. */
export const urlMessages = {
  notAUrl: (option: string) => `${option} is not a URL`,
  credentials: (option: string) => `${option} must not carry credentials`,
  insecure: (option: string, origin: string) =>
    `${option} must use https (plain http is allowed only on loopback addresses): ${origin}`,
};

/** time-limit.ts: an onResult that outlived its time. */
export const timeLimitMessages = {
  onResultUnsettled: (ms: number) => `onResult did not settle within ${ms} ms`,
};

/** node.ts: a request the Node adapter cannot turn into a web-standard one, and its last resort. */
export const nodeMessages = {
  methodNotServed: (method: string | undefined) => `${method} is not served here`,
  badHost: 'the Host header is not a host name',
  badTarget: 'the request target is not a path',
  bodyAlreadyRead:
    'the request body was read by another parser before this handler: mount it before body parsers, or give them this media type (Fastify: toFastifyHandler, not toNodeHandler)',
  internalError: 'internal error',
};

/** store/store.ts: the memory store full, and a shared store slow or failing. */
export const storeMessages = {
  memoryFull: (maxEntries: number) =>
    `the memory store holds ${maxEntries} entries, none expired: use a shared store (createRedisStore) or a larger maxEntries`,
  timeoutOption: 'storeTimeoutMs must be a positive number of milliseconds',
  noAnswer: (ms: number) => `the shared store did not answer within ${ms} ms`,
  failed: (what: string) => `the shared store failed (${what}); retry shortly`,
};

/** store/redis.ts: a Redis client or server the store cannot rely on (docs/fleet.md). */
export const redisMessages = {
  notText: (command: string) => `the Redis client answered ${command} with neither a string nor bytes`,
  ignoredNx:
    'the Redis client ignored SET ... NX (node-redis 4 takes other options): createRedisStore needs node-redis 5 or later, or ioredis 5 or later',
  ignoredPx:
    'the Redis client ignored SET ... PX, so keys would never expire: createRedisStore needs node-redis 5 or later, or ioredis 5 or later',
  mayEvict: (policy: string) =>
    `Redis may evict the store's keys (maxmemory-policy ${policy}): leases and records would vanish and checkouts be doubled. Set maxmemory-policy noeviction (redis.conf, or CONFIG SET maxmemory-policy noeviction); a full Redis then refuses writes, which the kit answers with 503 and Retry-After`,
  notAClient: (method: string) =>
    `createRedisStore needs a node-redis (5 or later) or ioredis (5 or later) client; this one has no ${method}()`,
};

/** callbacks/: its options, the callback's shape, its refusals and its outcomes. */
export const callbackMessages = {
  onResultRequired: 'onResult is required: it receives each result',
  allowedSourcesRequired:
    "allowedSources is required: the service's callback addresses or ranges, a function, or 'any'",
  notASource: (entry: string) => `allowedSources: "${entry}" is not an address or a CIDR range`,
  positiveMs: (option: string) => `${option} must be a positive number of milliseconds`,
  retryOutlivesRecord: 'retryForMs must be positive and less than recordTtlMs: a record must outlive its retries',
  closed: 'the callback handler was closed',

  /** The callback's shape: `the callback` followed by one of `shape`. */
  invalid: (what: string) => `the callback ${what}`,
  shape: {
    notAnObject: 'is not a JSON object',
    noSentAt: 'lacks a callbackSentAt date',
    badReference: 'has a userReference that is not a string',
    noExecutionId: 'lacks a workflowExecution.id UUID',
    noAccountId: 'lacks an account.id UUID',
    badStatus: (statuses: readonly string[]) => `has a status that is not one of ${statuses.join(', ')}`,
    noDefinitionKey: 'lacks workflowExecution.definitionKey',
    executionOff: (origin: string) => `has a workflowExecution.href off ${origin} or of another execution`,
    accountOff: (origin: string) => `has an account.href off ${origin} or of another account`,
  },

  /** A refusal told to onError: its status, its code and why. */
  refused: (status: number, code: string, why: string) => `a callback was refused with ${status} ${code}: ${why}`,
  usePost: 'Use POST',
  sourceRefused: 'This address may not send callbacks',
  sourceNotAllowed: (address: string) => `its caller address ${address} is not allowed by allowedSources`,
  noCallerAddress:
    'no caller address was given (pass { clientAddress } as the second argument; a route handler must take it from a header its own proxy sets)',
  sendJson: 'Send JSON',
  tooLarge: (bytes: number) => `The body is larger than ${bytes} bytes`,
  notJson: 'The body must be JSON',
  tooMany: 'Too many callbacks at once; send it again later',
  tooManyUntagged: (executionId: string) =>
    `more than untaggedCallbacks allows of callbacks without the kit's reference (execution ${executionId})`,
  notRecorded: 'The callback could not be recorded; send it again',

  undelivered: (ids: ExecutionIds, status: string, attempts: number, retryForMs: number) =>
    `the result of workflow execution ${ids.workflowExecutionId} (account ${ids.accountId}, ${status}) was not delivered: onResult or the details failed for ${attempts} attempts over ${retryForMs} ms`,
  unknownExecution: (ids: ExecutionIds) =>
    `a callback for workflow execution ${ids.workflowExecutionId} (account ${ids.accountId}) was dropped: the service does not know that execution for this tenant`,
  pendingContended: (tries: number) =>
    `the list of pending callbacks changed under ${tries} writes in a row; retry shortly`,
};

interface ExecutionIds {
  accountId: string;
  workflowExecutionId: string;
}
