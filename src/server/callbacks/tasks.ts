/**
 * What one instance of the callback handler owns in memory, and lets go of on close(): the
 * work under way (for idle()), one retry timer per callback at most, the leases it holds,
 * and the signal that aborts the onResult calls under way. Everything else lives in the
 * store, so that another instance carries it on (docs/fleet.md).
 */
import { DeviceRiskError, ERR_ABORTED } from '../errors.js';
import { callbackMessages } from '../messages.js';
import type { Lease } from '../store/lease.js';
import { unrefd } from '../time/clock.js';

export interface CallbackTasks {
  /** Aborted by close(): the onResult calls under way. */
  readonly signal: AbortSignal;
  readonly closed: boolean;
  /** Keeps `work` until it settles (idle() waits for it); a rejection goes to `report`. */
  track(work: Promise<void>): void;
  /** Runs `run` after `delayMs`, replacing the callback's earlier timer; nothing once closed. */
  retryAfter(key: string, delayMs: number, run: () => Promise<void>): void;
  /** This instance's own timer will try `key`. */
  hasRetry(key: string): boolean;
  /** Runs `work` holding `lease`, which close() lets go of while it is held, and releases it after. */
  holding(lease: Lease, work: () => Promise<void>): Promise<void>;
  /** Resolves once every tracked work has settled, including work started meanwhile. */
  idle(): Promise<void>;
  /** Stops the timers, aborts `signal`, and releases every lease held. */
  close(): Promise<void>;
}

export function callbackTasks(report: (error: unknown) => void): CallbackTasks {
  const running = new Set<Promise<void>>();
  const retryTimers = new Map<string, ReturnType<typeof setTimeout>>();
  const held = new Set<Lease>();
  const closing = new AbortController();
  let closed = false;

  const tasks: CallbackTasks = {
    signal: closing.signal,
    get closed() {
      return closed;
    },
    track(work) {
      const settled = work.catch(report).finally(() => running.delete(settled));
      running.add(settled);
    },
    retryAfter(key, delayMs, run) {
      if (closed) return;
      clearTimeout(retryTimers.get(key));
      // A retry waits in the store too: it must not keep the process alive.
      const timer = unrefd(
        setTimeout(() => {
          retryTimers.delete(key);
          tasks.track(run());
        }, delayMs),
      );
      retryTimers.set(key, timer);
    },
    hasRetry: (key) => retryTimers.has(key),
    async holding(lease, work) {
      held.add(lease);
      try {
        await work();
      } finally {
        held.delete(lease);
        await lease.release();
      }
    },
    async idle() {
      while (running.size) await Promise.all(running);
    },
    async close() {
      closed = true;
      for (const timer of retryTimers.values()) clearTimeout(timer);
      retryTimers.clear();
      closing.abort(new DeviceRiskError(ERR_ABORTED, callbackMessages.closed));
      await Promise.all([...held].map((lease) => lease.release()));
    },
  };
  return tasks;
}
