/**
 * data-dir.ts in the edge build (Workers, edge runtimes): no file system, so no file queue;
 * the default queue stays in memory, said once at start (default.ts).
 */
import type { Store } from '../store/store.js';
import type { CheckQueue, MemoryQueueOptions } from './queue.js';

export function openDataDirQueue(
  _options: MemoryQueueOptions & {
    dataDir?: string | undefined;
    envRefused?: unknown;
    onError?: (error: unknown) => void;
  },
): undefined | { queue: CheckQueue; store: Store & { close(): void }; path: string } {
  return undefined;
}
