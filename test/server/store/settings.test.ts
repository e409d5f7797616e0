// The stores' settings: each option refused when the store is made, naming it and what it must be.
import { describe, expect, it } from 'vitest';
import { createRedisStore } from '../../../src/server/store/redis.js';
import { MEMORY_STORE_OPTIONS, REDIS_STORE_OPTIONS } from '../../../src/server/store/settings.js';
import { createMemoryStore } from '../../../src/server/store/store.js';

describe('MEMORY_STORE_OPTIONS', () => {
  it.each<[keyof typeof MEMORY_STORE_OPTIONS, unknown]>([
    ['maxEntries', -1],
    ['now', 0],
  ])('a bad %s is invalid_configuration naming it', (name, value) => {
    expect(() => createMemoryStore({ [name]: value })).toThrow(
      expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining(`${name} must be`) }),
    );
  });
});

describe('REDIS_STORE_OPTIONS', () => {
  /** A client in form only: the options are checked before it is called. */
  const client = { get: async () => null, set: async () => 'OK', del: async () => 0, eval: async () => 0 };

  it.each<[keyof typeof REDIS_STORE_OPTIONS, unknown, string]>([
    ['prefix', 7, 'a string'],
    ['readyTimeoutMs', 0, 'a positive number of milliseconds'],
    ['readyTimeoutMs', Number.NaN, 'a positive number of milliseconds'],
  ])('%s %s is refused at creation, named', (name, value, expects) => {
    expect(() => createRedisStore(client, { [name]: value })).toThrow(
      expect.objectContaining({
        code: 'invalid_configuration',
        message: expect.stringContaining(`${name} must be ${expects}`),
      }),
    );
  });

  it('takes an empty prefix: a Redis of its own', () => {
    expect(() => createRedisStore(client, { prefix: '' })).not.toThrow();
    expect(REDIS_STORE_OPTIONS.prefix.default).toBe('bbc:');
    expect(REDIS_STORE_OPTIONS.readyTimeoutMs.default).toBe(10_000);
  });
});
