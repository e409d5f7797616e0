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
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { drive, fleetConfig, startFleet, type Fleet } from '../support/fleet.mjs';
import { haveRedis, startRedisServer, type RedisServer } from '../support/redis.js';
import { callbackBodyOf } from '../support/callback-body.js';
import { Queue } from 'bullmq';
import { Redis as IoRedis } from 'ioredis';
import { jobIdOf } from '../../dist/server-bullmq.js';

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
      // A key whose owner was killed with its upload's intent recorded and the service still at
      // INITIATED is answered 409 until the intent's time is up (15 s + a lease here, docs/fleet.md):
      // the client keeps trying that long (a browser posting within the request gives up sooner).
      maxAttempts: 200,
      onProgress: async (done: number) => {
        // Faults spread over the run, in each step of the check.
        if (done % 20 === 5) emulator.faults.fail('accountCreate', { status: 429, times: 2 });
        if (done % 20 === 10) emulator.faults.fail('upload', { status: 503, times: 2 });
        if (done % 20 === 15) emulator.faults.fail('finalize', { drop: true, times: 2 });
        if (done % 30 === 0) emulator.faults.fail('upload', { drop: true });
        if (done === 60) emulator.faults.latency('upload', 30); // requests in flight for the kill
        if (done === 80) await fleet.killBusy(1);
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
    // Every attempt was answered (or cut by the kill) within the browser's 10 s limit for its POST.
    expect(results.filter((r) => r.slowestMs >= 10_000).map((r) => r.key)).toEqual([]);
    // The faults did happen: retries, answers lost with the killed instance, Redis away.
    const seen = new Set(results.flatMap((r) => r.statuses));
    expect(seen).toContain('no answer');
    const codes = new Set(results.flatMap((r) => r.codes));
    for (const code of ['store_unavailable', 'rate_limited', 'upstream_error', 'network_error'])
      expect(codes).toContain(code);
  });
});

describe.skipIf(!haveRedis)('a fleet through Redis away for longer than a lease', () => {
  it('stopped (AOF on), then frozen, while checkouts run: one transaction per key, no orphan, every attempt answered within the browser limit', async () => {
    const { emulator, fleet } = await setUp(4, true);
    const all = keys(120, 'stopped');
    let outage: Promise<void> | undefined;
    emulator.faults.latency('accountCreate', 20); // creates on the wire when Redis goes
    const results = await drive({
      fleet,
      keys: all,
      concurrency: 12,
      blackbox: BLACKBOX,
      maxAttempts: 200,
      onProgress: async (done: number) => {
        // 1.5 s down: more than a lease (1 s), so that every lease held when it went expires, and
        // less than an account create's intent (3 s and a lease), so that a made transaction resumes.
        if (done === 30) outage = redis!.restart(1500);
        // Then frozen as long (SIGSTOP): connections stay open and nothing answers.
        if (done === 80) {
          await outage;
          redis!.pause();
          outage = new Promise((resolve) => setTimeout(resolve, 1500)).then(() => redis!.resume());
        }
      },
    });
    await outage;
    expect(results.filter((r) => !r.ok)).toEqual([]);
    const { counts, orphans, used } = perKey(emulator);
    expect([...counts.values()].filter((n) => n !== 1)).toEqual([]);
    expect(counts.size).toBe(all.length);
    expect(used.map((tx) => tx.blackboxes.length).filter((n) => n !== 1)).toEqual([]);
    expect(orphans).toEqual([]);
    expect(results.filter((r) => r.slowestMs >= 10_000).map((r) => r.key)).toEqual([]);
    expect(new Set(results.flatMap((r) => r.codes))).toContain('store_unavailable');
  });
});

// The accepted answer on the fleet's BullMQ queue, with a real backlog: the emulator at 2
// account requests a second (burst 10), 30 checkouts offered 6 at a time, the queue bounded at 6 waiting
// (the rest are answered 503 queue_full and posted again). During the backlog one instance is
// killed mid-check (its jobs' locks lapse and live instances take them over) and Redis is
// stopped and started again (AOF, appendfsync always): every accepted checkout ends in one
// transaction with its blackbox, and every decision reaches onResult.
describe.skipIf(!haveRedis)('a fleet of four instances on the BullMQ queue, with a backlog', () => {
  it('a SIGKILL mid-check and a Redis restart during the backlog: each accepted key checked once, every decision told', async () => {
    emulator = await startEmulator({ accountRequestsPerSecond: 2 });
    redis = await startRedisServer();
    fleet = await startFleet(
      4,
      fleetConfig(emulator, { redisUrl: redis.url, leaseMs: 1000, queue: true, maxQueued: 6 }),
    );
    const all = keys(30, 'queued');
    // Uploads slow at first: the killed instance is caught with a transaction made and not uploaded.
    emulator.faults.latency('upload', 1500);
    const driving = drive({ fleet, keys: all, concurrency: 6, blackbox: BLACKBOX, maxAttempts: 400 });
    const madeByVictim = () =>
      emulator!.inspect.transactions().some((tx) => tx.userReference === 'instance-1' && tx.blackboxes.length === 0);
    await expect.poll(madeByVictim, { timeout: 15_000, interval: 20 }).toBe(true);
    fleet.kill(1);
    emulator.faults.latency('upload', 0);
    const decided = () => new Set(fleet!.instances.flatMap((i) => i.decided));
    await redis.restart(400);
    // The restart came during the backlog: checks were still waiting.
    expect(decided().size).toBeLessThan(all.length);
    const results = await driving;
    expect(results.filter((r) => !r.ok)).toEqual([]);
    // What each shopper saw, exactly: its checkout accepted (202); or, where the answer to the
    // post that queued it was lost (the killed instance's, or one past the client's time limit
    // on a busy machine), a re-post after its check finished, answered with the check (200).
    const sawAccepted = (r: (typeof results)[number]) =>
      r.statuses.includes(202) || (r.statuses.includes('no answer') && r.statuses.at(-1) === 200);
    expect(results.filter((r) => !sawAccepted(r))).toEqual([]);
    // Let the backlog drain: each accepted key's decision told, on some instance.
    await expect
      .poll(() => decided().size, { timeout: 40_000, interval: 200 })
      .toBe(all.length)
      .catch(async (error: unknown) => {
        const untold = all.filter((key) => !decided().has(key));
        throw new Error(`decisions never told: ${JSON.stringify(await whereAre(untold), null, 1)}`, { cause: error });
      });
    const { counts, orphans, used } = perKey(emulator);
    expect([...counts.values()].filter((n) => n !== 1)).toEqual([]);
    expect(counts.size).toBe(all.length);
    expect(used.map((tx) => tx.blackboxes.length).filter((n) => n !== 1)).toEqual([]);
    // An orphan (a create whose attempt was cut off) stays INITIATED without a blackbox, and is reported.
    expect(orphans.map((tx) => tx.status).filter((s) => s !== 'INITIATED')).toEqual([]);
    const reported = fleet.instances.reduce((sum, i) => sum + i.orphansReported, 0);
    expect(reported).toBeGreaterThanOrEqual(orphans.length);
    const killed = fleet.instances[1]!;
    // onResult per key: once, or twice only where the killed instance may have told it before it died.
    const tellers = new Map<string, string[]>();
    fleet.instances.forEach((instance, index) => {
      for (const key of instance.decided) tellers.set(key, [...(tellers.get(key) ?? []), `instance-${index}`]);
    });
    expect(
      [...tellers.values()].filter((by) => by.length > 1 && (by.length > 2 || !by.includes('instance-1'))),
    ).toEqual([]);
    // The faults did happen: a job of the killed instance finished on a live one; the queue was full.
    const takenOver = used.filter(
      (tx) => tx.userReference === 'instance-1' && !killed.decided.includes(tx.customerInternalReference),
    );
    expect(takenOver.length).toBeGreaterThan(0);
    expect(new Set(results.flatMap((r) => r.codes))).toContain('queue_full');
  });
});

/** Where the keys whose decision never came are: their transactions, their jobs, what the instances reported. */
async function whereAre(untold: string[]) {
  const connection = new IoRedis(redis!.url, { maxRetriesPerRequest: null });
  const queue = new Queue('blackbox-capture-checks', { connection, prefix: 'bbc' });
  try {
    const keys = await Promise.all(
      untold.map(async (key) => {
        const jobId = await jobIdOf(key);
        const job = await queue.getJob(jobId);
        const transactions = emulator!.inspect.transactions().filter((tx) => tx.customerInternalReference === key);
        const ids = [jobId, ...transactions.map((tx) => tx.workflowExecutionId)];
        return {
          key,
          job: job && { state: await job.getState(), attemptsMade: job.attemptsMade, failedReason: job.failedReason },
          transactions: transactions.map((tx) => ({
            status: tx.status,
            blackboxes: tx.blackboxes.length,
            by: tx.userReference,
            id: tx.workflowExecutionId,
          })),
          // What the instances reported about it (by its job or its transaction).
          reported: fleet!.instances.map((i) => i.errors.filter((line) => ids.some((id) => line.includes(id)))),
        };
      }),
    );
    return { keys, counts: await queue.getJobCounts(), errors: fleet!.instances.map((i) => i.errors.slice(-20)) };
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

describe.skipIf(!haveRedis)('callbacks on a fleet of four instances on one Redis', () => {
  it('sent to any instance, some twice, onResult failing now and then, one instance killed, Redis restarted: every decision delivered, twice only where the killed instance had it', async () => {
    emulator = await startEmulator({ accountRequestsPerSecond: 0 });
    redis = await startRedisServer();
    fleet = await startFleet(
      4,
      fleetConfig(emulator, { redisUrl: redis.url, leaseMs: 3000, sweepIntervalMs: 300, callbackFailEvery: 4 }),
    );
    const checkouts = await drive({ fleet, keys: keys(60, 'callback'), concurrency: 8, blackbox: BLACKBOX });
    expect(checkouts.filter((r) => !r.ok)).toEqual([]);
    const executions = emulator.inspect.transactions().filter((tx) => tx.status === 'PROCESSED');
    expect(executions).toHaveLength(60);
    // The service behind a load balancer: each callback to some live instance, again on
    // anything but 200; every third sent twice.
    let seed = 7;
    const anyLive = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const live = fleet!.instances.filter((i) => i.alive);
      return live[(seed >>> 16) % live.length]!;
    };
    /** Callbacks each instance took (200), by index. */
    const taken = fleet.instances.map(() => 0);
    const deliver = async (body: string) => {
      for (let attempt = 0; attempt < 100; attempt++) {
        const to = anyLive();
        const status = await fetch(to.callbackUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
          signal: AbortSignal.timeout(10_000),
        }).then(
          (r) => r.status,
          () => 0,
        );
        if (status === 200) {
          taken[fleet!.instances.indexOf(to)]! += 1;
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error('a callback was never taken');
    };
    let restarting: Promise<void> | undefined;
    let next = 0;
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        while (next < executions.length) {
          const n = next++;
          const body = callbackBodyOf(executions[n]!, emulator!.retrievalUrl);
          await Promise.all([deliver(body), ...(n % 3 === 0 ? [deliver(body)] : [])]);
          if (n === 20) fleet!.kill(1);
          if (n === 40) restarting ??= redis!.restart(400);
        }
      }),
    );
    await restarting;
    const killed = fleet.instances[1]!;
    const delivered = () => new Set(fleet!.instances.flatMap((i) => i.results));
    // The sweeps take over what the killed instance held, a lease after it was due.
    await expect.poll(() => delivered().size, { timeout: 60_000, interval: 200 }).toBe(executions.length);
    const perExecution = new Map<string, string[]>();
    fleet.instances.forEach((instance, index) => {
      for (const id of instance.results) perExecution.set(id, [...(perExecution.get(id) ?? []), `instance-${index}`]);
    });
    const doubled = [...perExecution.values()].filter((by) => by.length > 1);
    expect(doubled.filter((by) => by.length > 2 || !by.includes('instance-1'))).toEqual([]);
    // The faults did happen: onResult failed and was tried again; the killed instance took
    // callbacks (counted as the service saw them: its onResult may not have run for them, when
    // another instance held the decision's lease or had told it).
    const tries = fleet.instances.reduce((sum, i) => sum + i.tries.length, 0);
    expect(tries).toBeGreaterThan(executions.length);
    expect(taken[fleet.instances.indexOf(killed)]).toBeGreaterThan(0);
  });
});

const TOKEN_INSTANCE = fileURLToPath(new URL('../support/token-instance.mjs', import.meta.url));

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
