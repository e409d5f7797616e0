// The kit's one clock (clock.ts): sleep() ends on its timer, or at once on an abort.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sleep, systemNow } from '../../../src/server/time/clock.js';

afterEach(() => vi.useRealTimers());

describe('systemNow', () => {
  it("is the system's time of day", () => {
    vi.useFakeTimers({ now: Date.parse('2026-11-24T08:00:00Z') });
    expect(systemNow()).toBe(Date.parse('2026-11-24T08:00:00Z'));
  });
});

describe('sleep', () => {
  it('resolves after its time', async () => {
    vi.useFakeTimers();
    let done = false;
    const slept = sleep(1000).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await slept;
    expect(done).toBe(true);
  });

  it('an abort rejects with its reason at once and leaves no timer behind', async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const slept = sleep(60_000, controller.signal);
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(slept).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an aborted signal rejects before any timer starts', async () => {
    vi.useFakeTimers();
    const reason = new Error('gone');
    await expect(sleep(60_000, AbortSignal.abort(reason))).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
  });
});
