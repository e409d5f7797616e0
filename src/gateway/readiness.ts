/**
 * GET /readyz: whether this gateway can see a checkout through now, apart from GET /healthz
 * (alive). Four checks, each named in the body with `ok` or the code of its failure: the
 * store takes a write and the queue answers within READY_PROBE_MS (`store_unavailable`, or
 * `store_full` for a store out of room; `queue_unavailable`),
 * the service takes the client credentials (tried at start and every TOKEN_CHECK_MS, so that a
 * wrong CLIENT_SECRET reads `token_rejected` within seconds, logged once per change), and the
 * outbox reads its pending list (`outbox_unavailable`). 200 when all are ok, else 503 with the
 * first failing check's code (docs/gateway.md#readiness).
 */
import { ERROR_CODES, isDeviceRiskError, type CheckQueue, type Store, type TokenSource } from '../server/index.js';
import { ownerMark, settleWithin } from '../server/parts.js';
import type { Outbox } from './outbox.js';
import type { Route } from './routes.js';
import type { Log } from './log.js';

/** How long the store and the queue have to answer a readiness probe, in ms. */
export const READY_PROBE_MS = 2000;
/** How often the client credentials are tried again (a cached token answers at once), in ms. */
export const TOKEN_CHECK_MS = 30_000;
/** The same while they fail: a fixed secret reads ok within this. */
export const TOKEN_RETRY_MS = 5000;

type CheckName = 'store' | 'queue' | 'token' | 'outbox';

export interface Readiness {
  /** Each check's `ok` or failure code, now. */
  checks(): Promise<Record<CheckName, string>>;
  close(): void;
}

/**
 * A probe that answers within `timeoutMs`, and runs one call at a time: a store that hangs
 * (a Redis away, its client queueing commands) holds one call, never one per probe.
 */
function probe(run: () => Promise<unknown>, code: string, timeoutMs: number): () => Promise<string> {
  let running: Promise<string> | undefined;
  return () => {
    const call = (running ??= run()
      .then(
        () => 'ok',
        // A store that refuses for want of room (Redis at maxmemory, a full disk) says so.
        (error: unknown) =>
          isDeviceRiskError(error) && error.code === ERROR_CODES.STORE_FULL ? ERROR_CODES.STORE_FULL : code,
      )
      .finally(() => (running = undefined)));
    // The call never rejects: only the limit does, and then the check reads `code`.
    return settleWithin(
      () => call,
      timeoutMs,
      () => new Error(code),
    ).catch(() => code);
  };
}

/** Keeps a token fresh from start on; its state is `ok`, `token_pending` before the first answer, or the failure's code. */
function tokenKeeper(tokenSource: TokenSource, log: Log) {
  let state = 'token_pending';
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  const attempt = async () => {
    let next = 'ok';
    let said = '';
    try {
      await tokenSource.getToken({ signal: AbortSignal.timeout(TOKEN_CHECK_MS) });
    } catch (error) {
      next = isDeviceRiskError(error) ? error.code : 'token_unavailable';
      said = isDeviceRiskError(error) ? error.message : '';
    }
    // Said once per change, never per try: a wrong secret is one line, not one a minute.
    if (next !== state && !(next === 'ok' && state === 'token_pending'))
      log(next === 'ok' ? 'client credentials: accepted again' : `client credentials: ${next} ${said}`.trim(), {
        level: next === 'ok' ? 'info' : 'error',
        event: 'credentials',
        ...(next === 'ok' ? {} : { code: next }),
      });
    state = next;
    if (!closed) timer = setTimeout(() => void attempt(), next === 'ok' ? TOKEN_CHECK_MS : TOKEN_RETRY_MS);
  };
  void attempt();
  return {
    state: () => state,
    close() {
      closed = true;
      clearTimeout(timer);
    },
  };
}

export function createReadiness(options: {
  store: Store;
  queue: CheckQueue;
  tokenSource: TokenSource;
  outbox: Outbox;
  log: Log;
}): Readiness {
  // A write, not a read: a store that reads but takes no write (Redis at maxmemory, a full
  // disk) accepts no checkout and keeps no outcome. One key per process, gone in a minute.
  const probeKey = `gateway:readyz:${ownerMark()}`;
  const store = probe(
    () => options.store.set(probeKey, String(Date.now()), 60_000),
    'store_unavailable',
    READY_PROBE_MS,
  );
  const queue = probe(() => options.queue.counts(), 'queue_unavailable', READY_PROBE_MS);
  const token = tokenKeeper(options.tokenSource, options.log);
  return {
    async checks() {
      const [storeState, queueState] = await Promise.all([store(), queue()]);
      return { store: storeState, queue: queueState, token: token.state(), outbox: options.outbox.health() };
    },
    close: () => token.close(),
  };
}

const noStore = { 'cache-control': 'no-store' };

/** GET /readyz: 200 `{ status: 'ready', checks }`; 503 `{ status: 'not_ready', code, checks }`, or `shutting_down` from SIGTERM on. */
export function readyRoute(readiness: Readiness, closing: () => boolean): Route {
  return {
    path: '/readyz',
    methods: ['GET', 'HEAD'],
    async handler() {
      const checks = await readiness.checks();
      const failing = Object.values(checks).find((state) => state !== 'ok');
      const code = closing() ? 'shutting_down' : failing;
      if (code === undefined) return Response.json({ status: 'ready', checks }, { headers: noStore });
      return Response.json(
        { status: code === 'shutting_down' ? 'shutting_down' : 'not_ready', code, checks },
        { status: 503, headers: { ...noStore, 'retry-after': '1' } },
      );
    },
  };
}
