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
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(lease.lost).toBe('taken');
    await lease.release();
    expect(await store.get('k')).toBe('another');
  });

  it('one whose wall clock passed its lease, its renewals unanswered, counts it unconfirmed', async () => {
    let clock = Date.now();
    const store = createMemoryStore();
    const away = { ...store, compareAndSet: () => new Promise<boolean>(() => {}) };
    const lease = (await takeLease(away, 'k', 300, 'a test', () => clock))!;
    clock += 299;
    expect(lease.lost).toBeUndefined();
    clock += 1;
    expect(lease.lost).toBe('unconfirmed');
    await lease.release();
  });

  it('one whose renewals are confirmed keeps it', async () => {
    const lease = (await takeLease(createMemoryStore(), 'k', 300, 'a test'))!;
    await new Promise((resolve) => setTimeout(resolve, 450));
    expect(lease.lost).toBeUndefined();
    await lease.release();
  });
});
