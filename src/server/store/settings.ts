/**
 * createMemoryStore's settings module: its options with their defaults and checks
 * (docs/architecture.md#settings-modules); docs/server.md's store options are tested against it.
 */
import { RULES, type OptionTable } from '../options-table.js';
import type { MemoryStoreOptions } from './store.js';

/** Every option of createMemoryStore: its default (docs/server.md#the-memory-stores-options) and its check. */
export const MEMORY_STORE_OPTIONS = {
  maxEntries: { default: 100_000, ...RULES.positiveInteger },
  now: { default: 'Date.now', ...RULES.function },
} as const satisfies OptionTable<MemoryStoreOptions>;
