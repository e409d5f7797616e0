/**
 * How fast the queue drains, and whether it can drain in time: the backlog's figures for the
 * metrics and for `backlog()`, and the one warning when the checks waiting cannot all run
 * within the trust bound at the rate the service lets through (docs/fleet.md#the-queue).
 */
import type { Now } from '../clock.js';

/** The window the drain rate is measured over, in ms. */
export const DRAIN_WINDOW_MS = 60_000;

export interface BacklogFigures {
  queued: number;
  /** Age of the oldest check waiting, in ms (0 when none waits). */
  oldestAgeMs: number;
  /** Checks finished per second over the last minute (or since the backlog began, if later). */
  drainPerSecond: number;
  /** Seconds the backlog needs at that rate; Infinity when nothing drained yet. */
  drainSeconds: number;
}

/** Counts finished checks in one-second buckets over the last minute. */
export function createDrainMeter(now: Now) {
  const buckets = new Map<number, number>();
  /** When the meter first saw work since it last saw none: a young backlog is measured over its own life. */
  let since: number | undefined;
  const prune = (at: number) => {
    for (const second of buckets.keys()) if (second * 1000 <= at - DRAIN_WINDOW_MS) buckets.delete(second);
  };
  return {
    /** A check left the queue (checked, or given up). */
    drained(): void {
      const at = now();
      const second = Math.floor(at / 1000);
      buckets.set(second, (buckets.get(second) ?? 0) + 1);
      prune(at);
    },
    /** The backlog's figures; `fleetDrained`: the checks every instance of a shared queue finished in the last minute. */
    figures(queued: number, oldestAcceptedAt: number | undefined, fleetDrained?: number): BacklogFigures {
      const at = now();
      prune(at);
      if (queued === 0) since = undefined;
      else since ??= oldestAcceptedAt ?? at;
      let count = 0;
      for (const n of buckets.values()) count += n;
      const windowMs = Math.min(DRAIN_WINDOW_MS, Math.max(1000, at - (since ?? at)));
      const drainPerSecond = (fleetDrained ?? count) / (windowMs / 1000);
      return {
        queued,
        oldestAgeMs: oldestAcceptedAt === undefined ? 0 : Math.max(0, at - oldestAcceptedAt),
        drainPerSecond,
        drainSeconds: queued === 0 ? 0 : drainPerSecond > 0 ? queued / drainPerSecond : Infinity,
      };
    },
  };
}

/**
 * True once per backlog episode, when the checks waiting cannot all start within `trustMs`
 * of their acceptance at the measured drain rate (and some drained, so the rate means
 * something). A backlog that empties starts a new episode.
 */
export function createBacklogWarning(trustMs: number) {
  let warned = false;
  return (figures: BacklogFigures): boolean => {
    if (figures.queued === 0) {
      warned = false;
      return false;
    }
    if (warned || figures.drainPerSecond === 0) return false;
    if (figures.drainSeconds * 1000 <= trustMs - figures.oldestAgeMs) return false;
    warned = true;
    return true;
  };
}
