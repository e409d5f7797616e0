/**
 * The queues' settings module: createMemoryQueue's, createFileQueue's and createBullmqQueue's
 * options with their defaults and checks (docs/architecture.md#settings-modules); docs/server.md's
 * queue options are tested against them. Types only from bullmq.ts: the memory queue's entry
 * imports this module, and must not import BullMQ.
 */
import { REQUIRED, RULES, type OptionTable } from '../options-table.js';
import type { BullmqQueueOptions } from './bullmq.js';
import type { FileQueueOptions } from './file.js';
import type { MemoryQueueOptions } from './queue.js';

/** Every option of createMemoryQueue: its default (docs/server.md#the-memory-queues-options) and its check. */
export const MEMORY_QUEUE_OPTIONS = {
  maxQueued: { default: 10_000, ...RULES.positiveInteger },
  concurrency: { default: 4, ...RULES.positiveInteger },
  now: { default: 'Date.now', ...RULES.function },
} as const satisfies OptionTable<MemoryQueueOptions>;

/** Every option of createFileQueue: the memory queue's, its database file and its leases (docs/server.md#the-file-queues-options). */
export const FILE_QUEUE_OPTIONS = {
  path: { default: REQUIRED, ...RULES.text },
  ...MEMORY_QUEUE_OPTIONS,
  leaseMs: { default: 10_000, ...RULES.ms },
  onError: { default: 'one line on console.error', ...RULES.function },
} as const satisfies OptionTable<FileQueueOptions>;

/** BullMQ's own default for both (its Worker's `stalledInterval` and `lockDuration`). */
const BULLMQ_INTERVAL_MS = 30_000;

/** Every option of createBullmqQueue: its default (docs/server.md#the-bullmq-queues-options) and its check. */
export const BULLMQ_QUEUE_OPTIONS = {
  connection: { default: REQUIRED, ...RULES.object, expects: 'ioredis options or an ioredis client' },
  name: { default: 'blackbox-capture-checks', ...RULES.text },
  prefix: { default: 'bull', ...RULES.text },
  // 1 account request a second × the 15-minute trust bound, as the handler's memory queue
  // (handler.ts `defaultMaxQueued`): more would wait past the bound and go stale.
  maxQueued: { default: 900, ...RULES.positiveInteger },
  confirmReplicas: { default: 0, ...RULES.replicaCount },
  confirmTimeoutMs: { default: 1000, ...RULES.replicaWaitMs },
  concurrency: { default: 4, ...RULES.positiveInteger },
  stalledIntervalMs: { default: BULLMQ_INTERVAL_MS, ...RULES.ms },
  lockDurationMs: { default: BULLMQ_INTERVAL_MS, ...RULES.ms },
  onError: { default: 'one line on console.error', ...RULES.function },
} as const satisfies OptionTable<BullmqQueueOptions>;
