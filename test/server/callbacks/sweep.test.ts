// The sweep of the store's pending callbacks, alone, with a delivery that only notes its calls.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pendingList } from '../../../src/server/callbacks/pending.js';
import { callbackSweep } from '../../../src/server/callbacks/sweep.js';
import { callbackTasks } from '../../../src/server/callbacks/tasks.js';
import { settingsFor } from '../../support/callbacks.js';

afterEach(() => void vi.useRealTimers());

function sweepAt(clock: { now: number }) {
  const told: unknown[] = [];
  const settings = settingsFor({
    leaseMs: 1000,
    sweepIntervalMs: 5000,
    now: () => clock.now,
    onError: (error) => void told.push(error),
  });
  const pending = pendingList(settings.store, settings.namespace, settings.recordTtlMs, settings.now);
  const tasks = callbackTasks(() => {});
  const delivered: string[] = [];
  const sweeper = callbackSweep(
    settings,
    tasks,
    pending,
    async (key, byOwnTimer) => void delivered.push(`${key} ${byOwnTimer ?? 'sweep'}`),
  );
  const record = (key: string, fields: Record<string, unknown>) =>
    settings.store.set(key, JSON.stringify({ attempts: 0, callback: {}, ...fields }), 60_000);
  return { settings, pending, tasks, delivered, sweeper, record, told };
}

describe('callbackSweep', () => {
  it('hands over what is due a lease after its time, unlists what is done, keeps what is not due', async () => {
    const clock = { now: 10_000 };
    const { pending, delivered, sweeper, record, tasks } = sweepAt(clock);
    for (const key of ['due', 'retried', 'early', 'done']) await pending.add(key);
    await record('due', { state: 'pending', receivedAt: 9000 });
    await record('retried', { state: 'pending', receivedAt: 0, nextAttemptAt: 9500 });
    await record('early', { state: 'pending', receivedAt: 9500 });
    await record('done', { state: 'done', receivedAt: 0 });
    await sweeper.sweep();
    await tasks.idle();
    expect(delivered).toEqual(['due sweep']);
    expect((await pending.entries()).map((e) => e.key).sort()).toEqual(['due', 'early', 'retried']);
  });

  it('unlists an entry without a record once a lease old, not before, and says so', async () => {
    const clock = { now: 10_000 };
    const { pending, sweeper, told } = sweepAt(clock);
    await pending.add('client-1:callback:unwritten');
    clock.now = 10_999;
    await sweeper.sweep();
    expect(await pending.entries()).toHaveLength(1);
    expect(told).toEqual([]);
    clock.now = 11_000;
    await sweeper.sweep();
    expect(await pending.entries()).toEqual([]);
    // A record the store dropped loses a callback the service may not send again: told, never quiet.
    expect(told).toEqual([
      expect.objectContaining({
        code: 'store_unavailable',
        operation: 'store',
        message: expect.stringContaining('callback unwritten'),
      }),
    ]);
  });

  it("leaves a callback to this instance's own retry timer", async () => {
    const clock = { now: 10_000 };
    const { pending, delivered, sweeper, record, tasks } = sweepAt(clock);
    await pending.add('mine');
    await record('mine', { state: 'pending', receivedAt: 0 });
    tasks.retryAfter('mine', 60_000, async () => {});
    await sweeper.sweep();
    expect(delivered).toEqual([]);
    await tasks.close();
  });

  it('runs one sweep at a time; sweepWhenDue sweeps an interval after the last, and never once closed', async () => {
    const clock = { now: 0 };
    const { pending, sweeper, tasks } = sweepAt(clock);
    const entries = vi.spyOn(pending, 'entries');
    const first = sweeper.sweep();
    expect(sweeper.sweep()).toBe(first);
    await first;
    await sweeper.sweep();
    expect(entries).toHaveBeenCalledTimes(2);
    clock.now = 4999;
    sweeper.sweepWhenDue();
    await tasks.idle();
    expect(entries).toHaveBeenCalledTimes(2);
    clock.now = 5000;
    sweeper.sweepWhenDue();
    await tasks.idle();
    expect(entries).toHaveBeenCalledTimes(3);
    sweeper.stop();
    await tasks.close();
    clock.now = 20_000;
    sweeper.sweepWhenDue();
    await tasks.idle();
    expect(entries).toHaveBeenCalledTimes(3);
  });

  it('sweeps every sweepIntervalMs once started, until stopped', async () => {
    vi.useFakeTimers();
    const clock = { now: 0 };
    const { pending, sweeper, tasks } = sweepAt(clock);
    const entries = vi.spyOn(pending, 'entries');
    sweeper.sweepWhenDue();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(entries).toHaveBeenCalledTimes(3);
    sweeper.stop();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(entries).toHaveBeenCalledTimes(3);
    await tasks.idle();
  });
});
