// What one instance of the callback handler owns, alone: its retry timers, its leases, the
// work idle() waits for, and what close() lets go of.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { callbackTasks } from '../../../src/server/callbacks/tasks.js';
import type { Lease } from '../../../src/server/store/lease.js';

afterEach(() => void vi.useRealTimers());

const fakeLease = () => {
  const lease = { lost: undefined, releases: 0, release: async () => void lease.releases++ };
  return lease as typeof lease & Lease;
};

describe('callbackTasks', () => {
  it('keeps one retry timer per callback: a new one replaces the old; none once closed', async () => {
    vi.useFakeTimers();
    const tasks = callbackTasks(() => {});
    const runs: string[] = [];
    tasks.retryAfter('a', 100, async () => void runs.push('first'));
    tasks.retryAfter('a', 200, async () => void runs.push('second'));
    expect(tasks.hasRetry('a')).toBe(true);
    await vi.advanceTimersByTimeAsync(150);
    expect(runs).toEqual([]);
    await vi.advanceTimersByTimeAsync(100);
    expect(runs).toEqual(['second']);
    expect(tasks.hasRetry('a')).toBe(false);
    tasks.retryAfter('b', 100, async () => void runs.push('b'));
    await tasks.close();
    tasks.retryAfter('c', 100, async () => void runs.push('c'));
    await vi.advanceTimersByTimeAsync(500);
    expect(runs).toEqual(['second']);
    expect(tasks.hasRetry('c')).toBe(false);
  });

  it('idle() waits for the work tracked, also work started meanwhile; a rejection is reported', async () => {
    const reported: unknown[] = [];
    const tasks = callbackTasks((error) => reported.push(error));
    const done: string[] = [];
    tasks.track(
      (async () => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        tasks.track(new Promise((resolve) => setTimeout(resolve, 10)).then(() => void done.push('later')));
        done.push('first');
        throw new Error('boom');
      })(),
    );
    await tasks.idle();
    expect(done).toEqual(['first', 'later']);
    expect(reported).toEqual([new Error('boom')]);
  });

  it('releases a lease after the work, even a failed one; close() releases those held and aborts', async () => {
    const tasks = callbackTasks(() => {});
    const after = fakeLease();
    await expect(tasks.holding(after, () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(after.releases).toBe(1);

    const held = fakeLease();
    let finish!: () => void;
    const work = tasks.holding(held, () => new Promise<void>((resolve) => (finish = resolve)));
    expect(tasks.closed).toBe(false);
    await tasks.close();
    expect(tasks.closed).toBe(true);
    expect(held.releases).toBe(1);
    expect(tasks.signal.reason).toMatchObject({ code: 'aborted' });
    finish();
    await work;
    expect(after.releases).toBe(1);
  });
});
