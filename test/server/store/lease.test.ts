// A lease (src/server/store/lease.ts): held while its renewals are confirmed, and counted as
// lost a lease after the last one on the store's clock and on a monotonic clock alike.
import { describe, expect, it } from 'vitest';
import { takeLease } from '../../../src/server/store/lease.js';
import { createMemoryStore } from '../../../src/server/store/store.js';

/** The event loop held for `ms`: no timer, no renewal runs meanwhile. */
const stall = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

describe('takeLease', () => {
  it('a holder stalled past its lease counts it unconfirmed, even after its wall clock stepped back', async () => {
    let offset = 0;
    const now = () => Date.now() + offset;
    const lease = (await takeLease(createMemoryStore({ now }), 'k', 300, 'a test', now))!;
    expect(lease.lost).toBeUndefined();
    // NTP steps the clock back a minute: the store's clock says the lease has long to run.
    offset -= 60_000;
    stall(400);
    expect(lease.lost).toBe('unconfirmed');
    await lease.release();
  });

  it('one whose key another took is told so at its next renewal: taken', async () => {
    const store = createMemoryStore();
    const lease = (await takeLease(store, 'k', 300, 'a test'))!;
    await store.set('k', 'another', 60_000);
    await expect.poll(() => lease.lost).toBe('taken');
    await lease.release();
    expect(await store.get('k')).toBe('another');
  });

  it('one whose wall clock passed its lease, its renewals unanswered, counts it unconfirmed', async () => {
    let clock = Date.now();
    const store = createMemoryStore();
    const away = { ...store, compareAndSet: () => new Promise<boolean>(() => {}) };
    // A lease long on the monotonic clock: only the store's clock, moved by the test, runs it out.
    const lease = (await takeLease(away, 'k', 600_000, 'a test', () => clock))!;
    clock += 599_999;
    expect(lease.lost).toBeUndefined();
    clock += 1;
    expect(lease.lost).toBe('unconfirmed');
    await lease.release();
  });

  it('one whose renewals are confirmed keeps it past its first term', async () => {
    const store = createMemoryStore();
    let renewed = 0;
    const counting = {
      ...store,
      compareAndSet: async (...args: Parameters<typeof store.compareAndSet>) => {
        const held = await store.compareAndSet(...args);
        renewed++;
        return held;
      },
    };
    // Renewed every second; the test reads it once four renewals were confirmed (past its 3 s
    // term), however slowly the machine runs them.
    const lease = (await takeLease(counting, 'k', 3000, 'a test'))!;
    const started = performance.now();
    await expect.poll(() => renewed, { timeout: 30_000, interval: 50 }).toBeGreaterThanOrEqual(4);
    expect(performance.now() - started).toBeGreaterThan(3000);
    expect(lease.lost).toBeUndefined();
    await lease.release();
  });
});
