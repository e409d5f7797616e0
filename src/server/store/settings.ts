/**
 * The stores' settings module: createMemoryStore's and createRedisStore's options with their
 * defaults and checks (docs/architecture.md#settings-modules); docs/server.md's store options
 * are tested against them.
 */
import { RULES, type OptionTable } from '../options-table.js';
import type { RedisStoreOptions } from './redis.js';
import type { MemoryStoreOptions } from './store.js';

/** Every option of createMemoryStore: its default (docs/server.md#the-memory-stores-options) and its check. */
export const MEMORY_STORE_OPTIONS = {
  maxEntries: { default: 100_000, ...RULES.positiveInteger },
  now: { default: 'Date.now', ...RULES.function },
} as const satisfies OptionTable<MemoryStoreOptions>;

/** Every option of createRedisStore: its default (docs/server.md#the-redis-stores-options) and its check. */
export const REDIS_STORE_OPTIONS = {
  // Empty is allowed: a Redis of the store's own needs no prefix.
  prefix: { default: 'bbc:', valid: (value) => typeof value === 'string', expects: 'a string' },
  readyTimeoutMs: { default: 10_000, ...RULES.ms },
  confirmReplicas: { default: 0, ...RULES.replicaCount },
  confirmTimeoutMs: { default: 1000, ...RULES.replicaWaitMs },
} as const satisfies OptionTable<RedisStoreOptions>;
