/**
 * The default queue's file on a runtime with a file system (Node, Bun, Deno): a file queue
 * (file.ts) in the handler's data directory, which is made when missing. Loaded by default.ts
 * with a dynamic import, so that the web-standard entry never imports node:fs; the edge build
 * (Workers, edge runtimes) takes data-dir.edge.ts instead.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DeviceRiskError, ERR_INVALID_CONFIGURATION, isDeviceRiskError } from '../errors.js';
import { endpointMessages } from '../messages.js';
import { createFileQueue } from './file.js';
import type { CheckQueue, MemoryQueueOptions } from './queue.js';
import { DATA_DIR_ENV, DEFAULT_DATA_DIR, QUEUE_FILE } from './default.js';

/**
 * The file queue in `dataDir`, else the env BLACKBOX_CAPTURE_DATA_DIR, else .blackbox-capture
 * in the working directory, with where it keeps its checkouts; `invalid_configuration` naming
 * dataDir when the directory cannot be made or written, or another queue holds it.
 */
export function openDataDirQueue(options: MemoryQueueOptions & { dataDir?: string | undefined }): {
  queue: CheckQueue;
  path: string;
} {
  const { dataDir: given, ...queueOptions } = options;
  let dir = given ?? DEFAULT_DATA_DIR;
  try {
    // Deno without --allow-env or --allow-read refuses these: told as the directory's fault too.
    dir = resolve(given ?? (process.env[DATA_DIR_ENV] || DEFAULT_DATA_DIR));
    const path = join(dir, QUEUE_FILE);
    mkdirSync(dir, { recursive: true });
    return { queue: createFileQueue({ ...queueOptions, path }), path };
  } catch (error) {
    if (isDeviceRiskError(error)) throw error;
    const { code, name } = error as NodeJS.ErrnoException;
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, endpointMessages.dataDirUnusable(dir, code ?? name), {
      cause: error,
    });
  }
}
