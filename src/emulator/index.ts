/**
 * blackbox-capture/emulator: a local stand-in for the vendor scripts and the
 * identity-verification API, for the demo, the tests and integrators' own CI.
 * Node only; never part of the browser bundle.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
// A Node program: it serves on node:http through the Node adapter, as the kit's entry exports it.
import { toNodeHandler, type FetchHandler } from '../server/index.js';
import {
  createService,
  type DecisionMatch,
  type EmulatedDecision,
  type ServiceOptions,
  type Transaction,
  type WorkflowStatus,
} from './service/service.js';
import { createVendorHandlers, type CollectionDelays } from './scripts/routes.js';
import { withInspection } from './inspection.js';
import { createCallbackSender } from './callbacks.js';
import { canonicalRoute, createRouteFaults, DropConnection } from './route-faults.js';

export { decodeBlackbox, type DecodedBlackbox, type CollectionDelays } from './scripts/routes.js';
export { EMULATED_LOADER_VERSION, type CollectionSource } from './scripts/loader.js';
export type {
  WorkflowStatus,
  EmulatedDecision,
  DecisionMatch,
  PartName,
  WorkflowDefinition,
} from './service/service.js';
export { CONFORMANCE_CASES, conformancePage, runConformance, startConformanceSite } from './conformance.js';
export type {
  ConformanceCase,
  ConformancePage,
  ConformanceRecord,
  ConformanceResult,
  ConformanceSite,
} from './conformance.js';

/**
 * The routes a test counts and injects faults into, by host: `token` (auth); `accountCreate`,
 * `accountUpdate` (account); `upload`, `finalize` (api); `retrievalStatus` (also named
 * `status`: the one status read, on the retrieval host) and `details` (retrieval); the
 * vendor's `loader`, `collector`, `thirdParty`; `unknown`, any other path of the account or
 * api host.
 */
export type RouteName =
  | 'retrievalStatus'
  | 'details'
  | 'loader'
  | 'collector'
  | 'thirdParty'
  | 'token'
  | 'accountCreate'
  | 'accountUpdate'
  | 'upload'
  | 'finalize'
  | 'status'
  | 'unknown';

export interface Clock {
  now(): number;
}

/** A clock that moves only when told to, so tests can expire tokens without waiting. */
export function createManualClock(start = Date.now()): Clock & { advance(ms: number): void; set(ms: number): void } {
  let now = start;
  return {
    now: () => now,
    advance: (ms) => void (now += ms),
    set: (ms) => void (now = ms),
  };
}

export interface EmulatorOptions {
  /** Client credentials the token endpoint accepts. Default `emulator-client` / `emulator-secret`. */
  clientId?: string;
  clientSecret?: string;
  /** Access token lifetime in seconds. Default 3600. */
  accessTokenLifetimeSeconds?: number;
  /**
   * The service's documented limits per tenant (docs/vendor-contract.md#the-service), each
   * answered past with 429 and the documented body: token requests a second (default 10),
   * account creates and updates a second and their burst (default 1 and 10), retrievals
   * (status and details) a second (default 15). 0 turns one off; `limits: false` all of them.
   */
  tokenRequestsPerSecond?: number;
  accountRequestsPerSecond?: number;
  accountBurst?: number;
  retrievalRequestsPerSecond?: number;
  /** false: no limit at all (a load test of your own code, not of the service's limits). Default true. */
  limits?: boolean;
  /** Session timeout in ms. Default 15 minutes. */
  sessionTimeoutMs?: number;
  /**
   * Workflow keys, whether they include Device Risk, and its credential's part name
   * (`{ deviceRisk: true, part: 'prepared_data' }`; default `device_risk`); default: every key
   * does, as `device_risk`.
   */
  workflows?: ServiceOptions['workflows'];
  /** Delays of the collection scripts' contributions, in ms. */
  delays?: CollectionDelays;
  /**
   * Serve this loader at `loaderUrl` instead of the emulated one: the vendor's real loader
   * 5.2.2 or a newer file of yours (its default third-party host becomes the emulator's).
   */
  loaderSource?: string;
  /** Fixed ports (default: chosen by the OS). */
  ports?: Partial<Record<HostName, number>>;
  /** Default 127.0.0.1. */
  host?: string;
  clock?: Clock;
  /** fetch used for status callbacks. Default the global fetch. */
  fetch?: typeof fetch;
  /** Send an intermediate (ACQUIRED) callback on upload before the final one; also `faults.callbacks({ intermediate: true })`. */
  intermediateCallbacks?: boolean;
}

/** The emulator's origins: the vendor's three, and one per role of the service. */
export type HostName = 'loader' | 'collector' | 'thirdParty' | 'auth' | 'account' | 'api' | 'retrieval';

export interface Fault {
  /** How many of the next requests of the route fail. Default 1. */
  times?: number;
  /** Answer with this status (JSON problem body)… */
  status?: number;
  /** …or drop the connection without an answer. */
  drop?: boolean;
}

export interface SentCallback {
  url: string;
  body: unknown;
  /** The status of the last attempt's answer, when there was one. */
  status?: number;
  error?: string;
  /** Deliveries tried: 1, as the service sends each callback once; more only with the `resend` fault. */
  attempts: number;
  /** true once an attempt got a 2xx; false when dropped by a fault or not answered 2xx. */
  delivered?: boolean;
}

/**
 * How the next callbacks go out (until cleared): sent twice, late, or not at all; resent; or
 * preceded by an intermediate status.
 */
export interface CallbackFaults {
  duplicate?: boolean;
  delayMs?: number;
  drop?: boolean;
  /**
   * Resend a callback not answered 2xx (or lost on the network) up to this many more times,
   * waiting 200 ms, then twice as long before each next one. The service documents no resend:
   * by default each callback is sent once.
   */
  resend?: number;
  /** Send an intermediate callback (status ACQUIRED) on a transaction's first upload, before the final one. */
  intermediate?: boolean;
}

export interface TransactionView {
  accountId: string;
  workflowExecutionId: string;
  credentialId?: string;
  customerInternalReference: string;
  userReference?: string;
  workflowKey: string;
  status: WorkflowStatus;
  blackboxes: string[];
  /** The part name of its Device Risk credential, when it has one. */
  part?: 'device_risk' | 'prepared_data';
}

export interface Emulator {
  loaderUrl: string;
  /** The first-party collector: the reverse proxy's upstream. */
  collectorUrl: string;
  /** The vendor's third-party host (the loader's default `tp_host`). */
  thirdPartyUrl: string;
  tokenUrl: string;
  /** The account host: account create and update (the client's `baseUrl`); `accountUrl` too. */
  baseUrl: string;
  /** The account host: `POST /api/v1/accounts`, `PUT /api/v1/accounts/{id}` and nothing else. */
  accountUrl: string;
  /**
   * The API host: the upload and finalize addresses of a create answer are on it, and only
   * those are answered there (the client's `apiBaseUrl`).
   */
  apiUrl: string;
  /** The retrieval API: status and workflow details (the client's `retrievalBaseUrl`). */
  retrievalUrl: string;
  /**
   * The client's host options for the emulator, each role on its own origin as the service
   * has them: `createDeviceRiskClient({ tokenSource, userAgent, ...emulator.serviceUrls })`.
   */
  serviceUrls: { baseUrl: string; apiBaseUrl: string; retrievalBaseUrl: string };
  clientId: string;
  clientSecret: string;
  /** The web-standard handlers, to mount elsewhere. */
  handlers: Record<HostName, FetchHandler>;
  /**
   * Forces the decision of the transactions `match` names: a workflow execution id, a
   * customerInternalReference, a function, or 'next' (the next transaction processed). The
   * newest rule wins; `once` (default only for 'next') drops it after one decision.
   */
  decide(match: DecisionMatch, decision: EmulatedDecision, options?: { once?: boolean }): void;
  faults: {
    /** How the next callbacks go out, until cleared. */
    callbacks(faults: CallbackFaults): void;
    /** The next requests of `route` fail as described. */
    fail(route: RouteName, fault: Fault): void;
    /** Every request of `route` waits this long first. */
    latency(route: RouteName, ms: number): void;
    clear(): void;
  };
  inspect: {
    transactions(): TransactionView[];
    transaction(workflowExecutionId: string): TransactionView | undefined;
    requests(route?: RouteName): number;
    callbacks(): SentCallback[];
    reset(): void;
  };
  close(): Promise<void>;
}

/** The service's limits the emulator keeps: the documented ones unless told otherwise. */
function limitsOf(options: EmulatorOptions) {
  const on = options.limits !== false;
  return {
    tokenRequestsPerSecond: on ? (options.tokenRequestsPerSecond ?? 10) : 0,
    accountRequestsPerSecond: on ? (options.accountRequestsPerSecond ?? 1) : 0,
    accountBurst: options.accountBurst ?? 10,
    retrievalRequestsPerSecond: on ? (options.retrievalRequestsPerSecond ?? 15) : 0,
  };
}

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const host = options.host ?? '127.0.0.1';
  const clock = options.clock ?? { now: () => Date.now() };
  const doFetch = options.fetch ?? fetch;
  const { instrument, routeFaults, counts } = createRouteFaults();
  const callbacks: SentCallback[] = [];
  let callbackFaults: CallbackFaults = {};
  let retrievalUrl = '';
  let apiUrl = '';
  const clientId = options.clientId ?? 'emulator-client';
  const clientSecret = options.clientSecret ?? 'emulator-secret';

  const service = createService({
    clientId,
    clientSecret,
    accessTokenLifetimeSeconds: options.accessTokenLifetimeSeconds ?? 3600,
    ...limitsOf(options),
    sessionTimeoutMs: options.sessionTimeoutMs ?? 15 * 60_000,
    ...(options.workflows ? { workflows: options.workflows } : {}),
    now: () => clock.now(),
    retrievalOrigin: () => retrievalUrl,
    apiOrigin: () => apiUrl,
    sendCallback: createCallbackSender(doFetch, () => callbackFaults, callbacks),
    intermediateCallbacks: () => callbackFaults.intermediate ?? options.intermediateCallbacks ?? false,
  });

  const servers: Server[] = [];
  async function listen(handler: FetchHandler, port = 0): Promise<string> {
    // The kit's own Node adapter: a malformed request (a Host of "a b") is answered 400, as
    // an integrator's server answers it, and nothing a client sends can end the process.
    const node = toNodeHandler(handler);
    const server = createServer((req, res) =>
      node(req, res, (error: unknown) => {
        if (error instanceof DropConnection || res.headersSent) return void res.destroy();
        res.writeHead(500, { 'content-type': 'text/plain' }).end('emulator error');
      }),
    );
    servers.push(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, resolve);
    });
    return `http://${host}:${(server.address() as AddressInfo).port}`;
  }

  // The third-party origin must exist before the loader can name it as its default tp_host.
  let vendor: ReturnType<typeof createVendorHandlers> | undefined;
  const lazy =
    (pick: (v: NonNullable<typeof vendor>) => FetchHandler): FetchHandler =>
    (request) =>
      pick(vendor!)(request);
  const handlers = {
    thirdParty: instrument(
      () => 'thirdParty',
      lazy((v) => v.thirdParty),
    ),
    loader: instrument(
      () => 'loader',
      lazy((v) => v.loader),
    ),
    // The doctor's leak check reads what reached the collector (inspection.ts): never counted as a collector request.
    collector: withInspection(
      instrument(
        () => 'collector',
        lazy((v) => v.collector),
      ),
    ),
    auth: instrument(() => 'token', service.token),
    account: instrument(service.accountRoute, service.account),
    api: instrument(service.apiRoute, service.api),
    retrieval: instrument(
      (request) => service.retrievalRoute(request),
      async (request: Request) => service.retrieval(request),
    ),
  };
  const thirdPartyUrl = await listen(handlers.thirdParty, options.ports?.thirdParty);
  vendor = createVendorHandlers({
    defaultTpHost: thirdPartyUrl,
    ...(options.delays ? { delays: options.delays } : {}),
    ...(options.loaderSource !== undefined ? { loaderSource: options.loaderSource } : {}),
  });
  const loaderOrigin = await listen(handlers.loader, options.ports?.loader);
  const collectorUrl = await listen(handlers.collector, options.ports?.collector);
  const authOrigin = await listen(handlers.auth, options.ports?.auth);
  const accountUrl = await listen(handlers.account, options.ports?.account);
  apiUrl = await listen(handlers.api, options.ports?.api);
  retrievalUrl = await listen(handlers.retrieval, options.ports?.retrieval);

  const view = (tx: Transaction): TransactionView => ({
    accountId: tx.accountId,
    workflowExecutionId: tx.workflowExecutionId,
    customerInternalReference: tx.customerInternalReference,
    workflowKey: tx.workflowKey,
    status: service.statusOf(tx),
    blackboxes: [...tx.blackboxes],
    ...(tx.credentialId ? { credentialId: tx.credentialId } : {}),
    ...(tx.part ? { part: tx.part } : {}),
    ...(tx.userReference ? { userReference: tx.userReference } : {}),
  });

  return {
    loaderUrl: `${loaderOrigin}/loader.js`,
    collectorUrl,
    thirdPartyUrl,
    tokenUrl: `${authOrigin}/oauth2/token`,
    baseUrl: accountUrl,
    accountUrl,
    apiUrl,
    retrievalUrl,
    serviceUrls: { baseUrl: accountUrl, apiBaseUrl: apiUrl, retrievalBaseUrl: retrievalUrl },
    clientId,
    clientSecret,
    handlers,
    decide: (match, decision, { once } = {}) => service.decide(match, decision, once ?? match === 'next'),
    faults: {
      callbacks(faults) {
        callbackFaults = { ...faults };
      },
      fail: routeFaults.fail,
      latency: routeFaults.latency,
      clear() {
        routeFaults.clear();
        callbackFaults = {};
      },
    },
    inspect: {
      transactions: () => service.transactions().map(view),
      transaction: (id) => {
        const tx = service.transactions().find((t) => t.workflowExecutionId === id);
        return tx && view(tx);
      },
      requests: (route) =>
        route ? (counts.get(canonicalRoute(route)) ?? 0) : Array.from(counts.values()).reduce((a, b) => a + b, 0),
      callbacks: () => [...callbacks],
      reset: () => counts.clear(),
    },
    async close() {
      await Promise.all(
        servers.map((server) => {
          server.closeAllConnections();
          return new Promise((resolve) => server.close(resolve));
        }),
      );
    },
  };
}
