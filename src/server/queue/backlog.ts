/**
 * How fast the queue drains, and whether it can drain in time: the backlog's figures for the
 * metrics and for `backlog()`, and the one warning when the checks waiting cannot all run
 * within the trust bound at the rate the service lets through (docs/fleet.md#the-queue).
 */
import { isStoreAway } from '../errors.js';
import type { Now } from '../time/clock.js';
import { GUEST_SHARE, type Lane } from './queue.js';

/** The window the drain rate is measured over, in ms. */
export const DRAIN_WINDOW_MS = 60_000;

export interface BacklogFigures {
  queued: number;
  /** Age of the oldest check waiting, in ms (0 when none waits). */
  oldestAgeMs: number;
  /**
   * Checks finished per second over the last minute (or since the backlog began, if later):
   * those that ended with a check, answered or given up after trying. A stale drop is no work
   * done and is not counted here (`staleLastMinute`).
   */
  drainPerSecond: number;
  /** The window `drainPerSecond` was measured over, in ms (a young backlog's own life, at most a minute). */
  drainWindowMs: number;
  /** Seconds the backlog needs at that rate; Infinity when nothing drained yet. */
  drainSeconds: number;
  /** Checks dropped unchecked in the last minute, past the trust bound (`blackbox_stale`). */
  staleLastMinute: number;
  /**
   * True when the figures are the whole fleet's, read from a shared queue (BullMQ): every
   * instance reads the same; false when they are this instance's own queue (memory).
   */
  fleetWide: boolean;
  /** Time before the oldest check waiting reaches the trust bound, in ms: the whole bound when none waits, 0 past it. */
  timeLeftMs: number;
  /** Checkouts this instance accepted a second over the last minute (its own, even on a shared queue). */
  acceptedPerSecond: number;
}

/** What a shared queue counted for the whole fleet over the last minute. */
export interface FleetFinished {
  drained: number;
  stale: number;
}

/** Counts in one-second buckets over the last minute. */
function createMinuteCount() {
  const buckets = new Map<number, number>();
  const prune = (at: number) => {
    for (const second of buckets.keys()) if (second * 1000 <= at - DRAIN_WINDOW_MS) buckets.delete(second);
  };
  return {
    add(at: number): void {
      const second = Math.floor(at / 1000);
      buckets.set(second, (buckets.get(second) ?? 0) + 1);
      prune(at);
    },
    total(at: number): number {
      prune(at);
      let count = 0;
      for (const n of buckets.values()) count += n;
      return count;
    },
  };
}

/** Counts finished checks, and apart from them stale drops, in one-second buckets over the last minute. */
export function createDrainMeter(now: Now, trustMs: number) {
  const drained = createMinuteCount();
  const stale = createMinuteCount();
  const accepted = createMinuteCount();
  /**
   * When the meter first saw work since it last saw none (nothing queued, nothing drained in the
   * window): a young backlog is measured over its own life; a queue that has just emptied, over
   * the life of the backlog it drained, never over the second since (2 checks in the last
   * minute are not 2 a second).
   */
  let since: number | undefined;
  return {
    /** A check left the queue having been tried: checked, or given up after trying. */
    drained(): void {
      drained.add(now());
    },
    /** A checkout was accepted into the queue here. */
    accepted(): void {
      accepted.add(now());
    },
    /** A check left the queue unchecked, past the trust bound: not counted as drained. */
    stale(): void {
      stale.add(now());
    },
    /** The backlog's figures; `fleet`: what every instance of a shared queue finished in the last minute. */
    figures(queued: number, oldestAcceptedAt: number | undefined, fleet?: FleetFinished): BacklogFigures {
      const at = now();
      const finished = fleet?.drained ?? drained.total(at);
      if (queued === 0 && finished === 0) since = undefined;
      // Work this meter did not see begin (another instance's, or before this process): the whole window.
      else since ??= queued === 0 ? at - DRAIN_WINDOW_MS : (oldestAcceptedAt ?? at);
      const windowMs = Math.min(DRAIN_WINDOW_MS, Math.max(1000, at - (since ?? at)));
      const drainPerSecond = finished / (windowMs / 1000);
      const oldestAgeMs = oldestAcceptedAt === undefined ? 0 : Math.max(0, at - oldestAcceptedAt);
      return {
        queued,
        oldestAgeMs,
        drainPerSecond,
        drainWindowMs: windowMs,
        drainSeconds: queued === 0 ? 0 : drainPerSecond > 0 ? queued / drainPerSecond : Infinity,
        staleLastMinute: fleet?.stale ?? stale.total(at),
        fleetWide: fleet !== undefined,
        timeLeftMs: queued === 0 ? trustMs : Math.max(0, trustMs - oldestAgeMs),
        acceptedPerSecond: accepted.total(at) / (DRAIN_WINDOW_MS / 1000),
      };
    },
  };
}

/**
 * True once per backlog episode, when the checks waiting cannot all start within `trustMs`
 * of their acceptance at the measured drain rate (and some drained, so the rate means
 * something), or checks are going stale while nothing drains. A backlog that empties starts a
 * new episode.
 */
export function createBacklogWarning(trustMs: number) {
  let warned = false;
  return (figures: BacklogFigures): boolean => {
    if (figures.queued === 0) {
      warned = false;
      return false;
    }
    if (warned) return false;
    if (figures.drainPerSecond === 0 && !(figures.staleLastMinute > 0)) return false;
    if (figures.drainSeconds * 1000 <= trustMs - figures.oldestAgeMs) return false;
    warned = true;
    return true;
  };
}

/**
 * The share of the trust bound a checkout accepted now may wait before its check starts: the
 * rest is headroom for a drain a little slower than the rate admitted by (the queue drains at
 * about 97 % of the contracted limit: docs/performance.md) and for the few checkouts other
 * instances accept between two reads of a shared queue.
 */
const START_WITHIN_SHARE = 0.95;

/** Checks drained in the window before the measured rate is trusted over the contracted one. */
const MEASURED_AFTER_CHECKS = 10;

/** What the late check found: the refusal's answer, or the jobs held at which the add is `full` (none: not read). */
export type Lateness<T> = { refused: T; lateAt?: undefined } | { refused?: undefined; lateAt?: number };

/**
 * For the accept: `refuse`'s answer when a checkout accepted now could not start within
 * `START_WITHIN_SHARE` of `trustMs`, else the count of jobs held at which it could not (the
 * queue's add checks it again, counting other instances' accepts since the read). The rate is the contracted one
 * (`contractedPerSecond`, the tenant's account limit, the same for a whole fleet) until the
 * queue has drained `MEASURED_AFTER_CHECKS` in its window, then the lower of the two: a backlog
 * that has not drained yet is not a backlog that drains at once. The figures are read afresh
 * for each accept (a read under way is shared by the accepts of the next 100 ms), and the
 * checkouts this instance accepted since are counted on top: on a shared queue every
 * instance sees the others' accepts within that time (docs/fleet.md#the-trust-bound).
 */
export function createLateCheck<T>(
  figuresOf: () => Promise<BacklogFigures>,
  now: Now,
  trustMs: number,
  contractedPerSecond: number,
  refuse: (figures: BacklogFigures) => T,
) {
  let recent: { at: number; figures: Promise<BacklogFigures | undefined>; acceptedSince: number } | undefined;
  return {
    /** A guest's (`lane`) checkout is late at GUEST_SHARE of the bound: the rest is kept for signed-in shoppers. */
    async late(lane?: Lane): Promise<Lateness<T>> {
      const at = now();
      if (!recent || at - recent.at >= 100)
        // A count that failed is passed over (the add fails too when the queue is away); one the
        // queue did not answer in time (store_unavailable) refuses: the trust bound is unknown.
        recent = {
          at,
          figures: figuresOf().catch((error: unknown) => (isStoreAway(error) ? Promise.reject(error) : undefined)),
          acceptedSince: 0,
        };
      const read = recent;
      const figures = await read.figures;
      if (!figures) return {};
      const measured = figures.drainPerSecond * (figures.drainWindowMs / 1000) >= MEASURED_AFTER_CHECKS;
      const perSecond = measured ? Math.min(figures.drainPerSecond, contractedPerSecond) : contractedPerSecond;
      const share = START_WITHIN_SHARE * (lane === 'guest' ? GUEST_SHARE : 1);
      // The checkouts ahead that start within the share at that rate, this one after them.
      const lateAt = Math.floor((perSecond * trustMs * share) / 1000);
      return figures.queued + read.acceptedSince >= lateAt ? { refused: refuse(figures) } : { lateAt };
    },
    /** A checkout this instance accepted since the last read: it waits ahead of the next. */
    accepted(): void {
      if (recent) recent.acceptedSince += 1;
    },
  };
}
