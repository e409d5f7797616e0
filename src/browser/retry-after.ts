/**
 * Retry-After as the delivery (deliver.ts) reads it. A module of its own so that its tests reach
 * it without it being an export of the delivery chunk, which the UMD file and every bundler
 * keep, name and all.
 */

/** Retry-After in ms (seconds or an HTTP date); NaN when absent or unreadable. */
export function retryAfterMs(response: Response): number {
  // Stryker disable next-line StringLiteral: any text that is neither digits nor a date reads as NaN, as '' does
  const header = response.headers.get('retry-after') ?? '';
  return /^\d+$/.test(header) ? +header * 1000 : Date.parse(header) - Date.now();
}
