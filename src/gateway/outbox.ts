/**
 * The decisions waiting to be told to the shop: each written to a Store before it is sent
 * (the file store of DATA_DIR, or the fleet's Redis), listed as pending (the callback
 * handler's list, src/server/callbacks/pending.ts) and POSTed to DECISION_URL, signed
 * (webhook.ts), until the shop answers 2xx: with backoff, by whichever instance holds the
 * record's lease, across restarts. One record per workflow execution, made only if absent:
 * a decision is told once, whichever path (the queued check, the callback) brought it.
 */
import type { Store } from '../server/index.js';
import { count, doublingMs, keyPart, ownerMark, pendingList, type WebhookResult } from '../server/parts.js';
import { errorEvent, rateLimited, type Log } from './log.js';
import { eventWebhookId, signWebhook, type WebhookEvent } from './webhook.js';

/** How long a decision is kept, delivered or not: a week, and GET /decisions shows it meanwhile. */
export const OUTBOX_TTL_MS = 7 * 24 * 3_600_000;
/**
 * How long an undelivered decision is tried: six days from when it was made, then given up,
 * told (an error line), and shown by GET /decisions for the day left, never dropped unsaid when
 * its pending entry or its order's entry expires (both kept a week).
 */
export const OUTBOX_RETRY_FOR_MS = OUTBOX_TTL_MS - 24 * 3_600_000;

interface OutboxRecord {
  id: string;
  event: WebhookEvent;
  attempts: number;
  /** Epoch ms of the next attempt. */
  nextAt: number;
  /** Epoch ms when it was kept (a record of an earlier version has none: its event's timestamp stands for it). */
  keptAt?: number;
  deliveredAt?: number;
  /** Epoch ms when it was given up undelivered (OUTBOX_RETRY_FOR_MS after it was made). */
  givenUpAt?: number;
  /** Who sends it now, until when (a fleet's instances share the records). */
  owner?: string;
  leaseUntil?: number;
  /** Why the last attempt failed: the shop's status, or the network's error code. */
  lastError?: string;
}

/**
 * The metric's result of a shop's answer other than 2xx: its status class. A status past 599
 * (no HTTP status, yet fetch passes it) counts with the 5xx, so that the label keeps to its list.
 */
const answerResult = (status: number): WebhookResult =>
  status < 400 ? 'http_3xx' : status < 500 ? 'http_4xx' : 'http_5xx';

/**
 * The wait before the next attempt: 1 s doubled per attempt up to 10 minutes, with full jitter,
 * and never longer than the decision has waited so far, so that a receiver back after a
 * downtime of D is reached within about D (docs/gateway.md#the-decision-webhook).
 */
export function retryDelay(
  attempts: number,
  waitedMs: number,
  options: Pick<OutboxOptions, 'retryDelayMs' | 'maxRetryDelayMs'> = {},
): number {
  const first = options.retryDelayMs ?? 1000;
  const doubled = Math.random() * doublingMs(attempts - 1, first, options.maxRetryDelayMs ?? 600_000);
  return Math.min(doubled, Math.max(first, Number.isFinite(waitedMs) ? waitedMs : first));
}

export interface OutboxOptions {
  store: Store;
  url: string;
  /** The Authorization header of every POST (DECISION_URL's credentials as HTTP Basic), if any. Never logged. */
  authorization?: string;
  key: Uint8Array<ArrayBuffer>;
  fetch?: typeof fetch;
  now?: () => number;
  /** First retry after this many ms, doubled up to maxRetryDelayMs (with jitter). Default 1000 and 600000. */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /** How long one POST may take, in ms. Default 10000. */
  timeoutMs?: number;
  /** How often the pending list is read again, in ms. Default 1000. */
  intervalMs?: number;
  /** Delivered decisions remembered at most while the store refuses their mark. Default UNMARKED_MAX. */
  maxUnmarked?: number;
  /** Told what goes wrong, with a level and a code (the gateway's log). */
  onError?: Log;
}

export interface Outbox {
  /** Keeps the event and sends it; false when this execution's decision (or this order's failure) was already kept (told once). */
  add(event: WebhookEvent): Promise<boolean>;
  /** The latest decision of an order, for GET /decisions/{reference}. */
  latest(customerInternalReference: string): Promise<OutboxRecord | undefined>;
  /** Tries every pending decision whose time has come (also every `intervalMs` once started). */
  pump(): Promise<void>;
  start(): void;
  /**
   * `ok`, or `outbox_unavailable` when its last read of the pending list failed or one has
   * been under way longer than a lease (its store does not answer): GET /readyz.
   */
  health(): 'ok' | 'outbox_unavailable';
  /** What waits for the shop: how many, and since when (epoch ms; undefined when none). GET /metrics. */
  figures(): Promise<{ depth: number; oldestAt: number | undefined }>;
  /** Stops the timer and waits for the POSTs under way: what is not delivered stays in the store. */
  close(): Promise<void>;
}

const NAMESPACE = 'gateway:outbox';
/** Delivered records a process remembers at most while their mark waits for the store to take writes. */
const UNMARKED_MAX = 10_000;

/**
 * An event that ends its order without a decision: a failure (never checked; it has no
 * status), or an expired execution's (a decision not PROCESSED: onResult hears final statuses
 * only, so SESSION_EXPIRED or TOKEN_EXPIRED, never checked either). Each order gets one.
 */
const endsUnchecked = (event: WebhookEvent): boolean => (event.data as { status?: string }).status !== 'PROCESSED';

const recordKey = (execution: string) => `${NAMESPACE}:decision:${keyPart(execution.toLowerCase())}`;
const orderKey = (reference: string) => `${NAMESPACE}:order:${keyPart(reference)}`;
const endingKey = (reference: string) => `${NAMESPACE}:ended-unchecked:${keyPart(reference)}`;
/** The ending mark of an order whose decision is being kept: no failure is sent after it. */
const DECIDED = 'decided';

/** The order's latest kept event: its record (GET /decisions/{reference}) and the record's key, if any. */
async function latestEntry(
  store: Store,
  reference: string,
): Promise<{ key: string; record: OutboxRecord } | undefined> {
  const key = await store.get(orderKey(reference));
  const text = key === undefined ? undefined : await store.get(key);
  return text === undefined ? undefined : { key: key!, record: JSON.parse(text) as OutboxRecord };
}

/** A record kept and never tried, nor taken by an instance: its listing may have been cut off (a failed write). */
const neverTried = (record: Partial<OutboxRecord>): boolean => record.attempts === 0 && record.owner === undefined;

/**
 * Whether `id` is the order's one ending without a decision: the first kept of its failure
 * and its execution's expiry (a failure after the transaction was made, then the service's
 * expiry callback for it, or the other way round), and none once the order has its decision
 * (a "never checked" after it would be untrue). The others are logged, not sent.
 */
async function firstEnding(
  store: Store,
  onError: Log,
  reference: string,
  id: string,
  listed: (key: string) => Promise<void>,
) {
  const latest = await latestEntry(store, reference);
  const notSent = { event: 'webhook', code: 'one_outcome', reference };
  if (latest !== undefined && !endsUnchecked(latest.record.event)) {
    // The decision is the order's outcome only once it is on its way: one kept whose listing
    // was cut off is listed now (a refusal rejects, and the failure's teller tries again).
    if (neverTried(latest.record)) await listed(latest.key);
    onError(`${id} not sent: order ${reference} has its decision, told (one outcome per order)`, notSent);
    return false;
  }
  const mark = endingKey(reference);
  if (await store.setIfAbsent(mark, id, OUTBOX_TTL_MS)) return true;
  const ending = await store.get(mark);
  if (ending === id) return true;
  onError(
    ending === DECIDED
      ? `${id} not sent: order ${reference} has its decision, told (one outcome per order)`
      : `${id} not sent: order ${reference} has ended unchecked already, told once (one outcome per order)`,
    notSent,
  );
  return false;
}

/**
 * Tells a failure of the outbox's store as the log tells any error (errorEvent), said to be the
 * outbox's: one line per code each 10 s (log.ts), since a store that refuses writes (a full
 * disk) fails every pending record's attempt each second, and lines by the thousand would not
 * say more (and would take the room the store needs).
 */
function storeFailureTeller(onError: Log, now: () => number) {
  const limited = rateLimited(onError, now);
  let told = 0;
  const tell = (error: unknown): void => {
    told++;
    const [message, fields] = errorEvent(error);
    limited(fields.code ?? 'error', `outbox: ${message}`, fields);
  };
  /** The failures told so far: a pump that met one (a claim or a mark refused) is a failed pump. */
  return Object.assign(tell, { told: () => told, flush: limited.flush });
}
type StoreFailure = ReturnType<typeof storeFailureTeller>;

/**
 * One POST of a record's event to DECISION_URL, signed: why it failed (the shop's status, a
 * timeout, the network), none when the shop answered 2xx, and the metric's result.
 */
async function postEvent(
  options: OutboxOptions,
  send: typeof fetch,
  now: () => number,
  record: OutboxRecord,
): Promise<{ failure?: string; result: WebhookResult }> {
  const body = JSON.stringify(record.event);
  try {
    const headers = await signWebhook(options.key, record.id, Math.floor(now() / 1000), body);
    const answer = await send(options.url, {
      method: 'POST',
      headers: {
        ...headers,
        'content-type': 'application/json',
        'user-agent': 'blackbox-capture-gateway',
        ...(options.authorization ? { authorization: options.authorization } : {}),
      },
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    });
    await answer.body?.cancel();
    const ok = answer.status >= 200 && answer.status <= 299;
    return ok ? { result: 'delivered' } : { failure: `HTTP ${answer.status}`, result: answerResult(answer.status) };
  } catch (error) {
    return (error as Error).name === 'TimeoutError'
      ? { failure: 'timeout', result: 'timeout' }
      : { failure: 'network error', result: 'network_error' };
  }
}

/**
 * Deliveries whose "delivered" mark the store refused (a full disk, a Redis at maxmemory), and
 * their removal from the pending list too, by key: their claimed text and their delivered one.
 * Marked first by each pump, never sent again by this process; at most `max` of them.
 */
function unmarkedDeliveries(
  store: Store,
  pending: ReturnType<typeof pendingList>,
  onError: Log,
  storeFailure: StoreFailure,
  max: number,
) {
  const unmarked = new Map<string, [claimed: string, delivered: string]>();
  return {
    /** Delivered already, its mark refused: the pump marks it, nothing sends it again (a store that refuses the mark may still take a claim: a full SQLite file rewrites a page in place). */
    has: (key: string) => unmarked.has(key),
    /**
     * After a delivery whose mark the store refused: off the pending list it is never tried
     * again; left on it (that write refused too), it is kept here to be marked first. Told
     * either way: GET /decisions may show it undelivered.
     */
    settle(key: string, claimed: string, delivered: string, id: string, reference: string | undefined): Promise<void> {
      const tell = (then: string) =>
        onError(`decision ${id} delivered, but not marked so: ${then}; GET /decisions may show it undelivered`, {
          level: 'warn',
          event: 'webhook',
          code: 'delivered_unmarked',
          reference,
        });
      return pending.remove(key).then(
        () => tell('not sent again'),
        (error: unknown) => {
          const kept = unmarked.size < max;
          if (kept) unmarked.set(key, [claimed, delivered]);
          tell(
            kept
              ? 'marked when the store takes writes again, and not sent again by this process (a restart or another instance before that would send it again, under the same webhook-id)'
              : `more than ${max} wait for their mark: it may be sent again, under the same webhook-id`,
          );
          throw error;
        },
      );
    },
    /**
     * Marks them once the store takes writes: each is forgotten once marked (the pump's attempt
     * then takes it off the pending list) or changed meanwhile (another instance took it after
     * its lease, or its week ended: theirs now). A refusal is told, and ends this pump's marking:
     * the store that refused one would refuse the rest, which wait for the next pump with it.
     */
    async mark(): Promise<void> {
      for (const [key, [claimed, delivered]] of unmarked) {
        const refused = await store.compareAndSet(key, claimed, delivered, OUTBOX_TTL_MS).then(
          () => void unmarked.delete(key),
          (error: unknown) => {
            storeFailure(error);
            return true;
          },
        );
        if (refused) return;
      }
    },
  };
}

/** What waits on the pending list: how many, and since when the oldest. */
async function figuresOf(pending: ReturnType<typeof pendingList>) {
  const entries = await pending.entries();
  const oldest = entries.reduce<number | undefined>(
    (at, entry) => (at === undefined ? entry.at : Math.min(at, entry.at)),
    undefined,
  );
  return { depth: entries.length, oldestAt: oldest };
}

/**
 * The record after an attempt that ended with `failure` (none: delivered): delivered, given up
 * (past six days since it was kept), or due again after its backoff.
 */
function afterAttempt(record: OutboxRecord, failure: string | undefined, options: OutboxOptions, now: () => number) {
  const attempts = record.attempts + 1;
  const { owner: _owner, leaseUntil: _lease, ...rest } = record;
  const waited = now() - Date.parse(record.event.timestamp);
  const delay = retryDelay(attempts, waited, options);
  const kept = record.keptAt ?? Date.parse(record.event.timestamp);
  // Stryker disable next-line ConditionalExpression: a delivered record is marked so first, whatever its age
  const givenUp = failure !== undefined && now() - kept + delay >= OUTBOX_RETRY_FOR_MS;
  const next: OutboxRecord =
    failure === undefined
      ? { ...rest, attempts, deliveredAt: now() }
      : givenUp
        ? { ...rest, attempts, givenUpAt: now(), lastError: failure }
        : { ...rest, attempts, nextAt: now() + delay, lastError: failure };
  return { next, attempts, delay, kept, givenUp };
}

/** A decision given up, counted (the alert's metric) and said with its order. `where`: to whom, for how long. */
function givenUpTold(onError: Log, record: OutboxRecord, where: string, failure: string, attempts: number): void {
  count('webhooksGivenUp', {});
  onError(
    `decision ${record.id} given up: not delivered to ${where} (${failure}, ${attempts} attempts); GET /decisions shows it for a day more`,
    {
      level: 'error',
      event: 'webhook',
      code: 'webhook_given_up',
      reference: record.event.data.customerInternalReference ?? undefined,
    },
  );
}

/** Deliveries a pump tries at once. */
const ATTEMPTS_AT_ONCE = 32;

export function createOutbox(options: OutboxOptions): Outbox {
  const { store } = options;
  const now = options.now ?? Date.now;
  const send = options.fetch ?? fetch;
  const me = ownerMark();
  const leaseMs = (options.timeoutMs ?? 10_000) * 3;
  const pending = pendingList(store, NAMESPACE, OUTBOX_TTL_MS, now);
  const onError: Log = options.onError ?? ((message) => console.error(`blackbox-capture gateway: ${message}`));
  const target = new URL(options.url).origin;
  const running = new Set<Promise<void>>();
  let timer: ReturnType<typeof setInterval> | undefined;
  let pumping: Promise<void> | undefined;
  let pumpStartedAt = 0;
  let pumpFailed = false;
  let closed = false;
  const storeFailure = storeFailureTeller(onError, now);
  /** Records this process claimed so far: a pump that claimed none while the store failed is a failed pump. */
  let claims = 0;
  const unmarked = unmarkedDeliveries(store, pending, onError, storeFailure, options.maxUnmarked ?? UNMARKED_MAX);

  /** One attempt at one record, under its lease. */
  async function attempt(key: string): Promise<void> {
    if (unmarked.has(key)) return;
    const text = await store.get(key);
    if (text === undefined) return pending.remove(key);
    const record = JSON.parse(text) as OutboxRecord;
    if (record.deliveredAt !== undefined || record.givenUpAt !== undefined) return pending.remove(key);
    const at = now();
    // Another attempt holds it (this process's or another instance's) until its lease lapses.
    if (record.nextAt > at || (record.owner !== undefined && (record.leaseUntil ?? 0) > at)) return;
    const claimed = JSON.stringify({ ...record, owner: me, leaseUntil: at + leaseMs });
    if (!(await store.compareAndSet(key, text, claimed, OUTBOX_TTL_MS))) return;
    claims++;
    // A claim that landed late (a store that stalled) has too little of its lease left for a
    // whole POST: another instance may take it meanwhile, and the shop would get two at once.
    // Left to lapse, and tried again then.
    if (now() + (options.timeoutMs ?? 10_000) > at + leaseMs) return;
    const { failure, result } = await postEvent(options, send, now, record);
    count('webhooks', { result });
    const { next, attempts, delay, kept, givenUp } = afterAttempt(record, failure, options, now);
    const marked = await store
      .compareAndSet(key, claimed, JSON.stringify(next), OUTBOX_TTL_MS)
      .catch((error: unknown) => {
        storeFailure(error);
        return false;
      });
    const reference = record.event.data.customerInternalReference ?? undefined;
    if (failure === undefined)
      return marked ? pending.remove(key) : unmarked.settle(key, claimed, JSON.stringify(next), record.id, reference);
    if (givenUp) {
      // Not marked: another instance holds it now (its lease lapsed under a stalled store), and
      // may have delivered it; the give-up is that instance's to say, if it comes to one.
      if (!marked) return;
      givenUpTold(onError, record, `${target} in ${Math.round((now() - kept) / 3_600_000)} hours`, failure, attempts);
      return pending.remove(key);
    }
    onError(
      `decision ${record.id} not delivered to ${target} (${failure}, attempt ${attempts}); next try in ${Math.ceil(delay / 1000)} s`,
      { level: 'warn', event: 'webhook', code: result, reference },
    );
  }

  /** Runs one attempt, tracked so that close() waits for it; an attempt's failure is told, never thrown. */
  function track(key: string): Promise<void> {
    const run = attempt(key).catch((error: unknown) => storeFailure(error));
    running.add(run);
    void run.finally(() => running.delete(run));
    return run;
  }

  /** On the pending list, and tried now. */
  async function listed(key: string): Promise<void> {
    await pending.add(key);
    if (!closed) void track(key);
  }

  async function pumpOnce(): Promise<void> {
    await unmarked.mark();
    const entries = await pending.entries();
    // A few at a time, the event loop let go between them: a backlog all due at once (a restart
    // after a long outage) never holds the gateway's answers and timers up (a SQLite store's
    // calls are synchronous).
    for (let i = 0; i < entries.length && !closed; i += ATTEMPTS_AT_ONCE) {
      await Promise.all(entries.slice(i, i + ATTEMPTS_AT_ONCE).map((entry) => track(entry.key)));
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  return {
    async add(event) {
      const id = eventWebhookId(event);
      const key = recordKey(id.slice('msg_'.length));
      const record: OutboxRecord = { id, event, attempts: 0, nextAt: now(), keptAt: now() };
      const reference = event.data.customerInternalReference;
      if (reference && endsUnchecked(event) && !(await firstEnding(store, onError, reference, id, listed)))
        return false;
      // A decision marks its order ended before its record is kept: a failure read meanwhile (its
      // pointer not yet set) is not sent after it. A failure kept first stays the mark, and the
      // decision goes all the same (docs/gateway.md: a decision after a failure is sent).
      if (reference && !endsUnchecked(event)) await store.setIfAbsent(endingKey(reference), DECIDED, OUTBOX_TTL_MS);
      if (!(await store.setIfAbsent(key, JSON.stringify(record), OUTBOX_TTL_MS))) {
        // Kept already. An add cut off after its record (a failed write, a process killed) left
        // it unlisted, and its caller, told of the failure, adds again: never tried, it is
        // listed now (a record tried, delivered or leased was listed; one gone needs nothing).
        const kept = JSON.parse((await store.get(key)) ?? '{}') as Partial<OutboxRecord>;
        if (!neverTried(kept)) return false;
        if (reference) await store.setIfAbsent(orderKey(reference), key, OUTBOX_TTL_MS);
        await listed(key);
        return false;
      }
      if (reference) await store.set(orderKey(reference), key, OUTBOX_TTL_MS);
      await listed(key);
      return true;
    },
    latest: async (reference) => (await latestEntry(store, reference))?.record,
    pump() {
      if (!pumping) pumpStartedAt = now();
      const [failuresBefore, claimsBefore] = [storeFailure.told(), claims];
      // Unavailable while the store fails it, reads or writes, and no record is claimed: a store
      // that reads but refuses every claim and mark (a full disk) delivers nothing. One that
      // refuses a few (a fleet contending for its pending list) while others go is delivering.
      return (pumping ??= pumpOnce()
        .then(() => void (pumpFailed = storeFailure.told() > failuresBefore && claims === claimsBefore))
        .catch((error: unknown) => {
          pumpFailed = true;
          storeFailure(error);
        })
        .finally(() => (pumping = undefined)));
    },
    figures: () => figuresOf(pending),
    health() {
      const stuck = pumping !== undefined && now() - pumpStartedAt > leaseMs;
      return pumpFailed || stuck ? 'outbox_unavailable' : 'ok';
    },
    start() {
      timer ??= setInterval(() => void this.pump(), options.intervalMs ?? 1000);
      void this.pump();
    },
    async close() {
      closed = true;
      clearInterval(timer);
      await pumping;
      await Promise.all(running);
      // Its store failures held back are said before the process goes.
      storeFailure.flush();
    },
  };
}
