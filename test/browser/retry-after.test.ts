// Retry-After as the delivery code reads it: seconds or an HTTP date, NaN otherwise.
import { describe, expect, it } from 'vitest';
import { retryAfterMs } from '../../src/browser/retry-after.js';

const answer = (value?: string) =>
  new Response(null, { status: 503, headers: value === undefined ? {} : { 'retry-after': value } });

describe('retryAfterMs', () => {
  it('reads seconds, whole', () => {
    expect(retryAfterMs(answer('5'))).toBe(5000);
    expect(retryAfterMs(answer('12'))).toBe(12_000);
    expect(retryAfterMs(answer('0'))).toBe(0);
  });

  it('reads an HTTP date, and a date that starts or ends with digits is a date', () => {
    const inTen = new Date(Date.now() + 10_000);
    for (const text of [inTen.toUTCString(), inTen.toISOString(), inTen.toISOString().replace(/\.\d+Z$/, '')]) {
      const ms = retryAfterMs(answer(text));
      expect(ms, text).toBeGreaterThan(
        7_000 + (text.endsWith('Z') || text.endsWith('GMT') ? 0 : inTen.getTimezoneOffset() * 60_000),
      );
      expect(ms, text).toBeLessThanOrEqual(10_000 + inTen.getTimezoneOffset() * 60_000 + 1000);
    }
  });

  it('anything else is NaN, or a date long past (the engine reads "1.5" as 2001): either way the backoff decides', () => {
    for (const text of [undefined, '', 'soon', '5 seconds', 'x5'])
      expect(retryAfterMs(answer(text)), String(text)).toBeNaN();
    for (const text of ['1.5', '-3']) expect(retryAfterMs(answer(text)), text).toBeLessThan(0);
  });
});
