/**
 * blackbox-capture/server/redis: the server kit's Store on Redis, for a fleet of instances.
 *
 * Takes a connected node-redis client (`redis` 5 or later: `createClient()` or
 * `createCluster()`). Nothing is imported from it: the client is passed in, so users who
 * never import this entry install nothing. Each operation touches one key, so the store
 * works unchanged on Redis Cluster. The conditional writes are Lua scripts (atomic on the
 * server); Redis 8.4's SET IFEQ would do, but fleets run older servers.
 */
import type { Store } from './store.js';
import { DeviceRiskError, ERR_INVALID_CONFIGURATION } from '../errors.js';

/** The part of a node-redis client (v5+) the store uses. */
export interface RedisClientLike {
  get(key: string): Promise<unknown>;
  set(
    key: string,
    value: string,
    options: { expiration: { type: 'PX'; value: number }; condition?: 'NX' },
  ): Promise<unknown>;
  del(key: string): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

export interface RedisStoreOptions {
  /** Put before every key, to share one Redis between applications. Default "bbc:". */
  prefix?: string;
}

const COMPARE_AND_SET = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end return 0`;
const COMPARE_AND_DELETE = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end return 0`;

/** Redis refuses PX 0 and fractions: a whole number of milliseconds, at least 1. */
const px = (ttlMs: number) => String(Math.max(1, Math.ceil(ttlMs)));

export function createRedisStore(client: RedisClientLike, options: RedisStoreOptions = {}): Store {
  for (const method of ['get', 'set', 'del', 'eval'] as const) {
    if (typeof client?.[method] !== 'function') {
      throw new DeviceRiskError(
        ERR_INVALID_CONFIGURATION,
        `createRedisStore needs a node-redis client (redis 5 or later); this one has no ${method}()`,
      );
    }
  }
  const prefix = options.prefix ?? 'bbc:';
  const k = (key: string) => prefix + key;
  // node-redis answers a string, or a Buffer when the client maps types to buffers.
  const text = (reply: unknown) => {
    if (reply === null || reply === undefined) return undefined;
    if (typeof reply === 'string') return reply;
    if (reply instanceof Uint8Array) return new TextDecoder().decode(reply);
    throw new DeviceRiskError(
      ERR_INVALID_CONFIGURATION,
      'the Redis client answered GET with neither a string nor bytes',
    );
  };
  return {
    get: async (key) => text(await client.get(k(key))),
    async set(key, value, ttlMs) {
      await client.set(k(key), value, { expiration: { type: 'PX', value: Number(px(ttlMs)) } });
    },
    async setIfAbsent(key, value, ttlMs) {
      return (
        (await client.set(k(key), value, { expiration: { type: 'PX', value: Number(px(ttlMs)) }, condition: 'NX' })) !==
        null
      );
    },
    async compareAndSet(key, expected, value, ttlMs) {
      return (
        Number(await client.eval(COMPARE_AND_SET, { keys: [k(key)], arguments: [expected, value, px(ttlMs)] })) === 1
      );
    },
    async compareAndDelete(key, expected) {
      return Number(await client.eval(COMPARE_AND_DELETE, { keys: [k(key)], arguments: [expected] })) === 1;
    },
    async delete(key) {
      await client.del(k(key));
    },
  };
}
