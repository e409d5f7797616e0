// No false orphan reports across a Redis crash: a real redis-server killed (SIGKILL) in the
// middle of a backlog on BullMQ and started again, with its append-only file and without one.
// The creates the crash stopped before they were sent (the tenant's limit, kept in the same
// Redis, could not be read) made no transaction, so their intents must go once Redis is back
// (leased-attempt.ts `createEnded`): left, the next attempt on the key would take them for a
// create on the wire and report `orphaned_transaction` where the service holds exactly one
// transaction per key.
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../../src/emulator/index.js';
import { DeviceRiskError } from '../../../src/server/errors.js';
import { createBullmqQueue } from '../../../src/server/queue/bullmq.js';
import { createRedisStore } from '../../../src/server/store/redis.js';
import { haveRedis, startRedisServer, type RedisServer } from '../../support/redis.js';
import { checkoutFor, clientOn, orderTellingHandler } from '../../support/kit.js';

const CHECKOUTS = 40;

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
});

async function backlogThroughCrashes(redis: RedisServer, emulator: Emulator, aof: boolean) {
  const errors: unknown[] = [];
  const told: string[] = [];
  const storeClient = new Redis(redis.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  const bull = new Redis(redis.url, { maxRetriesPerRequest: null });
  for (const client of [storeClient, bull]) client.on('error', () => {});
  const store = createRedisStore(storeClient, { prefix: 'crash:' });
  const queue = createBullmqQueue({
    connection: bull,
    prefix: 'crash',
    concurrency: 8,
    lockDurationMs: 1000,
    stalledIntervalMs: 500,
    onError: () => {},
  });
  const handler = orderTellingHandler(
    {
      // The tenant's limit in the same Redis, 10 a second: the backlog drains in about 4 s.
      client: clientOn(emulator, {
        tokenSource: { store },
        limits: { accountRequestsPerSecond: 10, accountBurst: 1 },
        // A create on the wire ends within 2 s: an intent left behind is taken for an orphan 3 s later.
        accountTimeoutMs: 2000,
      }),
      store,
      queue,
      idempotencyLeaseMs: 1000,
    },
    errors,
    told,
  );
  closers.push(async () => {
    await handler.close();
    storeClient.disconnect();
    bull.disconnect();
  });
  const keys = Array.from({ length: CHECKOUTS }, (_, i) => `crash-${aof ? 'aof' : 'none'}-${i}`);
  for (const key of keys) {
    const answer = await handler(checkoutFor(key));
    expect(answer.status).toBe(202);
  }
  // Killed with the checks running, back 300 ms later: twice while the backlog drains (once
  // without an append-only file, which loses the rest of the backlog).
  for (const drained of aof ? [8, 20] : [8]) {
    await expect.poll(() => told.length, { timeout: 30_000, interval: 20 }).toBeGreaterThanOrEqual(drained);
    await redis.restart(300, { kill: true });
  }
  return { errors, told, keys };
}

/** How many transactions the service holds for each key that has any. */
const transactionsPerKey = (emulator: Emulator, keys: string[]) => {
  const counts = new Map<string, number>();
  for (const tx of emulator.inspect.transactions())
    if (keys.includes(tx.customerInternalReference))
      counts.set(tx.customerInternalReference, (counts.get(tx.customerInternalReference) ?? 0) + 1);
  return counts;
};
const codesOf = (errors: unknown[]) =>
  errors.filter((e) => e instanceof DeviceRiskError).map((e) => (e as DeviceRiskError).code);

describe.skipIf(!haveRedis)('a Redis crash mid-backlog', () => {
  it('with its append-only file: every checkout checked once, and no orphan reported', async () => {
    const redis = await startRedisServer();
    const emulator = await startEmulator({ accountRequestsPerSecond: 0 });
    closers.push(
      () => redis.stop(),
      () => emulator.close(),
    );
    const { errors, told, keys } = await backlogThroughCrashes(redis, emulator, true);
    await expect.poll(() => [...new Set(told)].sort(), { timeout: 60_000 }).toEqual([...keys].sort());
    // Past every create window (2 s + the lease): an intent left behind would be reported by now.
    await new Promise((resolve) => setTimeout(resolve, 4000));
    const counts = transactionsPerKey(emulator, keys);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(counts.size).toBe(CHECKOUTS);
    expect(codesOf(errors)).toContain('store_unavailable');
    expect(codesOf(errors).filter((code) => code === 'orphaned_transaction')).toEqual([]);
  }, 120_000);

  it('without one (Redis back empty): each orphan reported is a transaction the crash left unfinished', async () => {
    const redis = await startRedisServer({ args: ['--appendonly', 'no'] });
    const emulator = await startEmulator({ accountRequestsPerSecond: 0 });
    closers.push(
      () => redis.stop(),
      () => emulator.close(),
    );
    const { errors, keys } = await backlogThroughCrashes(redis, emulator, false);
    // What the crash lost is lost (docs/fleet.md: appendonly yes); what runs on ends within the windows.
    await new Promise((resolve) => setTimeout(resolve, 6000));
    const counts = transactionsPerKey(emulator, keys);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    // No false alarm: a report names a transaction the crash really left unfinished. A create
    // answered while Redis was away, whose record the empty Redis no longer holds to fence the
    // write against, is one (its job went with the backlog): INITIATED, without a blackbox.
    const unfinished = new Set(
      emulator.inspect
        .transactions()
        .filter((tx) => tx.blackboxes.length === 0)
        .map((tx) => tx.workflowExecutionId),
    );
    const orphans = errors.filter(
      (e): e is DeviceRiskError => e instanceof DeviceRiskError && e.code === 'orphaned_transaction',
    );
    const falseAlarms = orphans.filter(
      (e) => ![...unfinished].some((id) => e.message.includes(`workflow execution ${id} was created`)),
    );
    expect(falseAlarms.map((e) => e.message)).toEqual([]);
  }, 120_000);
});
