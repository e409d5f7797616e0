// The gateway's sweep of the service's callbacks (src/gateway/callback-sweep.ts): at its start and
// every interval after, not only once a new callback arrives; stopped by close. The kit's own
// tests show that a sweep delivers a callback another process left pending
// (test/server/callbacks/).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { sweepFromStart } from '../../src/gateway/callback-sweep.js';

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

describe('sweepFromStart', () => {
  it('sweeps at once, then every interval, until stopped; a failed sweep is told, the next comes all the same', async () => {
    const failure = new Error('store away');
    const sweep = vi.fn().mockRejectedValueOnce(failure).mockResolvedValue(undefined);
    const errors: unknown[] = [];
    const stop = sweepFromStart({ sweep }, 30_000, (error) => errors.push(error));
    expect(sweep).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(29_999);
    expect(errors).toEqual([failure]);
    expect(sweep).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(sweep).toHaveBeenCalledTimes(2);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(sweep).toHaveBeenCalledTimes(3);
    await stop();
    await vi.advanceTimersByTimeAsync(90_000);
    expect(sweep).toHaveBeenCalledTimes(3);
  });

  it('the stop waits for the sweep under way (the store is closed after it), and a failed one is told, not thrown', async () => {
    let end!: (value?: unknown) => void;
    const sweep = vi.fn(() => new Promise((resolve) => (end = resolve)).then(() => undefined));
    const errors: unknown[] = [];
    const stop = sweepFromStart({ sweep }, 30_000, (error) => errors.push(error));
    let stopped = false;
    const stopping = stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    end();
    await stopping;
    expect(stopped).toBe(true);
    const failure = new Error('store away');
    const failing = sweepFromStart({ sweep: () => Promise.reject(failure) }, 30_000, (error) => errors.push(error));
    await expect(failing()).resolves.toBeUndefined();
    expect(errors).toEqual([failure]);
  });
});
