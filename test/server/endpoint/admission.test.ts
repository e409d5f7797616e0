// Admission before cost: the token buckets that decide, in memory, how many checkouts one
// source may start.
import { describe, expect, it } from 'vitest';
import {
  checkRateLimit,
  checkVisitorOption,
  createLimiter,
  MAX_TRACKED_SOURCES,
  NO_VISITOR,
  shopVisitor,
} from '../../../src/server/endpoint/admission.js';

describe('createLimiter', () => {
  it('admits a burst, then one per refill interval, each source on its own', () => {
    let clock = 0;
    const limiter = createLimiter({ burst: 3, perMinute: 6 }, () => clock);
    expect([1, 2, 3, 4].map(() => limiter.take('a'))).toEqual([0, 0, 0, 10]);
    expect(limiter.take('b')).toBe(0);
    clock += 9_999;
    expect(limiter.take('a')).toBe(1);
    clock += 1;
    // 10 s refill one token; the refused take above spent nothing.
    expect(limiter.take('a')).toBe(0);
    expect(limiter.take('a')).toBe(10);
  });

  it('refills to the burst and no further', () => {
    let clock = 0;
    const limiter = createLimiter({ burst: 2, perMinute: 60 }, () => clock);
    limiter.take('a');
    limiter.take('a');
    clock += 3_600_000;
    expect([1, 2, 3].map(() => limiter.take('a'))).toEqual([0, 0, 1]);
  });

  it('tracks a bounded number of sources, forgetting the one touched longest ago', () => {
    const limiter = createLimiter({ burst: 1, perMinute: 1 }, () => 0, 3);
    for (const source of ['a', 'b', 'c']) limiter.take(source);
    expect(limiter.take('a')).toBe(60);
    // 'a' was touched last: adding 'd' forgets 'b', which comes back with a full bucket.
    limiter.take('d');
    expect(limiter.take('c')).toBe(60);
    expect(limiter.take('b')).toBe(0);
    expect(MAX_TRACKED_SOURCES).toBe(10_000);
  });

  it('says a wait of at least one second', () => {
    const limiter = createLimiter({ burst: 1, perMinute: 600 }, () => 0);
    limiter.take('a');
    expect(limiter.take('a')).toBe(1);
  });
});

describe('checkRateLimit', () => {
  it.each([
    ['no object', undefined],
    ['a zero burst', { burst: 0, perMinute: 1 }],
    ['a negative rate', { burst: 1, perMinute: -1 }],
    ['an infinite rate', { burst: 1, perMinute: Infinity }],
    ['a string', { burst: '5', perMinute: 1 }],
  ])('refuses %s with invalid_configuration naming the option', (_, limit) => {
    expect(() => checkRateLimit(limit as never, 'checkoutsPerAddress')).toThrow(
      expect.objectContaining({
        code: 'invalid_configuration',
        message: expect.stringContaining('checkoutsPerAddress'),
      }),
    );
  });

  it('takes a valid one as it is', () => {
    const limit = { burst: 5, perMinute: 6 };
    expect(checkRateLimit(limit, 'x')).toBe(limit);
  });
});

describe("shopVisitor: the shop's own visitor", () => {
  const request = new Request('https://shop.example/device-risk', { method: 'POST' });
  it('hashes the id (the same id the same visitor), names none NO_VISITOR, and refuses anything else', async () => {
    const a = await shopVisitor(() => 'session-a', request);
    expect(a).toMatch(/^visitor [0-9a-f]{32}$/);
    expect(await shopVisitor(async () => 'session-a', request)).toBe(a);
    expect(await shopVisitor(() => 'session-b', request)).not.toBe(a);
    expect(await shopVisitor(() => undefined, request)).toBe(NO_VISITOR);
    expect(await shopVisitor(() => 'x'.repeat(1024), request)).toMatch(/^visitor /);
    for (const bad of ['', 'x'.repeat(1025), 7, null, {}])
      await expect(shopVisitor(() => bad as string, request)).rejects.toMatchObject({ code: 'invalid_configuration' });
  });

  it('the option: a function or absent, else invalid_configuration', () => {
    const fn = () => undefined;
    expect(checkVisitorOption(fn)).toBe(fn);
    expect(checkVisitorOption(undefined)).toBeUndefined();
    expect(() => checkVisitorOption('sid')).toThrow(expect.objectContaining({ code: 'invalid_configuration' }));
  });
});
