// Calls under a time limit: onResult's (a hung call fails at the limit, and a stop signal ends it
// at once), and a store or queue call's (answered or refused at the limit, never waited for).
import { getEventListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { callWithin, settleWithin } from '../../../src/server/time/time-limit.js';

describe('callWithin', () => {
  it('settles as the call does within the limit', async () => {
    await expect(callWithin(() => {}, 1000, new AbortController().signal)).resolves.toBeUndefined();
    await expect(
      callWithin(
        async () => {
          throw new Error('mine');
        },
        1000,
        new AbortController().signal,
      ),
    ).rejects.toThrow('mine');
    // A synchronous throw rejects too, not escapes.
    await expect(
      callWithin(
        () => {
          throw new Error('sync');
        },
        1000,
        new AbortController().signal,
      ),
    ).rejects.toThrow('sync');
  });

  it('a call that hangs fails at the limit with result_handler_timeout, and its signal aborts', async () => {
    let seen: AbortSignal | undefined;
    const started = performance.now();
    await expect(
      callWithin(
        (signal) => {
          seen = signal;
          return new Promise(() => {});
        },
        30,
        new AbortController().signal,
      ),
    ).rejects.toMatchObject({
      code: 'result_handler_timeout',
      operation: 'onResult',
      message: expect.stringContaining('30 ms'),
    });
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    expect(seen!.aborted).toBe(true);
  });

  it('a stop signal ends the call at once with its reason, already aborted or later', async () => {
    const stop = new AbortController();
    const hung = callWithin(() => new Promise(() => {}), 60_000, stop.signal);
    stop.abort(new Error('closed'));
    await expect(hung).rejects.toThrow('closed');
    await expect(callWithin(() => new Promise(() => {}), 60_000, stop.signal)).rejects.toThrow('closed');
  });
});

describe('callWithin leaves nothing behind', () => {
  it('once settled, however, no timer runs and no listener stays on the stop signal', async () => {
    vi.useFakeTimers();
    try {
      const stop = new AbortController();
      await callWithin(() => {}, 60_000, stop.signal);
      await expect(
        callWithin(
          () => {
            throw new Error('x');
          },
          60_000,
          stop.signal,
        ),
      ).rejects.toThrow('x');
      const hung = callWithin(() => new Promise(() => {}), 50, stop.signal);
      const settled = expect(hung).rejects.toMatchObject({ code: 'result_handler_timeout' });
      await vi.advanceTimersByTimeAsync(50);
      await settled;
      expect(vi.getTimerCount()).toBe(0);
      expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a stop that comes after the call settled changes nothing', async () => {
    const stop = new AbortController();
    let seen: AbortSignal | undefined;
    await callWithin((signal) => void (seen = signal), 60_000, stop.signal);
    stop.abort(new Error('late'));
    expect(seen!.aborted).toBe(false);
  });
});

describe('settleWithin', () => {
  const late = () => new Error('late');

  it("answers the work's answer or failure within the limit, a synchronous throw as a rejection", async () => {
    await expect(settleWithin(async () => 'yes', 1000, late)).resolves.toBe('yes');
    await expect(settleWithin(() => Promise.reject(new Error('mine')), 1000, late)).rejects.toThrow('mine');
    await expect(
      settleWithin(
        () => {
          throw new Error('sync');
        },
        1000,
        late,
      ),
    ).rejects.toThrow('sync');
  });

  it("work that hangs is refused with late()'s error at the limit, and no timer is left once settled", async () => {
    vi.useFakeTimers();
    try {
      let settled: unknown;
      const hung = settleWithin(() => new Promise(() => {}), 500, late).catch((error: Error) => (settled = error));
      await vi.advanceTimersByTimeAsync(499);
      expect(settled).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      await hung;
      expect(settled).toMatchObject({ message: 'late' });
      await settleWithin(async () => 1, 500, late);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
