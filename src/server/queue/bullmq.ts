/**
 * blackbox-capture/server/bullmq: the endpoint's queue on BullMQ, for a fleet
 * (docs/fleet.md#the-queue). Every instance gives its handler the same queue (the same
 * Redis, the same name): any instance accepts a checkout, any instance checks it.
 *
 * Fair across visitors as the memory queue is: each job's BullMQ priority is its visitor's
 * turn (the visitor's n-th job held gets n, counted in one hash), so that one visitor's flood
 * waits behind every other visitor's first checkout; a job not signed in has SIGNED_IN_TURNS
 * added, so that signed-in shoppers' checkouts run ahead of every guest's.
 *
 * What BullMQ brings: one job per Idempotency-Key (the job id is derived from it, and an add
 * under an id Redis holds already adds nothing, atomically: the accept's own nonce, written
 * into the job, tells which add Redis kept), a job held in Redis before the browser hears
 * 202, a job whose instance died taken again by another (stalled-job recovery, after
 * `stalledIntervalMs`), delayed retries, the tenant's limit shared by the fleet's workers
 * (Worker.rateLimit), and the counts. What it does not: the check's own exactly-once, which
 * stays with the key's record and lease (idempotency.ts), since a stalled job can run twice.
 *
 * On Redis Cluster (an ioredis `Cluster` as the connection) BullMQ's scripts touch several
 * keys of the queue at once, which Cluster allows only within one hash slot: the prefix must
 * hold a hash tag (`{bbc}`), as BullMQ's own docs require, and the whole queue then lives on
 * the master of that slot. Without one every command fails with CROSSSLOT, so the queue is
 * refused at creation (`invalid_configuration`) rather than given a tag of its own making: a
 * prefix the kit chose silently would differ from the one the shop's tools (redis-cli, a
 * dashboard) and its other instances name.
 */
import { DelayedError, Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';
import {
  DeviceRiskError,
  ERR_INVALID_CONFIGURATION,
  ERR_STORE_FULL,
  isDeviceRiskError,
  isRedisFull,
  onErrorOf,
} from '../errors.js';
import { bullmqMessages } from '../messages.js';
import {
  boundFor,
  keptFor,
  type AddResult,
  type CheckJob,
  type CheckQueue,
  type JobRun,
  type QueueCounts,
} from './queue.js';
import { hashTagOf } from './hash-tag.js';
import { awaitReplicas } from '../store/replicas.js';
import { BULLMQ_QUEUE_OPTIONS } from './settings.js';
import { checkOptions } from '../options-table.js';

export interface BullmqQueueOptions {
  /** ioredis options or a client for BullMQ (its workers need `maxRetriesPerRequest: null`). */
  connection: ConnectionOptions;
  /** The queue's name: the same on every instance of the fleet. Default "blackbox-capture-checks". */
  name?: string;
  /**
   * BullMQ's key prefix in Redis. Default BullMQ's ("bull"). On Redis Cluster it must hold a
   * hash tag, such as "{bbc}" (the queue is refused otherwise): every key of the queue is then
   * on one master.
   */
  prefix?: string;
  /**
   * Checks held at most across the fleet, running or not (not those only reading a decision);
   * past it, new checkouts are answered 503 `queue_full`. Checked before each add (a burst on
   * several instances may pass it by a few). Default 900:
   * what the tenant's default account limit (1 a second, shared by the fleet) checks within the
   * trust bound (15 minutes); more would wait past it and go stale. Times the bytes one queued
   * checkout costs, the Redis memory the queue needs (docs/fleet.md#what-redis-holds).
   */
  maxQueued?: number;
  /**
   * Replicas that must hold each accepted checkout before it is answered 202 (Redis `WAIT` on
   * the queue's connection after the add). Default 0: the master's word. With Sentinel, 1 (with
   * two replicas, so that a failover leaves one to confirm): a checkout written to a master that
   * is failing over, or to an old master still reachable after the promotion, is not confirmed
   * and answered 503 (`store_unavailable`, the blackbox kept in the form) instead of 202 and
   * lost when that master resyncs (docs/fleet.md#sentinel). Not on Redis Cluster.
   */
  confirmReplicas?: number;
  /** How long an add waits for `confirmReplicas`, in ms. Default 1000. */
  confirmTimeoutMs?: number;
  /** Jobs this instance runs at once. Default 4. */
  concurrency?: number;
  /**
   * How often this instance looks for jobs whose instance died (their lock lapsed), in ms:
   * such a job runs again on a live instance. Default 30000 (BullMQ's).
   */
  stalledIntervalMs?: number;
  /** How long a job's lock lasts without renewal, in ms. Default 30000 (BullMQ's). */
  lockDurationMs?: number;
  /**
   * Told about the worker's own failures (Redis away, a lost lock). A Redis at maxmemory is told
   * as `store_full`, at most once per 10 s. Default one line on console.error.
   */
  onError?: (error: unknown) => void;
}

/** 1 account request a second × the 15-minute trust bound, as the handler's memory queue (handler.ts `defaultMaxQueued`). */
export const DEFAULT_BULLMQ_MAX_QUEUED = BULLMQ_QUEUE_OPTIONS.maxQueued.default;

/**
 * How long a job's end is remembered, in s: a second run of the same job (its lock lapsed, or
 * the key added again as its run ended) ends within a run's own time limits of the first, far inside this.
 */
const COUNTED_RUNS_SECONDS = 600;

/**
 * A job done: its checkout counted once, its add's turn given back once, however often it ran.
 * A job whose lock lapsed on a starved instance is run again by another (BullMQ's stalled
 * check), and both runs end here; a browser's retry can add a key's job again in the instant
 * after its run ended, and that run finds the key checked. Only the key's first end is counted,
 * and each add gives its visitor's turn back once (docs/fleet.md#the-queue).
 * KEYS[1] the ends seen (a sorted set by second), KEYS[2] the counter (a hash by second),
 * KEYS[3] the turns, KEYS[4] the jobs reading (left); ARGV[1] the second, ARGV[2] the add's
 * nonce, ARGV[3] the job's id (its key's), ARGV[4] its visitor if any. Returns 1 when counted,
 * 0 for a checkout counted before.
 */
const FINISHED_SCRIPT = `
local now = tonumber(ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ${COUNTED_RUNS_SECONDS})
local firstOfAdd = redis.call('ZADD', KEYS[1], 'NX', now, 'add:' .. ARGV[2]) == 1
local firstOfKey = redis.call('ZADD', KEYS[1], 'NX', now, 'job:' .. ARGV[3]) == 1
redis.call('EXPIRE', KEYS[1], ${COUNTED_RUNS_SECONDS + 60})
if firstOfAdd and ARGV[4] then
  ${giveTurnBack('KEYS[3]', 'ARGV[4]')}
end
if not firstOfKey then return 0 end
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
for _, second in ipairs(redis.call('HKEYS', KEYS[2])) do
  if tonumber(second) < now - 120 then redis.call('HDEL', KEYS[2], second) end
end
redis.call('PEXPIRE', KEYS[2], 180000)
return 1`;

/**
 * A visitor's turn: its jobs held now, this one counted (KEYS[1] a hash by visitor, ARGV[1] the
 * visitor, ARGV[2] how long the hash outlives its last add, in ms). Its n-th job gets priority
 * n, so it waits behind every visitor's first (docs/fleet.md#the-queue). BullMQ runs by
 * (priority, arrival), and a count falls as a visitor's first jobs run: so while any of its
 * jobs still waits (`<visitor>|waiting`, its jobs not running), a new one gets no less than the
 * turn given last (`<visitor>|last`), never ahead of its older ones (at the trust bound those
 * would go stale behind every newcomer). A first job starts the visitor afresh.
 */
const TURN_SCRIPT = `
local v = ARGV[1]
local n = redis.call('HINCRBY', KEYS[1], v, 1)
if n == 1 then redis.call('HDEL', KEYS[1], v .. '|last', v .. '|waiting') end
local waiting = redis.call('HINCRBY', KEYS[1], v .. '|waiting', 1)
local last = tonumber(redis.call('HGET', KEYS[1], v .. '|last') or '0')
if waiting > 1 and n < last then n = last end
redis.call('HSET', KEYS[1], v .. '|last', n)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return n`;
/** Lua: one fewer of the visitor's jobs waits (`w` left); none: the turn given last no longer binds. */
function oneFewerWaiting(turns: string, visitor: string): string {
  return `local w = redis.call('HINCRBY', ${turns}, ${visitor} .. '|waiting', -1)
if w <= 0 then redis.call('HDEL', ${turns}, ${visitor} .. '|waiting', ${visitor} .. '|last') end`;
}
/** Lua: the visitor's job left the queue (or was never added), one fewer held, its fields gone at none; `n` the count left. */
function giveTurnBack(turns: string, visitor: string): string {
  return `local n = redis.call('HINCRBY', ${turns}, ${visitor}, -1)
if n <= 0 then redis.call('HDEL', ${turns}, ${visitor}, ${visitor} .. '|last', ${visitor} .. '|waiting') end`;
}
/** A visitor's job starts a run: it waits no more (KEYS[1] the turns, ARGV[1] the visitor). */
const STARTED_SCRIPT = `
${oneFewerWaiting('KEYS[1]', 'ARGV[1]')}
return w`;
/**
 * A visitor's job waits again (retried, or put back at the tenant's limit), with its turn
 * (ARGV[2]): newer ones come behind it. Nothing for a visitor the hash no longer holds.
 */
const WAITS_SCRIPT = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], ARGV[1] .. '|waiting', 1)
local last = tonumber(redis.call('HGET', KEYS[1], ARGV[1] .. '|last') or '0')
if tonumber(ARGV[2]) > last then redis.call('HSET', KEYS[1], ARGV[1] .. '|last', ARGV[2]) end
return 1`;
/** A visitor's job left the queue before it ran (never added): its turn given back, and its wait. */
const LEAVE_SCRIPT = `
${giveTurnBack('KEYS[1]', 'ARGV[1]')}
if n > 0 then
  ${oneFewerWaiting('KEYS[1]', 'ARGV[1]')}
end
return n`;
/**
 * A job held only to read its decision now (KEYS[1] the jobs reading, KEYS[2] its hash; ARGV[1]
 * when, ARGV[2] its id): not for a job gone meanwhile (finished by a run whose lock lapsed here).
 */
const READING_SCRIPT = `
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
return redis.call('ZADD', KEYS[1], 'NX', ARGV[1], ARGV[2])`;
/** How far into each of the queue's lists `CHECKS_SCRIPT` looks for a job not only reading, 20 at a time. */
const OLDEST_SCAN = 200;
/**
 * The jobs reading, and the oldest acceptance among the checks waiting (-1 when none is found):
 * in each state, the first job in its order that is not only reading (within OLDEST_SCAN): the
 * wait and active lists (oldest on the right), the prioritized and delayed sets; its acceptance
 * from its data (a job whose data does not decode, from when BullMQ added it). Read only: it
 * answers on a Redis at maxmemory. KEYS[1] the jobs reading; ARGV[1] the queue's key prefix,
 * ARGV[2] OLDEST_SCAN.
 */
const CHECKS_SCRIPT = `
local reading, base, limit = KEYS[1], ARGV[1], tonumber(ARGV[2])
local oldest = -1
local function checks(id)
  if redis.call('ZSCORE', reading, id) then return false end
  local data = redis.call('HGET', base .. id, 'data')
  if not data then return false end
  local ok, job = pcall(cjson.decode, data)
  local at = ok and tonumber(job.acceptedAt) or tonumber(redis.call('HGET', base .. id, 'timestamp'))
  if at and (oldest < 0 or at < oldest) then oldest = at end
  return true
end
local function first(key, list)
  for from = 0, limit - 1, 20 do
    local ids
    if list then
      ids = redis.call('LRANGE', key, -from - 20, -from - 1)
      for i = #ids, 1, -1 do if checks(ids[i]) then return end end
    else
      ids = redis.call('ZRANGE', key, from, from + 19)
      for _, id in ipairs(ids) do if checks(id) then return end end
    end
    if #ids < 20 then return end
  end
end
first(base .. 'wait', true)
first(base .. 'active', true)
first(base .. 'prioritized', false)
first(base .. 'delayed', false)
return {redis.call('ZCARD', reading), tostring(oldest)}`;
/** How often an instance has the jobs reading looked at again (PRUNE_SCRIPT), in ms. */
const PRUNE_EVERY_MS = 10_000;
/**
 * The ten ids of jobs reading looked at longest ago, looked at again: one whose job is gone (its
 * end not counted by an instance of an earlier version, or its mark made after another instance
 * ended it) is dropped, the others come last. KEYS[1] the jobs reading; ARGV[1] the queue's key
 * prefix, ARGV[2] now.
 */
const PRUNE_SCRIPT = `
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, 9)) do
  if redis.call('EXISTS', ARGV[1] .. id) == 0 then redis.call('ZREM', KEYS[1], id)
  else redis.call('ZADD', KEYS[1], 'XX', ARGV[2], id) end
end
return 0`;
/** BullMQ's largest priority: a visitor's turns past it share the last. */
const MAX_PRIORITY = 2_097_151;
/**
 * The priorities kept for signed-in shoppers' jobs (`lane: 'signed-in'`), 1 to this: every other
 * job's priority is its turn plus this, behind all of them. A signed-in visitor's turns past it share the last.
 */
const SIGNED_IN_TURNS = 1000;
/**
 * How long the turns outlive the last add, in ms: a count a crash left one too high (a job done
 * whose leave was never written) goes with it, and the turns start again from what is added.
 */
const TURNS_TTL_MS = 3_600_000;

/** A BullMQ job id from an Idempotency-Key: BullMQ refuses ids with ':' or made of digits. */
export async function jobIdOf(key: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(key));
  return 'bbc-' + Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * A job as Redis holds it: the checkout, and the nonce of the add that wrote it (absent in a
 * job an earlier version added), so that of two adds under one key each knows whether it was
 * the one kept, whatever their clocks read.
 */
type HeldJob = CheckJob & { addedBy?: string; turn?: number };

/** How often a Redis at maxmemory is told while it stays full, in ms: the worker meets it on every fetch. */
const FULL_TOLD_EVERY_MS = 10_000;

/** The states of a job held and not running (BullMQ's own `count()`); with 'active', every job held. */
const HELD_STATES = ['waiting', 'delayed', 'prioritized', 'waiting-children'] as const;

/**
 * onError with a Redis at maxmemory named (`store_full`), told once per ten seconds with the
 * count of refusals since: the worker keeps trying, and drains again by itself once there is room.
 */
function namingFull(onError: (error: unknown) => void): (error: unknown) => void {
  let toldAt = -Infinity;
  let unsaid = 0;
  return (error) => {
    if (isDeviceRiskError(error) || !isRedisFull(error)) return onError(error);
    unsaid++;
    const now = Date.now();
    if (now - toldAt < FULL_TOLD_EVERY_MS) return;
    toldAt = now;
    const refusals = unsaid;
    unsaid = 0;
    onError(
      new DeviceRiskError(ERR_STORE_FULL, bullmqMessages.redisFull(refusals), { operation: 'queue', cause: error }),
    );
  };
}

/**
 * What an add waits for before it counts as 'added': `confirmReplicas` replicas holding it
 * (store/replicas.ts), asked on the queue's own connection. Their counts are checked by the
 * table; WAIT reaches one master only, so not on a Cluster. Short of them (or the WAIT failed),
 * the add is 'unconfirmed', told to `onError`.
 */
function confirmationOf(
  options: BullmqQueueOptions,
  onError: (error: unknown) => void,
): (client: Promise<object>) => Promise<'added' | 'unconfirmed'> {
  const replicas = options.confirmReplicas ?? BULLMQ_QUEUE_OPTIONS.confirmReplicas.default;
  const timeoutMs = options.confirmTimeoutMs ?? BULLMQ_QUEUE_OPTIONS.confirmTimeoutMs.default;
  if (replicas > 0 && (options.connection as { isCluster?: unknown } | undefined)?.isCluster === true)
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, bullmqMessages.confirmOnCluster);
  return async (client) => {
    try {
      // BullMQ's proxy of an ioredis client forwards `call` to it.
      const ioredis = (await client) as { call(...args: (string | number)[]): Promise<unknown> };
      const wait = (count: number, ms: number) => ioredis.call('WAIT', count, ms);
      await awaitReplicas(wait, replicas, timeoutMs, { status: 503, retryAfter: 1, operation: 'queue' });
      return 'added';
    } catch (error) {
      // Written all the same: a job that may run is never answered as one refused (queued.ts).
      onError(error);
      return 'unconfirmed';
    }
  };
}

/** The kit's own keys beside the queue's (the same prefix, so the same hash tag on Cluster). */
function kitKeysOf(prefix: string, name: string) {
  return {
    /** Jobs the fleet finished, a count per second (a hash, trimmed to two minutes): every instance's drain rate is the fleet's. */
    drainedKey: `${prefix}:${name}:bbc-drained`,
    /** Jobs the fleet dropped stale, counted the same way apart: a stale drop is no drained work. */
    staleKey: `${prefix}:${name}:bbc-stale`,
    /** The jobs' ends in the last ten minutes, by add and by key: a checkout run twice is counted once. */
    countedKey: `${prefix}:${name}:bbc-counted`,
    /** Each visitor's jobs held now, by visitor: its next job's turn (a hash). */
    turnsKey: `${prefix}:${name}:bbc-turns`,
    /** The ids of the jobs held only to read a decision (a sorted set by when, CheckJob.reading): not checks waiting. */
    readingKey: `${prefix}:${name}:bbc-reading`,
  };
}

/** A job that could not be read back. */
const UNREAD = Symbol('unread');

export function createBullmqQueue(options: BullmqQueueOptions): CheckQueue & { queue: Queue } {
  checkOptions(options, BULLMQ_QUEUE_OPTIONS);
  const name = options.name ?? BULLMQ_QUEUE_OPTIONS.name.default;
  const prefix = options.prefix ?? BULLMQ_QUEUE_OPTIONS.prefix.default;
  if ((options.connection as { isCluster?: unknown } | undefined)?.isCluster === true && !hashTagOf(prefix)) {
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, bullmqMessages.clusterNeedsHashTag(prefix));
  }
  const maxQueued = options.maxQueued ?? BULLMQ_QUEUE_OPTIONS.maxQueued.default;
  const onError = namingFull(onErrorOf(options.onError));
  const confirm = confirmationOf(options, onError);
  const common = { connection: options.connection, prefix };
  const queue = new Queue<HeldJob>(name, common);
  const { drainedKey, staleKey, countedKey, turnsKey, readingKey } = kitKeysOf(prefix, name);
  const redisClient = scriptedClient(queue);
  const { priorityOf, waitChanged, leave } = visitorTurns(redisClient, turnsKey);
  queue.on('error', onError);
  let worker: Worker<CheckJob> | undefined;

  async function add(job: CheckJob, lateAt?: number): Promise<AddResult> {
    const jobId = await jobIdOf(job.key);
    const held = await queue.getJob(jobId);
    if (held && held.data.fingerprint !== job.fingerprint) return 'conflict';
    // Held: asked again, as the add was (a retry of an unconfirmed add must not be 202 unconfirmed).
    if (held) return (await confirm(redisClient())) === 'added' ? 'present' : 'present-unconfirmed';
    // One read of the fleet's queue, bounded by `maxQueued` and `lateAt`: read here, just before
    // the add, it counts what other instances accepted since the endpoint's late check read it.
    const [byState, reading] = await Promise.all([
      queue.getJobCounts(...HELD_STATES, 'active'),
      redisClient().then((client) => client.zcard(readingKey)),
    ]);
    if (checksOf(byState, reading) >= boundFor(job, maxQueued, lateAt)) return 'full';
    const addedBy = crypto.randomUUID();
    // Fair turns across visitors: this visitor's n-th held job runs behind every visitor's first.
    const { turn, priority } = await priorityOf(job);
    const adding = queue.add(
      'check',
      { ...job, addedBy, turn },
      {
        jobId,
        priority,
        // Done jobs go: the key's record answers a retry. Failed ones cannot be (the runner gives up by returning).
        removeOnComplete: true,
        removeOnFail: { age: 24 * 3600 },
        // A throw the runner did not expect (Redis away mid-job) is not the end of an accepted
        // check: it is taken again a second later, until the trust bound ends it.
        attempts: Number.MAX_SAFE_INTEGER,
        backoff: { type: 'fixed', delay: 1000 },
      },
    );
    // Its answer may be lost while the job is held (a connection cut after Redis ran the add,
    // and the resend refused at maxmemory): a failed add is read back, as a successful one is.
    const failed = await adding.then(
      () => undefined,
      (error: unknown) => ({ error }),
    );
    // Two instances adding the same key at once: BullMQ keeps the first and adds nothing for
    // the other (one script, atomic); the job's nonce says whose it is. None held after a
    // success: a job ran and left meanwhile, whose record the endpoint reads next (queued.ts).
    const stored = await queue.getJob(jobId).catch((): typeof UNREAD => UNREAD);
    // Unread: this add's job, or another's, may be held; its turn stays (the turns expire).
    if (stored === UNREAD) return 'unanswered';
    if (stored ? stored.data.addedBy === addedBy : !failed) return confirm(redisClient());
    // Not held by this add: its turn is given back (a Redis at maxmemory may refuse that too; the turns expire).
    await leave(job.visitor).catch(() => {});
    if (!stored) throw failed!.error;
    return stored.data.fingerprint === job.fingerprint ? 'present' : 'conflict';
  }

  function process(run: (job: CheckJob) => Promise<JobRun>): void {
    /** One run of `job`; `waitsNoMore()` when it is done, or comes back only to read (no check waits). */
    async function runOnce(job: Job<CheckJob>, token: string | undefined, waitsNoMore: () => void): Promise<void> {
      const result = await run(job.data);
      if (result.done || result.reading !== undefined) waitsNoMore();
      if (result.done) {
        const { addedBy = job.id!, visitor } = job.data as HeldJob;
        const counter = result.stale ? staleKey : drainedKey;
        const args = [countedKey, counter, turnsKey, readingKey, Math.floor(Date.now() / 1000), addedBy, job.id!];
        // Stryker disable next-line ConditionalExpression: no visitor sent as '' only adds and drops a field '' in the same script
        const withVisitor = visitor === undefined ? args : [...args, visitor];
        await redisClient()
          .then((client) => client.runCommand('bbcFinished', withVisitor))
          .catch(onError);
        return;
      }
      if (result.pauseQueue) {
        // The tenant's limit: every worker of the fleet waits, and the job goes back to wait.
        await worker!.rateLimit(result.retryInMs);
        throw Worker.RateLimitError();
      }
      // Kept with the job, so that its next run tells it without checking it (or only reads), on any instance.
      const kept = keptFor(job.data, result);
      if (kept?.reading !== undefined && job.data.reading === undefined)
        await (await redisClient()).runCommand('bbcReading', [readingKey, queue.toKey(job.id!), Date.now(), job.id!]);
      if (kept) await job.updateData(kept);
      await job.moveToDelayed(Date.now() + result.retryInMs, token);
      throw new DelayedError();
    }

    worker = new Worker<CheckJob>(
      name,
      async (job: Job<CheckJob>, token?: string) => {
        await waitChanged(job.data).catch(onError);
        // Not done, it waits again (retried, put back at the limit, or thrown): newer jobs come behind it.
        let waitsAgain = true;
        try {
          await runOnce(job, token, () => (waitsAgain = false));
        } finally {
          if (waitsAgain) await waitChanged(job.data, (job.data as HeldJob).turn ?? 1).catch(onError);
        }
      },
      {
        ...common,
        concurrency: options.concurrency ?? BULLMQ_QUEUE_OPTIONS.concurrency.default,
        // A job whose instance died is taken again as often as it takes: the trust bound ends it.
        maxStalledCount: Number.MAX_SAFE_INTEGER,
        stalledInterval: options.stalledIntervalMs ?? BULLMQ_QUEUE_OPTIONS.stalledIntervalMs.default,
        lockDuration: options.lockDurationMs ?? BULLMQ_QUEUE_OPTIONS.lockDurationMs.default,
      },
    );
    worker.on('error', onError);
    // Never silent: each throw the runner did not expect is told (and the job taken again).
    worker.on('failed', (job, error) => onError(error));
  }

  let prunedAt = 0;
  const counts = () => {
    // Every PRUNE_EVERY_MS at most, beside a count: the reading ids whose jobs are gone dropped (a write, so not in the count).
    if (Date.now() - prunedAt >= PRUNE_EVERY_MS) {
      prunedAt = Date.now();
      void redisClient()
        .then((client) => client.runCommand('bbcPrune', [readingKey, queue.toKey(''), Date.now()]))
        .catch(() => {});
    }
    return fleetCounts(queue, redisClient(), kitKeysOf(prefix, name));
  };

  return {
    queue,
    add,
    process,
    counts,
    async close() {
      await worker?.close();
      await queue.close();
    },
  };
}

/** A visitor's turns on the queue (TURN_SCRIPT and the scripts beside it), on the client `redisClient` gives. */
function visitorTurns(redisClient: ReturnType<typeof scriptedClient>, turnsKey: string) {
  /** A job without a visitor is a visitor of its own: always a first turn, counted nowhere. */
  const turnOf = async (visitor: string | undefined): Promise<number> =>
    visitor === undefined
      ? 1
      : Number(await (await redisClient()).runCommand('bbcTurn', [turnsKey, visitor, TURNS_TTL_MS]));
  /** A job's turn, and its BullMQ priority: its turn, behind every signed-in shopper's unless it is one. */
  const priorityOf = async (job: CheckJob): Promise<{ turn: number; priority: number }> => {
    const turn = await turnOf(job.visitor);
    const priority =
      job.lane === 'signed-in' ? Math.min(turn, SIGNED_IN_TURNS) : Math.min(MAX_PRIORITY, SIGNED_IN_TURNS + turn);
    return { turn, priority };
  };
  /** A visitor's job starts a run, or (`turn` given) waits again: what its turns know of its wait. */
  const waitChanged = async ({ visitor }: CheckJob, turn?: number): Promise<void> => {
    if (visitor === undefined) return;
    const client = await redisClient();
    await (turn === undefined
      ? client.runCommand('bbcStarted', [turnsKey, visitor])
      : client.runCommand('bbcWaits', [turnsKey, visitor, turn]));
  };
  /** A visitor's job left the queue before it ran (its add failed, or another add won): its turn and wait given back. */
  const leave = async (visitor: string | undefined): Promise<void> => {
    if (visitor !== undefined) await (await redisClient()).runCommand('bbcLeave', [turnsKey, visitor]);
  };
  return { priorityOf, waitChanged, leave };
}

/** The Redis client BullMQ holds, with the kit's scripts defined once: a getter of it. */
function scriptedClient(queue: Queue<HeldJob>) {
  let defined = false;
  return async () => {
    const client = await queue.backend.client;
    if (!defined) {
      client.defineCommand('bbcFinished', { numberOfKeys: 4, lua: FINISHED_SCRIPT });
      client.defineCommand('bbcTurn', { numberOfKeys: 1, lua: TURN_SCRIPT });
      client.defineCommand('bbcLeave', { numberOfKeys: 1, lua: LEAVE_SCRIPT });
      client.defineCommand('bbcStarted', { numberOfKeys: 1, lua: STARTED_SCRIPT });
      client.defineCommand('bbcWaits', { numberOfKeys: 1, lua: WAITS_SCRIPT });
      client.defineCommand('bbcReading', { numberOfKeys: 2, lua: READING_SCRIPT });
      client.defineCommand('bbcChecks', { numberOfKeys: 1, lua: CHECKS_SCRIPT });
      client.defineCommand('bbcPrune', { numberOfKeys: 1, lua: PRUNE_SCRIPT });
    }
    defined = true;
    return client;
  };
}

/** The checks held, running or not (as the memory and file queues count them), less those only reading a decision. */
const checksOf = (byState: Record<string, number>, reading: number): number =>
  Math.max(0, Object.values(byState).reduce((sum, n) => sum + n, 0) - reading);

/** The fleet's figures, read at once (one round trip's wait): the late check reads them for each accept. */
async function fleetCounts(
  queue: Queue<HeldJob>,
  redis: Promise<{
    hgetall(key: string): Promise<Record<string, string>>;
    runCommand(name: string, args: unknown[]): Promise<unknown>;
  }>,
  { drainedKey, staleKey, readingKey }: ReturnType<typeof kitKeysOf>,
): Promise<QueueCounts> {
  const client = await redis;
  const [byState, [reading, oldest], drained, stale] = await Promise.all([
    queue.getJobCounts(...HELD_STATES, 'active'),
    client.runCommand('bbcChecks', [readingKey, queue.toKey(''), OLDEST_SCAN]) as Promise<[number, string]>,
    client.hgetall(drainedKey),
    client.hgetall(staleKey),
  ]);
  const queued = checksOf(byState, reading);
  const oldestAcceptedAt = Number(oldest) >= 0 ? Number(oldest) : undefined;
  const since = Math.floor(Date.now() / 1000) - 60;
  const lastMinute = (bySecond: Record<string, string>) => {
    let total = 0;
    for (const [second, count] of Object.entries(bySecond)) if (Number(second) > since) total += Number(count);
    return total;
  };
  return { queued, oldestAcceptedAt, drainedLastMinute: lastMinute(drained), staleLastMinute: lastMinute(stale) };
}
