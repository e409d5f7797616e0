// Signed-in shoppers first (docs/gateway.md#signed-in-shoppers-first), with `blackbox-capture
// serve` as a process and the emulator at the service's default account limit: while the
// service refuses every account create (the tenant's quota spent), a checkout whose order token
// carries `uref`, posted after guests' checkouts, is checked before every guest still waiting;
// at the queue's bound guests are refused at the door (503 queue_full, logged) while signed-in
// shoppers are still accepted.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { mintOrderToken } from '../../src/gateway/order-token.js';
import { DATA_FILE } from '../../src/server/queue/default.js';
import { ORDER_SECRET, postCheckout, useGateway } from '../support/gateway.js';
import { writeRows } from '../support/sqlite.js';

const { served } = useGateway();
/** `serve` behind a trusted front, on an emulator at the service's default account limit (1 a second). */
const servedAtOneASecond = () => served({ TRUSTED_FRONTS: '127.0.0.1' }, { emulator: { accountRequestsPerSecond: 1 } });

/** A checkout of `order` from its own address (behind the trusted front): a guest's, or with `uref` a signed-in shopper's. */
const checkout = async (url: string, order: string, from: string, uref?: string) =>
  postCheckout(url, {
    token: await mintOrderToken(ORDER_SECRET, {
      customerInternalReference: order,
      ...(uref === undefined ? {} : { userReference: uref }),
    }),
    from,
  });

/**
 * The gateway's queue in its data directory, written as another process on the file would: the
 * tenant's pause (the queue's record that the service's account quota is spent: no job starts
 * before it ends), and jobs held that no one will run.
 */
const queueFile = (dataDir: string) => join(dataDir, DATA_FILE);
const pauseUntil = (dataDir: string, until: number) =>
  writeRows(
    queueFile(dataDir),
    'INSERT INTO queue_pause (id, until) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET until = excluded.until',
    [until],
  );

describe('signed-in shoppers first (serve as a process)', () => {
  it('checks a signed-in checkout posted after 10 guests before every guest still waiting', async () => {
    const { emulator, shop, env, gateway } = await servedAtOneASecond();
    // The tenant's quota spent: the queue starts nothing until the pause ends, however slow the machine.
    pauseUntil(env.DATA_DIR, Date.now() + 600_000);
    const guests = Array.from({ length: 10 }, (_, i) => `guest-${i}`);
    for (const [i, order] of guests.entries())
      expect((await checkout(gateway.url, order, `203.0.113.${i + 1}`)).status).toBe(202);
    expect((await checkout(gateway.url, 'signed-in-0', '198.51.100.1', 'customer-42')).status).toBe(202);
    expect(emulator.inspect.requests('accountCreate')).toBe(0);
    pauseUntil(env.DATA_DIR, 0);
    await expect.poll(shop.orders, { timeout: 60_000 }).toEqual([...guests, 'signed-in-0'].sort());
    // The order the service created the accounts in: the signed-in shopper's among the first four
    // (the queue's concurrency: run at once, in any order), ahead of the 7 or more guests after it.
    const created = emulator.inspect.transactions().map((t) => t.customerInternalReference);
    expect(created).toHaveLength(11);
    expect(created.indexOf('signed-in-0')).toBeLessThan(4);
    // Its account's turns, by its uref; the service was told the uref as the userReference.
    expect(
      emulator.inspect.transactions().find((t) => t.customerInternalReference === 'signed-in-0')?.userReference,
    ).toBe('customer-42');
  }, 120_000);

  it('at the bound, refuses a guest at the door (503 queue_full, logged) and still accepts a signed-in shopper', async () => {
    const { env, gateway } = await servedAtOneASecond();
    pauseUntil(env.DATA_DIR, Date.now() + 600_000);
    // 770 checkouts waiting, more than a guest may start behind within the trust bound at the
    // contracted 1 a second (95 % of 15 minutes, nine tenths of it for guests: 769), fewer than
    // a signed-in shopper may (855).
    const held = Array.from({ length: 770 }, (_, i) => {
      const job = {
        key: `held-${i}`,
        fingerprint: 'f',
        blackbox: 'bb',
        customer: { customerInternalReference: `held-${i}` },
        acceptedAt: Date.now(),
      };
      return [job.key, job.fingerprint, JSON.stringify(job), `visitor address 192.0.2.${i % 250}`, job.acceptedAt];
    });
    writeRows(
      queueFile(env.DATA_DIR),
      'INSERT INTO queue_jobs (key, fingerprint, job, visitor, accepted_at) VALUES (?, ?, ?, ?, ?)',
      ...held,
    );
    const guest = await checkout(gateway.url, 'guest-late', '203.0.113.1');
    expect(guest.status).toBe(503);
    expect(guest.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await guest.json()).toMatchObject({ error: { code: 'queue_full' } });
    await expect.poll(gateway.output).toMatch(/queue_full/);
    const signedIn = await checkout(gateway.url, 'signed-in-late', '198.51.100.1', 'customer-42');
    expect(signedIn.status).toBe(202);
    // The guest's order stays free: posted again, it is refused the same way, not 409 order_already_checked.
    expect((await checkout(gateway.url, 'guest-late', '203.0.113.2')).status).toBe(503);
  }, 60_000);
});
