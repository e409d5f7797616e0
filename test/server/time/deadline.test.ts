// deadline(): the time limit every server-side call uses, a timer held by its owner.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { deadline } from '../../../src/server/time/deadline.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('deadline', () => {
  it('aborts at the time limit with a TimeoutError, and says it expired', () => {
    vi.useFakeTimers();
    const limit = deadline(100);
    vi.advanceTimersByTime(99);
    expect([limit.signal.aborted, limit.expired]).toEqual([false, false]);
    vi.advanceTimersByTime(1);
    expect([limit.signal.aborted, limit.expired]).toEqual([true, true]);
    expect(limit.signal.reason).toMatchObject({ name: 'TimeoutError', message: 'no answer within 100 ms' });
  });

  it('aborts with the reason of a parent that aborts first, and has not expired', () => {
    vi.useFakeTimers();
    const parent = new AbortController();
    const limit = deadline(100, undefined, parent.signal);
    parent.abort('gone');
    expect([limit.signal.aborted, limit.signal.reason, limit.expired]).toEqual([true, 'gone', false]);
  });

  it('starts aborted when a parent already is', () => {
    const limit = deadline(100, AbortSignal.abort('before'));
    expect([limit.signal.aborted, limit.signal.reason]).toEqual([true, 'before']);
    limit.clear();
  });

  it('clear() stops the timer and the parent listeners', () => {
    vi.useFakeTimers();
    const parent = new AbortController();
    const limit = deadline(100, parent.signal);
    limit.clear();
    vi.advanceTimersByTime(1000);
    parent.abort();
    expect([limit.signal.aborted, limit.expired]).toEqual([false, false]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a limit past the largest timer fires no sooner than that (Node would fire it after 1 ms)', () => {
    vi.useFakeTimers();
    const limit = deadline(2 ** 40);
    vi.advanceTimersByTime(2 ** 31 - 2);
    expect(limit.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(limit.signal.aborted).toBe(true);
  });

  it('a negative limit fires at once', () => {
    vi.useFakeTimers();
    const limit = deadline(-5);
    vi.advanceTimersByTime(0);
    expect(limit.signal.aborted).toBe(true);
  });
});
