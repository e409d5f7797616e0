/**
 * The gateway: the server kit's parts put together as one process from GatewaySettings
 * (`npx blackbox-capture serve`, cli.ts): the endpoint (POST /device-risk, the order from the
 * Order-Token), the first-party proxy (/iojs/*), the callback handler (POST /callback), the
 * queue, the outbox of signed decisions (outbox.ts), GET /decisions/{reference}, GET
 * /openapi.json and GET /healthz; and an admin listener. No second implementation: each
 * route is the kit's handler (docs/gateway.md).
 */
import { createServer, STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  createCallbackHandler,
  createDeviceRiskClient,
  createDeviceRiskHandler,
  createFirstPartyProxy,
  createTokenSource,
  toNodeHandler,
  type DeviceRiskClient,
  type TokenSource,
} from '../server/index.js';
import { createFileQueue } from '../server/queue/file.js';
import { createSqliteStore, DATA_FILE, importLegacyQueue, importLegacyStore } from '../server/parts.js';
import { isDeviceRiskError, type CheckQueue, type FetchHandler, type Store } from '../server/index.js';
import { DEFAULT_URI_HOOK } from '../shared/constants.js';
import { createOutbox, type Outbox } from './outbox.js';
import { createLog, errorEvent, rateLimited, refusedEvent, type Log } from './log.js';
import { guardAdmin } from './admin-guard.js';
import { untrustedFrontTeller } from './fronts.js';
import { sweepFromStart } from './callback-sweep.js';
import { checkoutDoor } from './checkout-door.js';
import { createReadiness, readyRoute } from './readiness.js';
import { router, type RefusalListener, type Route } from './routes.js';
import type { GatewaySettings } from './settings.js';
import { decisionEvent, failureOf } from './webhook.js';
import { adminRoutes, decisionsRoute, healthRoute, openApiRoute } from './extra-routes.js';
import { createStatusMonitor } from '../server/status/index.js';

/**
 * Where each setting is handed over, one entry per member of GatewaySettings: a new member
 * fails the type check here until its wiring is written and named (docs/architecture.md, the
 * five changes). test/gateway/settings.test.ts checks that the file named reads it.
 */
export const SETTINGS_WIRING = {
  clientId: 'gateway.ts: the token source',
  clientSecret: 'gateway.ts: the token source',
  service: 'gateway.ts: the token source and the Device Risk client',
  collectorUrl: 'gateway.ts: the first-party proxy',
  workflowKey: 'gateway.ts: the endpoint',
  allowedOrigins: 'gateway.ts: the endpoint',
  orderSecret: 'gateway.ts: the checkout door (Order-Token)',
  decisionUrl: 'gateway.ts: the outbox',
  decisionAuthorization: 'gateway.ts: the outbox',
  webhookKey: 'gateway.ts: the outbox',
  decisionsToken: 'gateway.ts: GET /decisions/{reference}',
  callbackUrl: 'gateway.ts: the endpoint',
  callbackSources: 'gateway.ts: the callback handler',
  trustedFronts: 'gateway.ts: the Node adapter',
  redisUrl: 'gateway.ts: the store and the queue',
  dataDir: 'gateway.ts: the store and the queue',
  port: 'gateway.ts: the main listener',
  host: 'gateway.ts: the main listener',
  admin: 'gateway.ts: the admin listener',
  userAgent: 'gateway.ts: the token source and the Device Risk client',
  shutdownTimeoutMs: "cli.ts: SIGTERM's bound",
  shutdownDrainMs: "cli.ts: SIGTERM's drain, before the listeners close",
  idleTimeoutMs: 'gateway.ts: the listeners',
  maxConnections: 'gateway.ts: the listeners',
  logFormat: 'gateway.ts: the log',
} as const satisfies Record<keyof GatewaySettings, `${'gateway.ts' | 'cli.ts'}: ${string}`>;

/** The HTTP server's limits beside IDLE_TIMEOUT_MS: the headers, a whole request, a kept-alive connection's wait. */
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;
const KEEP_ALIVE_TIMEOUT_MS = 5000;
/** The log's code of a connection closed at once because MAX_CONNECTIONS are held. */
const TOO_MANY_CONNECTIONS = 'too_many_connections';
/** How often the callbacks the store lists as pending are swept, from the start (the kit's default). */
const CALLBACK_SWEEP_MS = 30_000;

export interface GatewayOptions {
  /** fetch of the service's calls and the webhooks (tests). Default the global fetch. */
  fetch?: typeof fetch;
  /** Lines of the log (refusals, failures; never a secret), as text (tests). Default: stderr, as LOG_FORMAT says (log.ts). */
  log?: (line: string) => void;
  /** The OpenAPI document's text, when it is not beside the module (the single executable). */
  openApi?: () => string;
  /** Handlers the admin listener mounts (helpers' status and metrics), before its placeholders. */
  adminRoutes?: Route[];
}

export interface Gateway {
  url: string;
  adminUrl?: string;
  /**
   * SIGTERM: takes no new checkout, finishes the checks under way, keeps what is queued and
   * undelivered; then closes. `drainMs`: how long its listeners stay open first, answering
   * /healthz and /readyz 503, so that a load balancer turns shoppers away (SHUTDOWN_DRAIN_MS).
   */
  close(drainMs?: number): Promise<void>;
  /**
   * Says the lines its log held back (one per code each 10 s), as close() does when it ends:
   * for a process that exits before (a close that its time limit cut short).
   */
  flushLog(): void;
}

/** What a fleet (REDIS_URL) or one instance (DATA_DIR) keeps: the kit's store, the queue, the outbox's store. */
interface Keeping {
  store: Store;
  queue: CheckQueue;
  outboxStore: Store;
  /** Says the store's failures held back in the log (log.ts: rateLimited). */
  flushLog?: () => void;
  close(): Promise<void>;
}

async function keeping(settings: GatewaySettings, log: Log): Promise<Keeping> {
  if (settings.redisUrl) {
    // Optional peers, loaded only for a fleet: the package's bullmq and ioredis. `as string`
    // keeps tsc from requiring ioredis's types.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    const { default: Redis } = (await import('ioredis' as string)) as {
      default: new (
        url: string,
        options: object,
      ) => { quit(): Promise<unknown>; on(event: 'error', listener: (error: Error) => void): void };
    };
    const { createRedisStore } = await import('../server/store/redis.js');
    const { createBullmqQueue } = await import('../server/queue/bullmq.js');
    // A Redis that went away fails every few milliseconds, on every connection: one line per
    // code each 10 s, through the log (ioredis alone prints each failure's stack).
    const limited = rateLimited(log);
    const told = (error: unknown) => {
      const [message, fields] = errorEvent(error);
      limited(fields.code ?? message, message, fields);
    };
    const client = new Redis(settings.redisUrl, { maxRetriesPerRequest: null });
    client.on('error', (error) => told(error));
    const store = createRedisStore(client as never);
    await store.ready();
    return {
      store,
      queue: createBullmqQueue({ connection: client, onError: told }),
      outboxStore: store,
      flushLog: limited.flush,
      close: () => client.quit().then(() => undefined),
    };
  }
  // Without Redis: everything in DATA_DIR's SQLite file, so that a restart resumes each check on
  // its transaction and tells no decision twice; processes on one DATA_DIR share it (sqlite/store.ts).
  const path = join(settings.dataDir, DATA_FILE);
  const store = createSqliteStore(path);
  const queue = createFileQueue({ path, onError: (error) => log(...errorEvent(error)) });
  // What an earlier version kept in DATA_DIR's journals, read once.
  await importLegacyStore(settings.dataDir, store, Date.now());
  // One the queue cannot all take (full), or cannot read, stays for the next start: said, and
  // the gateway serves, as the handler's default queue does (queue/data-dir.ts).
  await importLegacyQueue(settings.dataDir, queue).catch((error: unknown) => log(...errorEvent(error)));
  return {
    store,
    queue,
    outboxStore: store,
    close: () => Promise.resolve(store.close()),
  };
}

function serviceClient(
  settings: GatewaySettings,
  fetcher: typeof fetch | undefined,
): { client: DeviceRiskClient; tokenSource: TokenSource } {
  const service = settings.service;
  const common = { userAgent: settings.userAgent, ...(fetcher ? { fetch: fetcher } : {}) };
  const tokenSource = createTokenSource({
    clientId: settings.clientId,
    clientSecret: settings.clientSecret,
    ...common,
    ...('region' in service ? { region: service.region } : { tokenUrl: service.tokenUrl }),
  });
  const client = createDeviceRiskClient({
    tokenSource,
    ...common,
    ...('region' in service
      ? { region: service.region }
      : {
          baseUrl: service.baseUrl,
          ...(service.apiBaseUrl ? { apiBaseUrl: service.apiBaseUrl } : {}),
          ...(service.retrievalBaseUrl ? { retrievalBaseUrl: service.retrievalBaseUrl } : {}),
        }),
  });
  return { client, tokenSource };
}

export async function startGateway(settings: GatewaySettings, options: GatewayOptions = {}): Promise<Gateway> {
  const given = options.log;
  const log: Log = given
    ? (message) => given(message)
    : createLog(settings.logFormat, (line) => void process.stderr.write(`${line}\n`));
  const { client, tokenSource } = serviceClient(settings, options.fetch);
  const kept = await keeping(settings, log);
  const logError = (error: unknown) => log(...errorEvent(error));
  // Refusals no handler told: one line per code each 10 s, so that a scanner's 404s cannot flood the log.
  const refusals = rateLimited(log);
  const logRefusal: RefusalListener = ({ route, method, status, code }) =>
    refusals(code, `refused ${method} ${route}: ${status} ${code}`, refusedEvent(code));
  const outbox = createOutbox({
    store: kept.outboxStore,
    url: settings.decisionUrl,
    ...(settings.decisionAuthorization ? { authorization: settings.decisionAuthorization } : {}),
    key: settings.webhookKey,
    onError: log,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const tell = (event: Parameters<Outbox['add']>[0]) => outbox.add(event).then(() => undefined);
  /**
   * The kit's failures, logged. An accepted checkout never to be checked is told to the shop,
   * signed, once (docs/gateway.md#the-failure-webhook): its job leaves the queue once the
   * failure is kept in the outbox, and stays to tell it again if it could not be. So is a
   * decision whose callback was given up (result_undelivered), for the order it names.
   */
  const onCheckError = (error: unknown): Promise<void> | undefined => {
    // A visitor past its checkouts: a refusal, which the router logs (its 429, one line per code each 10 s).
    if (isDeviceRiskError(error) && error.operation === 'admission') return undefined;
    logError(error);
    const failure = failureOf(error, Date.now());
    if (failure) return tell(failure);
  };
  const onError = (error: unknown): void => void onCheckError(error)?.catch(logError);
  // The door's refusals, too: each kind (its words, its order) one line each 10 s at most, so
  // that a flood of bad tokens writes a few lines, and each rule or order refused is still told.
  const doorLog: Log = (message, fields) => refusals(`${message} ${fields?.reference ?? ''}`, message, fields);
  const door = await checkoutDoor({ store: kept.store, orderSecret: settings.orderSecret, log: doorLog });
  const endpoint = createDeviceRiskHandler({
    client,
    allowedOrigins: settings.allowedOrigins,
    workflowKey: settings.workflowKey,
    queue: kept.queue,
    store: kept.store,
    ...(settings.callbackUrl ? { callbackUrl: settings.callbackUrl } : {}),
    onError: onCheckError,
    resolveCustomer: (request) => door.resolveCustomer(request),
    onResult: (details, context) => tell(decisionEvent(details, context, details, Date.now())),
  });
  const callbacks = createCallbackHandler({
    client,
    allowedSources: settings.callbackSources,
    store: kept.store,
    // Its promise for a callback given up: the record is marked failed once its failure is kept.
    onError: onCheckError,
    onResult: (result) => tell(decisionEvent(result, result, result.details, Date.now())),
    sweepIntervalMs: CALLBACK_SWEEP_MS,
  });
  const stopSweeping = sweepFromStart(callbacks, CALLBACK_SWEEP_MS, onError);
  const proxy = createFirstPartyProxy({ prefix: DEFAULT_URI_HOOK, collectorUrl: settings.collectorUrl, onError });
  let closing: Promise<void> | undefined;
  const readiness = createReadiness({ store: kept.store, queue: kept.queue, tokenSource, outbox, log });
  const ready = readyRoute(readiness, () => closing !== undefined);
  const routes: Route[] = [
    {
      path: '/device-risk',
      async handler(request, context) {
        const answer = await endpoint(request, context);
        await door.answered(request, answer).catch(onError);
        return answer;
      },
    },
    { path: `${DEFAULT_URI_HOOK}/*`, handler: proxy },
    { path: '/callback', handler: callbacks },
    decisionsRoute(outbox, settings.decisionsToken, log),
    openApiRoute(options.openApi),
    healthRoute(() => closing !== undefined),
    ready,
  ];
  const nodeOptions = {
    onError,
    trustedFronts: settings.trustedFronts,
    onForwardIgnored: untrustedFrontTeller(refusals),
  };
  const serve = (handler: FetchHandler, port: number, host: string) =>
    listen(
      withTimeouts(
        createServer(toNodeHandler(handler, nodeOptions)),
        settings.idleTimeoutMs,
        settings.maxConnections,
        (code, message) => refusals(code, message, refusedEvent(code)),
      ),
      port,
      host,
    );
  const main = await serve(router(routes, logRefusal), settings.port, settings.host);
  // The status page's series and the fleet's reporter lease live in the kit's store: shared on a fleet.
  const monitor = settings.admin ? createStatusMonitor({ store: kept.store, onError }) : undefined;
  const adminHandler =
    monitor && settings.admin
      ? guardAdmin(
          router(
            [...(options.adminRoutes ?? []), ...adminRoutes(monitor, outbox, () => closing !== undefined), ready],
            logRefusal,
          ),
          settings.admin,
          log,
        )
      : undefined;
  const admin =
    adminHandler && settings.admin ? await serve(adminHandler, settings.admin.port, settings.admin.host) : undefined;
  outbox.start();
  const flushLog = () => [refusals.flush, kept.flushLog].forEach((flush) => flush?.());
  return {
    url: urlOf(main),
    flushLog,
    ...(admin ? { adminUrl: urlOf(admin) } : {}),
    close: (drainMs = 0) =>
      (closing ??= (async () => {
        // The listeners answer on meanwhile, /healthz and /readyz 503: a load balancer that has
        // not yet seen them sends a shopper here, who gets an answer, not a refused connection.
        const drained = new Promise((resolve) => setTimeout(resolve, drainMs));
        // New checkouts are answered 503 shutting_down at once; the checks under way finish.
        readiness.close();
        await endpoint.close();
        await stopSweeping();
        await callbacks.close();
        await outbox.close();
        await monitor?.close();
        await drained;
        for (const server of [main, admin]) {
          if (!server) continue;
          server.closeIdleConnections();
          await new Promise((resolve) => server.close(resolve));
        }
        // Last: no request is left to write to the store or the queue.
        await kept.close();
        flushLog();
      })()),
  };
}

/**
 * Every connection has a time limit (docs/gateway.md#connections): one that sends nothing for
 * `idleMs` is closed (a zero-byte connection included), its headers within 10 s, its whole
 * request within 30 s, and a kept-alive one idle past 5 s.
 */
function withTimeouts(
  server: Server,
  idleMs: number,
  maxConnections: number,
  refused: (code: string, message: string) => void,
): Server {
  // Past it, Node closes a new connection at once ('drop'): told, as every refusal is.
  server.maxConnections = maxConnections;
  server.on('drop', () =>
    refused(
      TOO_MANY_CONNECTIONS,
      `refused a connection: ${TOO_MANY_CONNECTIONS} (MAX_CONNECTIONS ${maxConnections} held)`,
    ),
  );
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => refuseUnparsed(error, socket, refused));
  server.headersTimeout = Math.min(HEADERS_TIMEOUT_MS, idleMs);
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.keepAliveTimeout = Math.min(KEEP_ALIVE_TIMEOUT_MS, idleMs);
  server.setTimeout(idleMs);
  return server;
}

/** What Node's parser refuses before any handler runs, by its error code: the answer's status and code. */
const UNPARSED: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'headers_too_large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'request_timeout'],
};

/**
 * A request Node's parser refused (headers over its 16 KiB, a malformed request line, headers
 * too slow): answered as Node would, in the gateway's JSON, and told (Node alone says nothing).
 */
function refuseUnparsed(
  error: NodeJS.ErrnoException,
  socket: Duplex,
  refused: (code: string, message: string) => void,
) {
  // The client went away: nothing to answer, nothing refused.
  if (error.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
  const [status, code] = UNPARSED[error.code ?? ''] ?? [400, 'bad_request'];
  refused(code, `refused a request before any route: ${status} ${code} (${error.code ?? 'unparsed'})`);
  const body = JSON.stringify({ error: { code } });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncache-control: no-store\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
  );
}

function listen(server: Server, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

function urlOf(server: Server): string {
  const { address, port } = server.address() as AddressInfo;
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}
