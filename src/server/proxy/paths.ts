/**
 * Which requests the first-party proxy takes, and the collector path each one names: only a
 * path under the prefix, and only one that can name nothing but a file under the collector's
 * base path (docs/proxy.md, "The kit's proxy, in detail").
 */
import { REFUSED_PATH_SOURCE } from './contract.js';

/** The contract's refused paths, read on the rest after the prefix (whatever the prefix). */
const REFUSED = new RegExp(REFUSED_PATH_SOURCE.replace('^/iojs/', '^'), 'i');

/**
 * The path after the prefix, when it can only name a file under the collector's base path:
 * undefined for anything else (the contract's rule, REFUSED_PATH_SOURCE: no dot or empty
 * segment, no `:`, `;`, `\\` or control byte, and no escape of one of them nor of `%`, so one
 * decoding, the collector's, cannot make one either).
 */
export function collectorPath(rest: string): string | undefined {
  return REFUSED.test(rest) ? undefined : rest;
}

/** The request's path as sent, before any decoding: what the browser asked for. */
export function rawPathOf(request: Request): string {
  // Stryker disable next-line Regex: a request URL starts with its scheme, so its first origin is at the start
  const afterOrigin = request.url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '');
  return afterOrigin.split(/[?#]/)[0]!; // split() always gives a first part
}

/** Whether a raw path is the prefix or under it (`/iojsx` is not). */
export const underPrefix = (path: string, prefix: string) => path === prefix || path.startsWith(prefix + '/');
