export interface FleetInstance {
  child: import('node:child_process').ChildProcess;
  url: string;
  alive: boolean;
  /** Requests it is working on now. */
  inFlight: number;
  /** Requests it was working on when it was killed: each can have left one account create on the wire. */
  inFlightAtKill: number;
  /** Orphaned transactions it reported (onError, code orphaned_transaction). */
  orphansReported: number;
  /** Where it receives the service's callbacks. */
  callbackUrl: string;
  /** Workflow execution ids: one per call of onResult, and one per call that returned. */
  tries: string[];
  results: string[];
  /** With the queue: the customerInternalReference of each onResult call. */
  decided: string[];
  /** What it reported through onError (orphans aside), a line each: "<code> <message>". */
  errors: string[];
}
export interface Fleet {
  instances: FleetInstance[];
  kill(index: number): void;
  /** `kill`, once the instance has `atLeast` (2) requests in flight, waiting up to `withinMs` (10 s). */
  killBusy(index: number, options?: { atLeast?: number; withinMs?: number }): Promise<void>;
  stop(): Promise<void>;
}
export interface KeyOutcome {
  key: string;
  ok: boolean;
  body?: unknown;
  statuses: Array<number | string>;
  codes: string[];
  /** The longest wait for one attempt's answer, in ms. */
  slowestMs: number;
  ms: number;
}
export declare function fleetConfig(
  emulator: {
    tokenUrl: string;
    serviceUrls: { baseUrl: string; apiBaseUrl: string; retrievalBaseUrl: string };
    clientId: string;
    clientSecret: string;
  },
  options?: {
    redisUrl?: string;
    leaseMs?: number;
    sweepIntervalMs?: number;
    callbackFailEvery?: number;
    /** The accepted answer on the fleet's BullMQ queue. */
    queue?: boolean;
    maxQueued?: number;
    stalledIntervalMs?: number;
    lockDurationMs?: number;
  },
): Record<string, unknown>;
export declare function startFleet(count: number, config: Record<string, unknown>): Promise<Fleet>;
/** `blackbox` made the key's own: the key's hex after its '0400' prefix. */
export declare function blackboxFor(blackbox: string, key: string): string;
export declare function drive(options: {
  fleet: Fleet;
  keys: string[];
  concurrency: number;
  blackbox: string;
  maxAttempts?: number;
  maxRetryWaitMs?: number;
  onProgress?: (done: number) => void | Promise<void>;
}): Promise<KeyOutcome[]>;
