/**
 * Admission before cost: how many checkouts one source (a caller address, a customer) may
 * start, decided in this process's memory before a request takes store space or a call to
 * the service. The tenant's account quota at the service is 1 request a second by default
 * (docs/server.md#admission): without this, one visitor's burst spends it for every shopper.
 */
import { DeviceRiskError, ERR_INVALID_CONFIGURATION } from '../errors.js';
import type { Now } from '../clock.js';
import { endpointMessages } from '../messages.js';

/** A token bucket's size: `burst` at once, refilled at `perMinute`. */
export interface RateLimit {
  burst: number;
  perMinute: number;
}

/** Sources tracked at most: past it, the one touched longest ago is forgotten (it only gets a full bucket back). */
export const MAX_TRACKED_SOURCES = 10_000;

export interface Limiter {
  /** Takes one from `source`'s bucket: 0 when admitted, else the seconds until one is there. */
  take(source: string): number;
}

export function checkRateLimit(limit: RateLimit, name: string): RateLimit {
  const positive = (n: unknown) => Number.isFinite(n) && (n as number) > 0;
  if (!limit || !positive(limit.burst) || !positive(limit.perMinute))
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, endpointMessages.badRateLimit(name));
  return limit;
}

/** Token buckets per source, in a bounded map (the least recently touched is dropped first). */
export function createLimiter(limit: RateLimit, now: Now, maxSources = MAX_TRACKED_SOURCES): Limiter {
  const perMs = limit.perMinute / 60_000;
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take(source) {
      const at = now();
      const last = buckets.get(source);
      const tokens = last ? Math.min(limit.burst, last.tokens + (at - last.at) * perMs) : limit.burst;
      // Re-inserted on every touch: the map's order is the order of last use.
      buckets.delete(source);
      if (buckets.size >= maxSources) buckets.delete(buckets.keys().next().value!);
      if (tokens >= 1) {
        buckets.set(source, { tokens: tokens - 1, at });
        return 0;
      }
      buckets.set(source, { tokens, at });
      return Math.max(1, Math.ceil((1 - tokens) / perMs / 1000));
    },
  };
}
