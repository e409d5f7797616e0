/**
 * The queue of a handler given none (docs/fleet.md#a-single-instance): on a runtime with a file system,
 * a file queue in the data directory's SQLite file, so that what was answered "accepted"
 * outlives the process (a restart or a deploy on the same directory checks it), with the
 * store of its keys in the same file (each check's progress, so that it resumes anywhere); in the edge
 * build, this process's memory. Either is said once at start. The file queue is loaded with a
 * dynamic import (data-dir.ts, node:fs and node:sqlite), so the web-standard entry imports
 * nothing from Node. A directory that cannot be used, or a damaged file, is told to onError at
 * start and refuses every checkout (`failure`), never falling back to memory unsaid.
 */
import type { Now } from '../time/clock.js';
import { MESSAGE_PREFIX, endpointMessages } from '../messages.js';
import type { ClosableStore, Store } from '../store/store.js';
import { createMemoryQueue, type CheckJob, type CheckQueue } from './queue.js';

/** The env that names the data directory when the handler's `dataDir` does not. */
const DATA_DIR_ENV = 'BLACKBOX_CAPTURE_DATA_DIR';
/** The data directory when neither names one: in the working directory. */
export const DEFAULT_DATA_DIR = '.blackbox-capture';
/** The data directory's one database file (SQLite): the default queue's, and the gateway's store. */
export const DATA_FILE = 'blackbox-capture.sqlite';

export interface DefaultQueueOptions {
  dataDir: string | undefined;
  maxQueued: number;
  now: Now;
  onError: (error: unknown) => void;
}

/** A queue that is ready once its file is open; `failure()` names why it never will be. */
export interface DefaultQueue extends CheckQueue {
  /** Once loaded: undefined, or the `invalid_configuration` that keeps it from holding anything. */
  failure(): Promise<unknown>;
  /** Once loaded: the store of the keys in the queue's file; undefined when it holds its checkouts in memory, or none. */
  keys(): Promise<Store | undefined>;
}

/**
 * The env's data directory, read when the handler is made (not once the file queue is loaded,
 * when the shop may have set it for another handler); a runtime that refuses the read (Deno
 * without --allow-env) gives the refusal, told as the directory's.
 */
function fromEnv(): { dir?: string; refused?: unknown } {
  try {
    const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
    return { dir: env?.[DATA_DIR_ENV] || undefined };
  } catch (refused) {
    return { refused };
  }
}

export function createDefaultQueue(options: DefaultQueueOptions): DefaultQueue {
  const { dataDir, maxQueued, now, onError } = options;
  let loaded: CheckQueue | undefined;
  let keys: ClosableStore | undefined;
  let failed: unknown;
  const env = dataDir === undefined ? fromEnv() : {};
  const ready = import('./data-dir.js')
    .then((module) =>
      module.openDataDirQueue({ dataDir: dataDir ?? env.dir, envRefused: env.refused, maxQueued, now, onError }),
    )
    .then(
      (opened) => {
        if (opened) console.info(MESSAGE_PREFIX + endpointMessages.fileQueue(opened.path));
        else console.warn(MESSAGE_PREFIX + endpointMessages.memoryQueue);
        loaded = opened?.queue ?? createMemoryQueue({ maxQueued, now });
        keys = opened?.store;
        return loaded;
      },
      (error: unknown) => {
        failed = error;
        onError(error);
        return undefined;
      },
    );
  return {
    failure: () => ready.then(() => failed),
    keys: () => ready.then(() => keys),
    async add(job: CheckJob, lateAt?: number) {
      const inner = await ready;
      if (!inner) throw failed;
      return inner.add(job, lateAt);
    },
    process(run) {
      void ready.then((inner) => inner?.process(run));
    },
    counts: async () => (await ready)?.counts() ?? { queued: 0, oldestAcceptedAt: undefined },
    async close() {
      await (await ready)?.close();
      keys?.close();
    },
    leftBehind: () => loaded?.leftBehind?.() ?? [],
  };
}
