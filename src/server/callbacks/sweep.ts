/**
 * The sweep: every instance reads the store's list of pending callbacks now and then and
 * hands each due one to delivery, whose lease keeps it to one instance at a time. It is how
 * a callback whose instance died, or whose retry met the store away, is still delivered
 * (docs/fleet.md). It runs every `sweepIntervalMs`, and on a callback's arrival after as long
 * (runtimes that freeze between requests run no interval).
 */
import { DeviceRiskError, ERR_STORE_UNAVAILABLE } from '../errors.js';
import { callbackMessages } from '../messages.js';
import { unrefd } from '../time/clock.js';
import type { Deliver } from './delivery.js';
import type { PendingList } from './pending.js';
import { parseRecord } from './record.js';
import type { CallbackSettings } from './settings.js';
import type { CallbackTasks } from './tasks.js';

export interface CallbackSweep {
  /** Sweeps now (one sweep at a time: a call during one shares it). */
  sweep(): Promise<void>;
  /** Starts the interval once, and sweeps now when the last sweep is an interval old. */
  sweepWhenDue(): void;
  /** Stops the interval. */
  stop(): void;
}

export function callbackSweep(
  settings: CallbackSettings,
  tasks: CallbackTasks,
  pending: PendingList,
  deliver: Deliver,
): CallbackSweep {
  const { store, now, leaseMs, sweepIntervalMs } = settings;
  let timer: ReturnType<typeof setInterval> | undefined;
  let lastSweep = -Infinity;
  let sweeping: Promise<void> | undefined;

  async function sweepOnce(): Promise<void> {
    lastSweep = now();
    for (const entry of await pending.entries()) {
      // This instance's own timer tries it; a lease later, the others may.
      if (tasks.hasRetry(entry.key)) continue;
      const stored = await store.get(entry.key);
      if (stored === undefined) {
        // Listed before its record is written: the record is written within a store call's
        // time limit, or never (the arrival was answered 503); an entry a lease old is stale.
        // Told all the same: a store that dropped a record it held loses a callback the service
        // may not send again.
        if (now() - entry.at >= leaseMs) {
          settings.report(
            new DeviceRiskError(ERR_STORE_UNAVAILABLE, callbackMessages.recordGone(entry.key), {
              operation: 'store',
            }),
          );
          await pending.remove(entry.key, entry.at);
        }
        continue;
      }
      const record = parseRecord(stored);
      if (record.state !== 'pending') await pending.remove(entry.key);
      // A callback's own instance tries first: another steps in a lease after it was due.
      else if (now() >= (record.nextAttemptAt ?? record.receivedAt) + leaseMs) tasks.track(deliver(entry.key));
    }
  }

  const sweep = (): Promise<void> => {
    sweeping ??= sweepOnce().finally(() => (sweeping = undefined));
    return sweeping;
  };

  return {
    sweep,
    sweepWhenDue() {
      if (tasks.closed) return;
      if (!timer) {
        // The interval must not keep the process alive: the records wait in the store.
        timer = unrefd(setInterval(() => tasks.track(sweep()), sweepIntervalMs));
      }
      if (now() - lastSweep >= sweepIntervalMs) tasks.track(sweep());
    },
    stop: () => clearInterval(timer),
  };
}
