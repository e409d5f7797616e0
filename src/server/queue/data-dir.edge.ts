/**
 * data-dir.ts in the edge build (Workers, edge runtimes): no file system, so no file queue;
 * the default queue stays in memory, said once at start (default.ts).
 */
import type { ClosableStore } from '../store/store.js';
import type { CheckQueue, MemoryQueueOptions } from './queue.js';

export function openDataDirQueue(
  _options: MemoryQueueOptions & {
    dataDir?: string | undefined;
    envRefused?: unknown;
    onError?: (error: unknown) => void;
  },
): undefined | { queue: CheckQueue; store: ClosableStore; path: string } {
  return undefined;
}
