/**
 * createMemoryQueue's settings module: its options with their defaults and checks
 * (docs/architecture.md#settings-modules); docs/server.md's queue options are tested against it.
 */
import { RULES, type OptionTable } from '../options-table.js';
import type { MemoryQueueOptions } from './queue.js';

/** Every option of createMemoryQueue: its default (docs/server.md#the-memory-queues-options) and its check. */
export const MEMORY_QUEUE_OPTIONS = {
  maxQueued: { default: 10_000, ...RULES.positiveInteger },
  concurrency: { default: 4, ...RULES.positiveInteger },
  now: { default: 'Date.now', ...RULES.function },
} as const satisfies OptionTable<MemoryQueueOptions>;
