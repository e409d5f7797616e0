/**
 * What the proxy accepts from the collector: an answer a web Response can carry. Anything
 * else (a 1xx or a status outside 200-599, from the collector or a proxy in front of it) is
 * the collector's fault, answered 502 `bad_upstream`, never a thrown RangeError.
 */

/** A final status a web Response can carry. */
export const usableStatus = (status: number): boolean => Number.isInteger(status) && status >= 200 && status <= 599;

/** The collector's answer cannot be passed on. */
export class BadUpstreamAnswerError extends Error {
  override readonly name = 'BadUpstreamAnswerError';
}
