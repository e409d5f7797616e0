/**
 * Words of the server kit's errors and refusals that several modules say. Unlike
 * src/browser/messages.ts (a lazy chunk, so that a page pays for the words only when something
 * fails), nothing requires a server message to be here: one beside the code that throws it is
 * fine, on an error with a code (the rule and its check: test/house.test.ts). A message names
 * the option, the status or the id at fault and never carries a secret or a body (errors.ts):
 * callers pass only codes, numbers, ids and addresses. The proxy's answers carry a code alone
 * (src/server/proxy/proxy.ts).
 */

/** The first words of every message of the kit, so that a log line says whose it is. */
export const MESSAGE_PREFIX = '[blackbox-capture/server] ';

/** http.ts: a body that did not arrive within its time limit (the error, then the answer). */
export const httpMessages = {
  bodyTimeout: (ms: number) => `the request body did not arrive within ${ms} ms`,
  bodyTimeoutAnswer: (ms: number) => `The body did not arrive within ${ms} ms`,
};

/** api/: the client's options, the requests it refuses to send and the answers it refuses. */
export const apiMessages = {
  userAgentRequired: 'userAgent is required, e.g. "YourCompany YourApp/1.0"',
  regionOrBaseUrl: (regions: readonly string[]) => `give region (${regions.join(', ')}) or baseUrl`,
  unknownRegion: (region: string, regions: readonly string[]) =>
    `region ${JSON.stringify(region)} is not one of ${regions.join(', ')}`,
  limitNotPositive: (name: string) => `limits.${name} must be a positive number`,
  perSecondNotPositive: 'perSecond must be a positive number',

  referenceLength: 'customerInternalReference must be 1 to 100 UTF-16 code units',
  referenceCharacters: 'customerInternalReference must not contain any of < > " / ; ` % { } |',
  referenceUnpaired: (field: string) => `${field} must be text: it holds half of a UTF-16 surrogate pair on its own`,
  definitionKeyRequired: 'workflowDefinition.key is required',
  userReferenceLength: 'userReference must be at most 100 UTF-16 code units',
  callbackUrlLength: 'callbackUrl must be at most 255 characters',
  callbackUrlRule: (rule: string) => `callbackUrl must be ${rule} (the service's rule for callback URLs)`,
  tokenLifetimeShape: 'tokenLifetime must look like "600s", "30m", "12h" or "5d", from 5 minutes to 60 days',
  accountIdNotUuid: 'accountId must be a UUID',
  needsIds: (operation: string) => `${operation} needs the UUIDs of an account and a workflow execution`,
  needsTransaction: (operation: string) => `${operation} needs a transaction from createAccount or updateAccount`,
  transactionExpired: (executionId: string) =>
    `the transaction token of workflow execution ${executionId} has expired; update the account for a new one`,
  blackboxEmpty: 'the blackbox must be a non-empty string',
  blackboxTooLong: (characters: number) => `the blackbox is longer than ${characters} characters`,
  blackboxAlphabet:
    'the blackbox has characters outside its alphabet (A-Z a-z 0-9 + / = @): was it form- or URL-encoded?',

  /** A call that failed: `summary` is the answer's problem title or error code, never its body (retry.ts). */
  callFailed: (operation: string, expired: boolean) =>
    `${operation} failed (${expired ? 'no answer in time' : 'network error'})`,
  answered: (operation: string, status: number, summary: string) => `${operation} answered ${status}${summary}`,
  notJson: (operation: string) => `${operation} answered with something other than JSON`,
  limitTooLate: (operation: string) =>
    `the shared store answered the rate limit of ${operation} too late; retry shortly`,
  rateLimited: (operation: string, why: string) => `${operation}: the service's rate limit reached (${why})`,
  limitSeen: '429, seen by this fleet',
  noSlot: "no slot free within the call's time limit",

  noCredentials: 'the account answer has no credentials array',
  noDeviceRiskCredential:
    'the account answer has no Device Risk credential (category DATA, channel API, api.parts.device_risk or api.parts.prepared_data): does the workflow include Device Risk?',
  noApiToken: 'the Device Risk credential has no api.token',
  addressRefused: (what: string, origin: string) =>
    `refusing the ${what} address: it is not on ${origin} or not of the documented shape`,
  addressesApart: 'the upload and finalize addresses do not belong to the same transaction and credential',
  statusAnswerNoStatus: 'status answer lacks workflowExecution.status',
  detailsNoWorkflow: 'the workflow details lack a workflow object',
  detailsNoStatus: 'the workflow details lack workflow.status',
  waitAborted: (executionId: string) => `waiting for the result of ${executionId} was aborted`,
  endedWithoutResult: (executionId: string, status: string) =>
    `workflow execution ${executionId} ended ${status}: it has no result`,
  stillPending: (executionId: string, status: string, reads: number) =>
    `workflow execution ${executionId} was still ${status} after ${reads} reads`,
  tokenLapsedAfterUpload: (executionId: string, status: string) =>
    `the transaction token of workflow execution ${executionId} lapsed after its upload, before its finalize was known to take; it is ${status}`,
  finalizeConflictAcquired: (executionId: string) =>
    `finalize answered 409 with workflow execution ${executionId} ACQUIRED: finalized and being checked, or about to be; tried again until its status says which`,

  notSealed: 'not a sealed value',
  unsealable: 'a sealed value in the store could not be opened (altered, or sealed with another client secret)',
};

/** api/token-source.ts and api/token/: the token source's options and the token service's answers. */
export const tokenMessages = {
  credentialsRequired: 'clientId and clientSecret are required',
  regionOrTokenUrl: (regions: readonly string[]) => `give region (${regions.join(', ')}) or tokenUrl`,
  noToken: (origin: string, ms: number) => `no token from ${origin} within ${ms} ms`,
  noTokenWhileWaiting: (origin: string, ms: number) =>
    `no token from ${origin} within ${ms} ms (waiting for another instance's request)`,
  networkError: (origin: string) => `token request to ${origin} failed (network error)`,
  notAToken: 'token response lacks access_token or a Bearer token_type',
  badLifetime: (expiresIn: unknown, minSeconds: number) =>
    `token response's expires_in ${JSON.stringify(expiresIn)?.slice(0, 40) ?? typeof expiresIn} is no lifetime of ${minSeconds} s or more: a token kept for it could be expired already`,
  /** `summary` is the answer's OAuth error code or title, never its body (api/retry.ts). */
  rateLimited: (summary: string) => `token service rate limit reached (429)${summary}`,
  answered: (status: number, summary: string) => `token service answered ${status}${summary}`,
  refused: (status: number, summary: string) =>
    `token service refused the client-credentials request with ${status}${summary}`,
};

/**
 * endpoint/: the handler's options, its refusals (an answer's text, capitalised, says what
 * to send instead) and what it tells onError.
 */
export const endpointMessages = {
  nonceSecret: 'the nonce secret must be a string of at least 32 characters',
  reportsPerSecond: 'maxOutcomeReportsPerSecond must be a positive number',
  noWorkflowKey: 'no workflow key: set workflowKey on the handler or in resolveCustomer',
  badRateLimit: (option: string) => `${option} must be false or { burst, perMinute } with positive numbers`,
  maxQueuedChecks: 'maxQueuedChecks must be a positive whole number of checkouts',
  sharedStoreNeedsQueue:
    'a store was given but no queue: accepted checkouts would wait on this instance alone (its default queue) and be lost with it. ' +
    'Give the queue a fleet shares (queue: createBullmqQueue(...) from blackbox-capture/server/bullmq), ' +
    "or answer: 'checked' (each check run within its request), " +
    'or, for one instance on purpose, queue: createMemoryQueue(...) (docs/fleet.md#a-shared-store-needs-a-shared-queue)',
  badAddressPrefix: (option: string) =>
    `${option} must be { ipv4, ipv6 } with whole numbers of bits: ipv4 from 1 to 32, ipv6 from 1 to 128`,
  noCallerAddress:
    'no caller address was given (pass { clientAddress } as the second argument): checkouts are not limited per address',
  memoryQueue:
    "accepted checkouts wait in this process's memory (the default queue where the runtime has no file system): " +
    'a restart or a deploy loses those not yet checked (told to onError as not_checked at close()). ' +
    'A fleet: queue: createBullmqQueue; this on purpose: queue: createMemoryQueue() (docs/fleet.md#the-queue)',
  /** Said once at start by a handler given no queue on a runtime with a file system (queue/default.ts). */
  fileQueue: (path: string) =>
    `accepted checkouts are kept in ${path} until checked (the default queue: a SQLite file, which processes ` +
    'on one directory share): a restart or a deploy on the same directory checks them. Elsewhere: dataDir or ' +
    'BLACKBOX_CAPTURE_DATA_DIR; a fleet: queue: createBullmqQueue (docs/fleet.md#a-single-instance)',
  /** The default queue's directory cannot be used: said at start, and each checkout is refused (503). */
  dataDirUnusable: (dir: string, reason: string) =>
    `dataDir ${dir} cannot be written (${reason}): accepted checkouts would not outlive this process. ` +
    'Give dataDir (or BLACKBOX_CAPTURE_DATA_DIR) a directory this process can write, ' +
    "or queue: createMemoryQueue() to keep them in memory on purpose, or answer: 'checked' (docs/fleet.md#a-single-instance)",
  queueUnusable: 'Checkouts cannot be accepted now: the server cannot keep them (misconfigured); try again later',
  visitorOption:
    'visitor must be a function of the request that returns your visitor id (a session, a cart) or undefined',
  badVisitor: (got: string) =>
    `visitor returned ${got}: it must return a string of 1 to 1024 characters (your session or cart id) or undefined`,
  visitorUnresolved: 'The visitor could not be resolved',
  signedInWithoutAccount:
    'resolveCustomer answered signedIn: true without a userReference: a signed-in checkout takes its turns by its account',

  shuttingDown: 'This server is shutting down; post again (the same Idempotency-Key) in a moment',
  usePost: 'Use POST',
  originRefused: 'This origin may not post blackboxes',
  sendJson: 'Send JSON: Content-Type: application/json',
  tooLarge: (bytes: number) => `The body is larger than ${bytes} bytes`,
  notJson: 'The body must be JSON: { "blackbox": "..." }',
  badKey: 'Idempotency-Key must be 8 to 200 visible ASCII characters',
  keyInUse: 'Another attempt with this Idempotency-Key is still running; retry with the same key',
  staleContended:
    "a checkout past the trust bound was not given up yet: another run of it writes to its key's record, or its blackbox's upload may still land; its job reads the key again shortly",
  keyReused: 'This Idempotency-Key was used with another request',
  staleKey: 'This checkout waited past the trust bound and was not checked; it is not retried',
  customerUnresolved: 'The customer could not be resolved',
  tooManyCheckouts: (what: string) => `Too many checkouts from one ${what}; retry later`,
  tooManyLogged: (what: string) => `a checkout was refused: too many from one ${what}`,
  tooManyReports: 'Too many outcome reports; this one was not recorded',
  nonceMissing: 'This endpoint requires the capture nonce issued with the page',
  nonceExpiredAnswer: 'The capture nonce has expired',
  nonceInvalidAnswer: 'The capture nonce is not valid for this customer',
  nonceReused: 'This capture nonce was used before: a blackbox is checked once',
  blackboxReused:
    'This blackbox was already posted for another checkout: capture again (load the checkout page fully) and post the new one',
  blackboxReusedLogged:
    'a checkout was refused: its blackbox was already used for another Idempotency-Key (a page that navigated without a full load posts its first blackbox again; docs/frameworks.md#one-collection-per-page-run)',
  nonceInvalid: 'the capture nonce is not one this server issued for this customer',
  nonceExpired: 'the capture nonce has expired: issue a new one with the page',
  misconfigured: 'The device-risk check is misconfigured',
  accountRequestRefused: 'The account request for this customer breaks the service rules; retrying will not help',
  serviceRefused: (status: number) =>
    `The device-risk service refused the request (HTTP ${status}); retrying will not help`,
  serviceUnreachable: 'The device-risk service could not be reached; retry with the same Idempotency-Key',
  /** A failure of this server's own (neither the service nor the store): the service is not blamed. */
  internalFailure: 'The device-risk check failed on this server; retry with the same Idempotency-Key',
  workflowExpired: 'The service let this check expire before it was finalized: it will never be checked',
  storeUnavailable: "The shop's shared store could not be reached; retry with the same Idempotency-Key",
  storeFull: "The shop's shared store is full; retry with the same Idempotency-Key",

  brokenPercentEncoding: 'the blackbox is percent-encoded, and its encoding is broken: send it as JSON, unencoded',
  stillDamaged: (repairs: readonly string[], notABlackbox: boolean, reason: string) =>
    `the blackbox was damaged on its way (${repairs.join(', ')}) and is still ${notABlackbox ? 'not a blackbox' : 'invalid'} after repair: ${reason}`,
  resultNotReady: (executionId: string, status: string, waitedMs: number) =>
    `workflow execution ${executionId} was ${status} after ${waitedMs} ms; its callback will tell`,

  /** The idempotency record and its lease (docs/fleet.md): what a lost or slow store means. */
  recordNotTaken:
    'the shared store has not yet taken the transaction this attempt made; it is still being written, and a retry with the same key resumes it',
  keyTakenOver: 'another attempt took this Idempotency-Key over',
  leaseLost: 'this attempt lost its lease on the Idempotency-Key',
  leaseUnconfirmed:
    "the shared store did not confirm this attempt's lease on the Idempotency-Key in time; retry shortly",
  earlierCreateOrphaned:
    'an earlier attempt on this Idempotency-Key stopped with its account create on the wire: that transaction, if made, stays INITIATED without a blackbox',
  createUnanswered:
    'an account create got no answer: the transaction it may have made stays INITIATED without a blackbox',
  createdUnrecorded: (executionId: string) =>
    `workflow execution ${executionId} was created but could not be recorded: it stays INITIATED without a blackbox`,
};

/**
 * endpoint/queued.ts: a checkout the queue refuses (what onError hears, then the answer) and
 * what it tells onError of the backlog (docs/fleet.md#the-queue), in seconds.
 */
export const queuedMessages = {
  behind: (queued: number, drainPerSecond: number, drainSeconds: number, trustBoundMs: number, stale = 0) =>
    `${queued} checks wait and ${drainPerSecond.toFixed(2)} a second finish` +
    (stale > 0 ? ` (${stale} dropped stale in the last minute, unchecked)` : '') +
    `: the newest would wait ${Number.isFinite(drainSeconds) ? `${Math.round(drainSeconds)} s` : 'for ever'}, ` +
    `past the trust bound of ${Math.round(trustBoundMs / 1000)} s. ` +
    'The tenant\u2019s account request limit is the bottleneck: ask the service for a higher contracted limit',
  full: (queued: number | undefined) => `a checkout was refused: the queue holds ${queued ?? 'its most'} checks`,
  fullAnswer: 'Too many checkouts wait for their check; retry with the same Idempotency-Key',
  /** The queue's add refused by its Redis at maxmemory (bullmq.ts), or another failure of the queue's add. */
  redisFull:
    "a checkout was refused: Redis is full (maxmemory) and the queue could not take it. Raise Redis's maxmemory or free memory; the queue takes checkouts again, and drains, once there is room",
  addFailed: 'a checkout was refused: the queue could not take it (its store failed); retry shortly',
  resultNotReady: (workflowExecutionId: string, reads: number, lastSecond: number) =>
    `the decision of workflow execution ${workflowExecutionId} was not there after ${reads} reads (the last ${lastSecond} s after the upload) and no callback brought it: the order is told it has none; a decision a callback brings later is sent all the same`,
  untold: (workflowExecutionId: string, status: string, triedForMs: number) =>
    `the decision of workflow execution ${workflowExecutionId} (${status}) was not told: onResult kept failing for ${Math.round(triedForMs / 60_000)} min (half of idempotencyTtlMs, while the key's record holds the check); the order is told result_undelivered`,
  addUnanswered: (ms: number) =>
    `the queue did not answer an add within ${ms} ms (storeTimeoutMs): the checkout may be held once it answers; answered 503 so that the browser posts again under its key`,
  addLost:
    'the queue lost its answer to an add and could not read the job back: the checkout may be held all the same; answered 503 so that the browser posts again under its key',
  lateAddNotHeld: (result: string) =>
    `an add that did not answer in time came back "${result}": the checkout is not held by it (its browser was answered 503 and posts again under its key)`,
  countsUnanswered: (ms: number) =>
    `the queue did not answer a count within ${ms} ms (storeTimeoutMs): whether a checkout could start within the trust bound is not known, so none is added; retry shortly`,
  addUnconfirmed:
    'a checkout is held but not confirmed by the replicas asked for; answered 503 so that the browser posts again under its key',
  notChecked: (keyStart: string) =>
    `a checkout accepted by this instance was not checked: the handler closed with it still in its memory queue (key ${keyStart}\u2026). ` +
    'Check it another way (its order is on this error), and give a fleet createBullmqQueue so that another instance takes such checkouts',
  givenUp: (keyStart: string, reason: string) =>
    `a checkout accepted (key ${keyStart}\u2026) will never be checked (${reason}): its order is on this error, to tell the shop`,
  stale: (ageMs: number, trustBoundMs: number, keyStart: string) =>
    `a checkout accepted ${Math.round(ageMs / 1000)} s ago was not checked: its blackbox is past the trust bound ` +
    `of ${Math.round(trustBoundMs / 1000)} s and was not uploaded (key ${keyStart}\u2026)`,
};

/** queue/bullmq.ts: what its worker tells onError of its Redis. */
export const bullmqMessages = {
  redisFull: (refusals: number) =>
    `Redis is full (maxmemory): it refused the queue's worker ${refusals} time${refusals === 1 ? '' : 's'}, so checks wait. Raise maxmemory or free memory; the worker drains again by itself once there is room`,
  /** A set-up that cannot work: BullMQ on Redis Cluster without a hash tag (docs/fleet.md#redis-cluster). */
  clusterNeedsHashTag: (prefix: string) =>
    `BullMQ on Redis Cluster needs a hash tag in its prefix ("${prefix}" has none), or every command fails with CROSSSLOT: give createBullmqQueue a prefix such as "{${prefix.replace(/[{}]/g, '') || 'bbc'}}" (the whole queue then lives on one master)`,
  /** `confirmReplicas` on a Cluster client (docs/fleet.md#sentinel). */
  confirmOnCluster:
    'confirmReplicas needs a client of one master (Sentinel or a single server): on Redis Cluster, WAIT would not reach the master that holds the queue',
};

/** proxy/: its options, and a collector answer it will not pass on. */
export const proxyMessages = {
  badPrefix: (example: string) => `prefix must be an absolute path such as "${example}"`,
  collectorUrlQuery: 'collectorUrl must not carry a query or fragment',
  badMethod: (method: string) => `methods may hold GET, HEAD and POST only, not ${method}`,
  badCookieNames: 'cookiePrefix and allowCookies must be cookie names',
  badPublicHost: 'publicHost must be a host name, with a port if any',
  unusableStatus: (status: number) => `the collector answered with status ${status}`,
  aborted: 'aborted',
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

/** adapter/node/: a request the Node adapter cannot turn into a web-standard one, and its last resort. */
export const nodeMessages = {
  methodNotServed: (method: string | undefined) => `${method} is not served here`,
  badHost: 'the Host header is not a host name',
  badTarget: 'the request target is not a path',
  bodyAlreadyRead:
    'the request body was read by another parser before this handler: mount it before body parsers, or give them this media type (Fastify: toFastifyHandler, not toNodeHandler)',
  internalError: 'internal error',
};

/** sqlite/database.ts: the data directory's database file (docs/server.md#the-data-directory). */
export const dataMessages = {
  diskFull: (path: string, what: string) =>
    `the disk of ${path} is full: ${what} was refused and nothing was kept. Free space there; ` +
    'it is used again by itself once there is room (what was accepted before is kept)',
  failed: (path: string, what: string, reason: string) =>
    `${path} could not be used (${what}: ${reason}); retry shortly`,
  damaged: (path: string, reason: string) =>
    `${path} is damaged (${reason}). Stop every process on its directory, move the file and its -wal aside ` +
    '(sqlite3 <file> .recover reads what is left of it), and start again: a new file is made; ' +
    'what the old one held is not checked until recovered (docs/server.md#the-data-directory)',
  closed: (path: string) => `${path} was closed with its handler: nothing more is written to it here`,
  laterFormat: (path: string, format: number, known: number) =>
    `${path} was written by a later release of blackbox-capture (data format ${format}; this one reads up to ${known}): ` +
    'run that release or a later one on it, so that what it holds is read by the rules it was written by (docs/server.md#the-data-directory)',
  legacyKept: (path: string, taken: number, held: number) =>
    `${path} holds ${held} checkouts of an earlier version; the queue took ${taken} and is full: ` +
    'the journal now holds the rest alone, which the next start adds',
  gone: (path: string) =>
    `${path} was removed or replaced while this process had it open (its directory or volume gone?): ` +
    'nothing is written to a file no one will read again, nor to a new empty one. Put the file back, ' +
    'or restart the process to open what is at that path then (docs/server.md#the-data-directory)',
  noSqlite:
    'this runtime has no node:sqlite, which the data directory needs: Node 22.13 or later, Deno 2 or Bun 1.4; ' +
    'else give the handler a queue (createMemoryQueue, createBullmqQueue)',
};

/** store/store.ts: the memory store full, and a shared store slow or failing. */
export const storeMessages = {
  memoryFull: (maxEntries: number) =>
    `the memory store holds ${maxEntries} entries, none expired: use a shared store (createRedisStore) or a larger maxEntries`,
  timeoutOption: 'storeTimeoutMs must be a positive number of milliseconds',
  noAnswer: (ms: number) => `the shared store did not answer within ${ms} ms`,
  failed: (what: string) => `the shared store failed (${what}); retry shortly`,
  /** A Redis at maxmemory with noeviction refuses writes: the kit's keys expire, and writes resume once there is room. */
  redisFull: (what: string) =>
    `Redis is full (maxmemory): it refused ${what}. Raise maxmemory or free memory; the store's keys expire on their own, and writes resume once there is room`,
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
  notConnected: (ms: number) =>
    `the Redis client was still connecting after ${ms} ms (readyTimeoutMs): check that Redis is up and reachable at the client's address`,
  notAClient: (method: string) =>
    `createRedisStore needs a node-redis (5 or later) or ioredis (5 or later) client; this one has no ${method}()`,
  /** `confirmReplicas` on a client WAIT cannot serve (docs/fleet.md#sentinel). */
  confirmUnreachable:
    'confirmReplicas needs a client of one master that can send any command (ioredis, or node-redis with sendCommand): on Redis Cluster, WAIT would not reach the master that took the write',
  /** A write (the queue's add, or the store's) no replica confirmed in time: it fails, as when Redis is away (store/replicas.ts). */
  notConfirmed: (acknowledged: number, wanted: number, ms: number) =>
    `a write was confirmed by ${acknowledged} of ${wanted} replica${wanted === 1 ? '' : 's'} within ${ms} ms (Redis WAIT): it may not outlive a failover, so it does not count (a checkout is answered 503 and posted again)`,
};

/** callbacks/: its options, the callback's shape, its refusals and its outcomes. */
export const callbackMessages = {
  recordGone: (key: string) =>
    `callback ${key.split(':').pop()} is listed as pending but its record is gone from the store (its arrival answered 503, or the store dropped it): its result was not handled here`,
  detailsBehind: (workflowExecutionId: string, status: string) =>
    `the callback says workflow execution ${workflowExecutionId} is PROCESSED, its details still say ${status}: read again later`,
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
    badStatus: "has no workflowExecution.status of the service's form (capitals and underscores, as PROCESSED)",
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
  notRecordedHeld: (ids: ExecutionIds) =>
    `the callback of workflow execution ${ids.workflowExecutionId} could not be recorded (store away): this instance keeps it, records it when the store is back, or past a lease delivers its decision from memory`,

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

/** The told markers (src/server/callbacks/told.ts): each decision told once per execution. */
export const toldMessages = {
  resultPending: (workflowExecutionId: string) =>
    `the decision of workflow execution ${workflowExecutionId} is not there yet; the queued check reads it again later`,
  tellingLater: (workflowExecutionId: string, status: string) =>
    `the decision of workflow execution ${workflowExecutionId} (${status}) was not told (onResult failed); the queued check comes back to tell it`,
  beingTold: (workflowExecutionId: string, status: string) =>
    `the decision of workflow execution ${workflowExecutionId} (${status}) is being told by another path; tried again later`,
  notMarked: (workflowExecutionId: string, status: string) =>
    `the decision of workflow execution ${workflowExecutionId} (${status}) was told, but the store did not take its told marker within a lease: another path may tell it again`,
};

/** The status monitor, metrics and page (src/server/status/). */
export const statusMessages = {
  seriesContended: (tries: number) =>
    `the status series changed under ${tries} writes in a row; this sample is left out`,
  notAllowed: 'Only GET and HEAD',
  noDoctor: 'The doctor is not set up on this page: give createStatusHandler a doctor.url',
};

/** options-table.ts: an option a factory's table refuses when the factory is called. */
export const settingsMessages = {
  notAnObject: 'the options must be an object',
  badOption: (option: string, expects: string) => `${option} must be ${expects}`,
};
