// The memory store's settings: each option refused when the store is made, naming it.
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../../src/server/store/store.js';
import { MEMORY_STORE_OPTIONS } from '../../../src/server/store/settings.js';

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
