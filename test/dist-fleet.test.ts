// A fleet: four endpoint instances as separate Node processes (the built dist/ files), one
// real redis-server, the emulator behind them. A round-robin client retries each key on the
// next instance. Faults in account create, upload and finalize (429, 5xx, dropped
// connections), one instance killed with SIGKILL mid-run, Redis stopped and started again.
// Counted through the emulator: one finalized transaction per key, one token request,
// nothing lost. The one thing a crash can leave: an instance killed while its account create
// is in flight (sent, not yet answered) cannot know the transaction exists, and the API has
// no lookup by reference, so the key's next owner creates another (after the create's time
// limit, and reports it). That orphan stays INITIATED, without a blackbox, and expires. The
// test counts what that allows, whatever the machine's speed: every orphan was made by the
// killed instance (its userReference), and no more of them than it had requests in flight.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../src/emulator/index.js';
import { drive, fleetConfig, startFleet, type Fleet } from '../scripts/fleet.mjs';
import { haveRedis, startRedisServer, type RedisServer } from './support/redis.js';

const BLACKBOX = '0400' + 'nVQ+/abc'.repeat(150) + '==';

let emulator: Emulator | undefined;
let redis: RedisServer | undefined;
let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.stop();
  await redis?.stop();
  await emulator?.close();
  fleet = redis = emulator = undefined;
});

async function setUp(count: number, withRedis: boolean) {
  emulator = await startEmulator({ accountRequestsPerSecond: 0 });
  if (withRedis) redis = await startRedisServer();
  fleet = await startFleet(count, fleetConfig(emulator, { redisUrl: redis?.url, leaseMs: 1000 }));
  return { emulator, fleet };
}

const keys = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}-${String(i).padStart(6, '0')}`);

/** Transactions that got a blackbox, per key, by the emulator's own records; and the rest (orphans). */
function perKey(emulator: Emulator) {
  const counts = new Map<string, number>();
  const used = emulator.inspect.transactions().filter((tx) => tx.blackboxes.length > 0);
  for (const tx of used) counts.set(tx.customerInternalReference, (counts.get(tx.customerInternalReference) ?? 0) + 1);
  const orphans = emulator.inspect.transactions().filter((tx) => tx.blackboxes.length === 0);
  return { counts, orphans, used };
}

describe.skipIf(!haveRedis)('a fleet of four instances on one Redis', () => {
  it('faults, a SIGKILL and a Redis restart: one transaction per key, all finalized, one token request, nothing lost', async () => {
    const { emulator, fleet } = await setUp(4, true);
    const all = keys(240, 'fleet');
    let restarting: Promise<void> | undefined;
    const results = await drive({
      fleet,
      keys: all,
      concurrency: 16,
      blackbox: BLACKBOX,
      onProgress: async (done: number) => {
        // Faults spread over the run, in each step of the check.
        if (done % 20 === 5) emulator.faults.fail('accountCreate', { status: 429, times: 2 });
        if (done % 20 === 10) emulator.faults.fail('upload', { status: 503, times: 2 });
        if (done % 20 === 15) emulator.faults.fail('finalize', { drop: true, times: 2 });
        if (done % 30 === 0) emulator.faults.fail('upload', { drop: true });
        if (done === 60) emulator.faults.latency('upload', 30); // requests in flight for the kill
        if (done === 80) fleet.kill(1);
        if (done === 90) emulator.faults.latency('upload', 0);
        if (done === 150) restarting ??= redis!.restart(400);
      },
    });
    await restarting;

    const lost = results.filter((r) => !r.ok);
    expect(lost).toEqual([]);
    expect(results).toHaveLength(all.length);
    const { counts, orphans, used } = perKey(emulator);
    expect([...counts.values()].filter((n) => n !== 1)).toEqual([]);
    expect(counts.size).toBe(all.length);
    expect(used.map((tx) => tx.blackboxes.length).filter((n) => n !== 1)).toEqual([]); // one upload each
    expect(used.map((tx) => tx.status).filter((s) => s !== 'PROCESSED')).toEqual([]);
    const killed = fleet.instances[1]!;
    expect(orphans.map((tx) => tx.userReference).filter((made) => made !== 'instance-1')).toEqual([]);
    expect(orphans.length).toBeLessThanOrEqual(killed.inFlightAtKill);
    expect(orphans.map((tx) => tx.status).filter((s) => s !== 'INITIATED')).toEqual([]);
    // Each orphan was reported by the instance that took its key over: never silent.
    const reported = fleet.instances.filter((i) => i !== killed).reduce((sum, i) => sum + i.orphansReported, 0);
    expect(reported).toBeGreaterThanOrEqual(orphans.length);
    expect(emulator.inspect.requests('token')).toBe(1);
    // The faults did happen: retries, answers lost with the killed instance, Redis away.
    const seen = new Set(results.flatMap((r) => r.statuses));
    expect(seen).toContain('no answer');
    const codes = new Set(results.flatMap((r) => r.codes));
    for (const code of ['store_unavailable', 'rate_limited', 'upstream_error', 'network_error'])
      expect(codes).toContain(code);
  });
});

const TOKEN_INSTANCE = fileURLToPath(new URL('./support/token-instance.mjs', import.meta.url));

/** One process with one token source on the shared Redis: its token, or its error's code. */
async function tokenFromProcess(
  config: Record<string, string>,
): Promise<{ token?: string; code?: string; status?: number }> {
  const { stdout } = await promisify(execFile)(process.execPath, [TOKEN_INSTANCE, JSON.stringify(config)], {
    timeout: 60_000,
  });
  return JSON.parse(stdout) as { token?: string; code?: string; status?: number };
}

describe.skipIf(!haveRedis)('token sources as processes on one Redis', () => {
  it('a second process with the right secret shares the token; one with a wrong secret is refused by the service and never gets it', async () => {
    emulator = await startEmulator();
    redis = await startRedisServer();
    const config = {
      redisUrl: redis.url,
      clientId: emulator.clientId,
      clientSecret: emulator.clientSecret,
      tokenUrl: emulator.tokenUrl,
    };
    const right = await tokenFromProcess(config);
    expect(right.token).toBeTruthy();
    expect(await tokenFromProcess(config)).toEqual(right);
    expect(emulator.inspect.requests('token')).toBe(1);
    const wrong = await tokenFromProcess({ ...config, clientSecret: 'WRONG' });
    expect(wrong).toEqual({ code: 'token_rejected', status: 401 });
    expect(emulator.inspect.requests('token')).toBe(2);
  });
});
