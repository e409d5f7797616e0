/**
 * The default queue's file on a runtime with a file system (Node, Bun, Deno): a file queue
 * (file.ts) in the data directory's SQLite file, the directory made (0700) when missing, with
 * the checkouts an earlier version's journal held (sqlite/legacy.ts). Loaded by default.ts
 * with a dynamic import, so that the web-standard entry never imports node:fs; the edge build
 * (Workers, edge runtimes) takes data-dir.edge.ts instead.
 */
import { join, resolve } from 'node:path';
import { DeviceRiskError, ERR_INVALID_CONFIGURATION, isDeviceRiskError } from '../errors.js';
import { endpointMessages } from '../messages.js';
import { importLegacyQueue } from '../sqlite/legacy.js';
import { createFileQueue } from './file.js';
import { createSqliteStore } from '../sqlite/store.js';
import type { ClosableStore } from '../store/store.js';
import type { CheckQueue, MemoryQueueOptions } from './queue.js';
import { DATA_FILE, DEFAULT_DATA_DIR } from './default.js';

/**
 * The file queue in `dataDir` (the handler's, else BLACKBOX_CAPTURE_DATA_DIR's, read by
 * default.ts), else .blackbox-capture in the working directory, the store of its keys in the
 * same file, and where it keeps them; `invalid_configuration` naming dataDir when the directory cannot be made or
 * written or the env could not be read (`envRefused`), or naming the file when it is damaged.
 */
export async function openDataDirQueue(
  options: MemoryQueueOptions & {
    dataDir?: string | undefined;
    envRefused?: unknown;
    onError?: (error: unknown) => void;
  },
): Promise<{ queue: CheckQueue; store: ClosableStore; path: string }> {
  const { dataDir, envRefused, ...queueOptions } = options;
  let dir = dataDir ?? DEFAULT_DATA_DIR;
  if (envRefused !== undefined) throw unusable(dir, envRefused);
  try {
    // Deno without --allow-read refuses the working directory: told as the directory's fault too.
    dir = resolve(dir);
    const path = join(dir, DATA_FILE);
    const queue = createFileQueue({ ...queueOptions, path });
    // The keys' records (each check's progress, its lease) in the same file: a job another
    // process on the directory takes, or the next after a restart, resumes its check, never
    // makes a second transaction (docs/server.md#the-data-directory).
    const store = createSqliteStore(path, { now: queueOptions.now });
    // An earlier version's journal: its checkouts are checked too; a failure leaves it for the next start.
    await importLegacyQueue(dir, queue).catch((error: unknown) => options.onError?.(error));
    return { queue, store, path };
  } catch (error) {
    throw isDeviceRiskError(error) ? error : unusable(dir, error);
  }
}

/** `dir` refused by the runtime: its error's code (ENOTDIR, EACCES, EROFS; NotCapable in Deno). */
function unusable(dir: string, error: unknown): DeviceRiskError {
  const { code, name } = error as NodeJS.ErrnoException;
  return new DeviceRiskError(ERR_INVALID_CONFIGURATION, endpointMessages.dataDirUnusable(dir, code ?? name), {
    cause: error,
  });
}
