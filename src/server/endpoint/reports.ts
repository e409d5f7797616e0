/** The bound on outcome-only reports: they write nothing to the store, so they are bounded here. */
import { DeviceRiskError, ERR_INVALID_CONFIGURATION } from '../errors.js';
import { endpointMessages } from '../messages.js';
import { BoundedMap } from './bounded-map.js';

/** How many report keys a process remembers to tell each once; the oldest go first (a count doubled now and then). */
export const REMEMBERED_REPORTS = 10_000;

/**
 * The bound on outcome-only reports, in this process only: a token bucket of
 * `perSecond`, holding five seconds' worth, and the keys already told.
 */
export function outcomeReports(perSecond: number, now: () => number) {
  if (!(perSecond > 0)) throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, endpointMessages.reportsPerSecond);
  const capacity = perSecond * 5;
  let tokens = capacity;
  let refilledAt = now();
  const told = new BoundedMap<string, true>(REMEMBERED_REPORTS);
  return {
    /** True when a report may be taken now. */
    take(): boolean {
      const at = now();
      tokens = Math.min(capacity, tokens + ((at - refilledAt) / 1000) * perSecond);
      refilledAt = at;
      if (tokens < 1) return false;
      tokens -= 1;
      return true;
    },
    /** True the first time this process sees `key`. */
    first(key: string): boolean {
      if (told.has(key)) return false;
      told.set(key, true);
      return true;
    },
  };
}
