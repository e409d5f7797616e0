/**
 * Admission before cost: how many checkouts one source (a visitor: the shop's session or
 * cart, or a caller's network; a customer) may start, decided in this process's memory before
 * a request takes store space or a call to the service. The tenant's account quota at the
 * service is 1 request a second by default (docs/server.md#admission): without this, one
 * visitor's burst spends it for every shopper.
 */
import { DeviceRiskError, ERR_INVALID_CONFIGURATION } from '../errors.js';
import type { Now } from '../time/clock.js';
import type { RequestContext } from '../fetch-handler.js';
import { endpointMessages } from '../messages.js';
import { BoundedMap } from './bounded-map.js';

/**
 * The shop's own notion of a visitor (the handler's `visitor`): its session or cart id read
 * from the request, or undefined for a request that carries none.
 */
export type VisitorOf = (
  request: Request,
  context?: RequestContext,
) => string | undefined | Promise<string | undefined>;

/** The `visitor` option checked when the handler is made: a function, or absent. */
export function checkVisitorOption(visitor: unknown): VisitorOf | undefined {
  if (visitor === undefined) return undefined;
  if (typeof visitor !== 'function')
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, endpointMessages.visitorOption);
  return visitor as VisitorOf;
}

/** Longest visitor id the shop's function may give, in characters. */
const MAX_VISITOR_LENGTH = 1024;
/** Every request the shop's function names no visitor for: one visitor together (docs/fleet.md#many-addresses). */
export const NO_VISITOR = 'visitor none';

/**
 * The visitor the shop's function names for `request`, as the admission and the queue's turns
 * count it: its id hashed (a session id is a credential: it goes into no queue, Redis or log),
 * or NO_VISITOR. Anything but a string of 1 to 1024 characters or undefined is
 * `invalid_configuration` (the handler answers 500 and tells it).
 */
export async function shopVisitor(visitorOf: VisitorOf, request: Request, context?: RequestContext): Promise<string> {
  const id: unknown = await visitorOf(request, context);
  if (id === undefined) return NO_VISITOR;
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_VISITOR_LENGTH)
    throw new DeviceRiskError(
      ERR_INVALID_CONFIGURATION,
      endpointMessages.badVisitor(typeof id === 'string' ? `a string of ${id.length} characters` : typeof id),
    );
  return 'visitor ' + (await hashedId(id));
}

/**
 * The visitor of a signed-in shopper's checkout (CustomerMapping.signedIn): the shop's account,
 * `userReference`, hashed as a shop's visitor id is (docs/server.md#signed-in-shoppers-first).
 */
export async function accountVisitor(userReference: string): Promise<string> {
  return 'account ' + (await hashedId(userReference));
}

/** An id as a queue or a log may hold it: the first 16 bytes of its SHA-256, in hex. */
async function hashedId(id: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(id));
  return Array.from(new Uint8Array(digest).slice(0, 16), (b) => b.toString(16).padStart(2, '0')).join('');
}

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
  const buckets = new BoundedMap<string, { tokens: number; at: number }>(maxSources);
  return {
    take(source) {
      const at = now();
      const last = buckets.get(source);
      const tokens = last ? Math.min(limit.burst, last.tokens + (at - last.at) * perMs) : limit.burst;
      // Set on every touch: the map's order is the order of last use.
      if (tokens >= 1) {
        buckets.set(source, { tokens: tokens - 1, at });
        return 0;
      }
      buckets.set(source, { tokens, at });
      return Math.max(1, Math.ceil((1 - tokens) / perMs / 1000));
    },
  };
}
