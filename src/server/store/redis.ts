/**
 * blackbox-capture/server/redis: the server kit's Store on Redis, for a fleet of instances.
 *
 * Takes a connected client: node-redis (`redis` 5 or later: `createClient()` or
 * `createCluster()`) or ioredis (5 or later: `new Redis()` or `new Cluster()`). Nothing is
 * imported from either: the client is passed in, so users who never import this entry
 * install nothing. Each operation touches one key, so the store works unchanged on Redis
 * Cluster. The conditional writes are Lua scripts (atomic on the server); Redis 8.4's SET
 * IFEQ would do, but fleets run older servers.
 *
 * Before its first operation the store checks what its guarantees rest on, once: that the
 * client honours SET's NX and PX (node-redis 4 takes other options and silently ignores
 * these), and that Redis never evicts keys (`maxmemory-policy noeviction`). A check that
 * fails refuses every operation (`invalid_configuration`) until a later check passes. The
 * check first waits for a client still connecting (`readyTimeoutMs`): a client created with
 * its offline queue off (ioredis `enableOfflineQueue: false`, node-redis
 * `disableOfflineQueue`) refuses commands until it is ready, so `ready()` right after
 * creating it would otherwise fail.
 *
 * A Redis at its `maxmemory` refuses writes ("OOM command not allowed"): the store says so
 * (`store_full`, answered 503 with Retry-After), and writes resume once there is room.
 */
import { redisFull, type Store } from './store.js';
import { DeviceRiskError, ERR_INVALID_CONFIGURATION, ERR_STORE_UNAVAILABLE, isRedisFull } from '../errors.js';
import { redisMessages } from '../messages.js';
import { checkOptions } from '../options-table.js';
import { REDIS_STORE_OPTIONS } from './settings.js';
import { awaitReplicas, type WaitCommand } from './replicas.js';

/** The part of a node-redis client (v5+) the store uses. */
export interface NodeRedisClientLike {
  get(key: string): Promise<unknown>;
  set(
    key: string,
    value: string,
    options: { expiration: { type: 'PX'; value: number }; condition?: 'NX' },
  ): Promise<unknown>;
  del(key: string): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /** Any command, for `confirmReplicas` (WAIT): node-redis's client takes `(args)`, its cluster more (refused). */
  sendCommand?(...args: never[]): Promise<unknown>;
}

/** The part of an ioredis client (v5+) the store uses; told from node-redis by its `call()`. */
export interface IoRedisClientLike {
  get(key: string): Promise<unknown>;
  set(key: string, value: string, px: 'PX', milliseconds: number): Promise<unknown>;
  set(key: string, value: string, px: 'PX', milliseconds: number, nx: 'NX'): Promise<unknown>;
  del(key: string): Promise<unknown>;
  eval(script: string, numberOfKeys: number, ...keysAndArguments: string[]): Promise<unknown>;
  call(command: string, ...args: string[]): Promise<unknown>;
}

export type RedisClientLike = NodeRedisClientLike | IoRedisClientLike;

export interface RedisStoreOptions {
  /** Put before every key, to share one Redis between applications. Default "bbc:". */
  prefix?: string;
  /**
   * How long the start-up check (`ready()`, or the first operation) waits for a client that
   * is still connecting, in ms; past it, `store_unavailable`. Default 10000.
   */
  readyTimeoutMs?: number;
  /**
   * Replicas that must hold each write before it counts (Redis `WAIT` on the client's connection
   * after it). Default 0: the master's word. With Sentinel, 1, as the queue's (docs/fleet.md#sentinel):
   * a key's record or lease written to a master failing over, or to an old master still
   * reachable after the promotion, would be gone after it and the checkout checked twice; not
   * confirmed within `confirmTimeoutMs`, the write fails (`store_unavailable`, 503 to the
   * browser, the check tried again). Not on Redis Cluster.
   */
  confirmReplicas?: number;
  /** How long a write waits for `confirmReplicas`, in ms. Default 1000. */
  confirmTimeoutMs?: number;
}

/** The Redis store; `ready()` runs the start-up check now (it also runs before the first operation). */
export interface RedisStore extends Store {
  /**
   * Resolves once the client and the server are fit for the store; rejects with
   * `invalid_configuration` when not, and with `store_unavailable` when a client still
   * connecting is not ready within `readyTimeoutMs`.
   */
  ready(): Promise<void>;
}

const COMPARE_AND_SET = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end return 0`;
const COMPARE_AND_DELETE = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end return 0`;
// Run as scripts on the node that holds KEYS[1]: on a Cluster, the node the check's key is on.
const PTTL = `return redis.call('PTTL', KEYS[1])`;
const MEMORY_INFO = `return redis.call('INFO', 'memory')`;
/** How long the check's key lives, in ms, should its delete fail. */
const CHECK_TTL_MS = 60_000;

/** Redis refuses PX 0 and fractions: a whole number of milliseconds, at least 1. */
const px = (ttlMs: number) => Math.max(1, Math.ceil(ttlMs));

/** The commands the store sends, in one form whichever client carries them. */
interface Commands {
  get(key: string): Promise<unknown>;
  /** True when the value was written (with NX: only when the key held none). */
  set(key: string, value: string, ttlMs: number, onlyIfAbsent: boolean): Promise<boolean>;
  del(key: string): Promise<unknown>;
  eval(script: string, key: string, args: string[]): Promise<unknown>;
  /** Redis WAIT: how many replicas hold this connection's writes, waiting up to `timeoutMs`. */
  wait?: WaitCommand;
}

/**
 * The commands with a Redis at maxmemory named: its refusal ("OOM command not allowed") becomes
 * `store_full` (503 with Retry-After), whichever command or check met it. Other failures pass
 * as they are (the endpoint answers them `store_unavailable`).
 */
function fullNamed(commands: Commands): Commands {
  const named =
    <A extends unknown[], R>(what: string, call: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> =>
      call(...args).catch((error: unknown) => {
        throw isRedisFull(error) ? redisFull(what, error) : error;
      });
  return {
    get: named('a read (GET)', (key: string) => commands.get(key)),
    set: named('a write (SET)', (key: string, value: string, ttlMs: number, onlyIfAbsent: boolean) =>
      commands.set(key, value, ttlMs, onlyIfAbsent),
    ),
    del: named('a delete (DEL)', (key: string) => commands.del(key)),
    eval: named('a conditional write (EVAL)', (script: string, key: string, args: string[]) =>
      commands.eval(script, key, args),
    ),
    ...(commands.wait ? { wait: commands.wait } : {}),
  };
}

const isIoRedis = (client: RedisClientLike): client is IoRedisClientLike =>
  typeof (client as Partial<IoRedisClientLike>).call === 'function';

function commandsOf(client: RedisClientLike): Commands {
  if (isIoRedis(client)) {
    return {
      get: (key) => client.get(key),
      set: async (key, value, ttlMs, onlyIfAbsent) =>
        (await (onlyIfAbsent
          ? client.set(key, value, 'PX', px(ttlMs), 'NX')
          : client.set(key, value, 'PX', px(ttlMs)))) !== null,
      del: (key) => client.del(key),
      eval: (script, key, args) => client.eval(script, 1, key, ...args),
      wait: (replicas, timeoutMs) => client.call('WAIT', String(replicas), String(timeoutMs)),
    };
  }
  return {
    get: (key) => client.get(key),
    set: async (key, value, ttlMs, onlyIfAbsent) =>
      (await client.set(key, value, {
        expiration: { type: 'PX', value: px(ttlMs) },
        ...(onlyIfAbsent ? { condition: 'NX' as const } : {}),
      })) !== null,
    del: (key) => client.del(key),
    eval: (script, key, args) => client.eval(script, { keys: [key], arguments: args }),
    ...(client.sendCommand
      ? {
          wait: (replicas, timeoutMs) =>
            (client as { sendCommand(args: string[]): Promise<unknown> }).sendCommand([
              'WAIT',
              String(replicas),
              String(timeoutMs),
            ]),
        }
      : {}),
  };
}

/**
 * Whether the client is on its way to ready: ioredis (Redis and Cluster) by its status,
 * node-redis (client and cluster) open (connect() called) but not ready. A client never
 * connected or closed for good is not waited for: its own error tells what to do.
 */
function connecting(client: RedisClientLike): boolean {
  const { status, isOpen, isReady } = client as { status?: unknown; isOpen?: unknown; isReady?: unknown };
  if (typeof status === 'string') return status === 'connecting' || status === 'connect' || status === 'reconnecting';
  return isOpen === true && isReady === false;
}

/** Resolves once the client is no longer connecting; rejects with `store_unavailable` past `timeoutMs`. */
async function connected(client: RedisClientLike, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (connecting(client)) {
    if (Date.now() >= end) throw new DeviceRiskError(ERR_STORE_UNAVAILABLE, redisMessages.notConnected(timeoutMs));
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const refusal = (message: string) => new DeviceRiskError(ERR_INVALID_CONFIGURATION, message);

/** A reply as text: node-redis answers a string, or a Buffer when the client maps types to buffers. */
function text(reply: unknown, what: string): string | undefined {
  if (reply === null || reply === undefined) return undefined;
  if (typeof reply === 'string') return reply;
  if (reply instanceof Uint8Array) return new TextDecoder().decode(reply);
  throw refusal(redisMessages.notText(what));
}

/**
 * What the store's guarantees rest on, checked on the server through the client as it is:
 * an NX write refused when the key exists, a PX write that expires, no eviction.
 */
async function check(commands: Commands, key: string): Promise<void> {
  try {
    // The values are never read: only whether each write was taken counts.
    // Stryker disable next-line BooleanLiteral,StringLiteral: the check's key is new (a random name), so NX on the first write changes nothing
    const first = await commands.set(key, 'check', CHECK_TTL_MS, true);
    // Stryker disable next-line StringLiteral: never read
    const second = await commands.set(key, 'check', CHECK_TTL_MS, true);
    if (!first || second) {
      throw refusal(redisMessages.ignoredNx);
    }
    // Stryker disable next-line ArrayDeclaration: these scripts read no arguments
    const ttl = Number(await commands.eval(PTTL, key, []));
    if (!(ttl > 0 && ttl <= CHECK_TTL_MS)) {
      throw refusal(redisMessages.ignoredPx);
    }
    // Stryker disable next-line ArrayDeclaration,StringLiteral: no arguments read; a reply without the policy's line reads as unknown whatever stands in for it
    const info = text(await commands.eval(MEMORY_INFO, key, []), 'INFO') ?? '';
    const policy = /maxmemory_policy:(\S+)/.exec(info)?.[1];
    if (policy !== 'noeviction') {
      throw refusal(redisMessages.mayEvict(policy ?? 'unknown'));
    }
  } finally {
    await commands.del(key).catch(() => {});
  }
}

/**
 * What a write waits for before it counts: `written`, once `confirmReplicas` replicas hold it
 * (WAIT); a write that changed nothing waits for nothing. Checked at creation.
 */
function confirmationOf(
  client: RedisClientLike,
  commands: Commands,
  {
    confirmReplicas = REDIS_STORE_OPTIONS.confirmReplicas.default,
    confirmTimeoutMs = REDIS_STORE_OPTIONS.confirmTimeoutMs.default,
  }: RedisStoreOptions,
): (written: boolean) => Promise<boolean> {
  const { isCluster, masters } = client as { isCluster?: unknown; masters?: unknown };
  if (confirmReplicas > 0 && (isCluster === true || masters !== undefined || !commands.wait))
    throw refusal(redisMessages.confirmUnreachable);
  return async (written) => {
    if (written) await awaitReplicas(commands.wait!, confirmReplicas, confirmTimeoutMs);
    return written;
  };
}

export function createRedisStore(client: RedisClientLike, options: RedisStoreOptions = {}): RedisStore {
  for (const method of ['get', 'set', 'del', 'eval'] as const) {
    if (typeof client?.[method] !== 'function') {
      throw refusal(redisMessages.notAClient(method));
    }
  }
  const commands = fullNamed(commandsOf(client));
  checkOptions(options, REDIS_STORE_OPTIONS);
  const prefix = options.prefix ?? REDIS_STORE_OPTIONS.prefix.default;
  const readyTimeoutMs = options.readyTimeoutMs ?? REDIS_STORE_OPTIONS.readyTimeoutMs.default;
  const k = (key: string) => prefix + key;
  const confirm = confirmationOf(client, commands, options);
  /** The one check in flight or passed; forgotten when it fails, so that the next operation checks again. */
  let checked: Promise<void> | undefined;
  const ready = () =>
    (checked ??= connected(client, readyTimeoutMs)
      .then(() => check(commands, k(`store-check:${crypto.randomUUID()}`)))
      .catch((error: unknown) => {
        checked = undefined;
        throw error;
      }));
  return {
    ready,
    async get(key) {
      await ready();
      return text(await commands.get(k(key)), 'GET');
    },
    async set(key, value, ttlMs) {
      await ready();
      await confirm(await commands.set(k(key), value, ttlMs, false));
    },
    async setIfAbsent(key, value, ttlMs) {
      await ready();
      return confirm(await commands.set(k(key), value, ttlMs, true));
    },
    async compareAndSet(key, expected, value, ttlMs) {
      await ready();
      return confirm(Number(await commands.eval(COMPARE_AND_SET, k(key), [expected, value, String(px(ttlMs))])) === 1);
    },
    async compareAndDelete(key, expected) {
      await ready();
      return confirm(Number(await commands.eval(COMPARE_AND_DELETE, k(key), [expected])) === 1);
    },
    async delete(key) {
      await ready();
      await confirm(Boolean(await commands.del(k(key))));
    },
  };
}
