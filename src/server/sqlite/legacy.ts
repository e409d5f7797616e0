/**
 * What an earlier version left in a data directory: the default queue's journal
 * (`queue.jsonl`, lines `{"add": job}` and `{"done": key}`) and the gateway's `store.jsonl`
 * (lines `[key, value, until]`). Read once at start into the SQLite file, then renamed
 * `<file>.imported`, so that an upgrade checks every checkout the last version accepted
 * (docs/server.md#the-data-directory). A line that does not parse is skipped, as that version
 * did: a write torn by a kill, never answered.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DeviceRiskError, ERR_QUEUE_FULL } from '../errors.js';
import { dataMessages } from '../messages.js';
import type { CheckJob, CheckQueue } from '../queue/queue.js';
import type { Store } from '../store/store.js';

/** The journal of the default queue before the SQLite file. */
const LEGACY_QUEUE_FILE = 'queue.jsonl';
/** The gateway's store before the SQLite file. */
const LEGACY_STORE_FILE = 'store.jsonl';

/** The JSON lines of `path` that parse; undefined when there is no such file. */
function linesOf(path: string): unknown[] | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return text.split('\n').flatMap((line) => {
    try {
      return [JSON.parse(line) as unknown];
    } catch {
      return [];
    }
  });
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/**
 * Adds the jobs `dir`'s journal still held to `queue`, then renames the journal. True when it
 * was read; false when there is none. A journal whose jobs the queue cannot all take (full)
 * is rewritten with the rest alone, for the next start (whenever it comes: those taken may be
 * checked and forgotten by then), and rejects `queue_full` naming it: never a checkout left
 * behind unsaid, nor one added twice.
 */
export async function importLegacyQueue(dir: string, queue: CheckQueue): Promise<boolean> {
  const path = join(dir, LEGACY_QUEUE_FILE);
  const lines = linesOf(path);
  if (!lines) return false;
  const held = new Map<string, CheckJob>();
  for (const line of lines) {
    if (!isObject(line)) continue;
    const add = line.add as CheckJob | undefined;
    if (isObject(add) && typeof add.key === 'string') held.set(add.key, add);
    else if (typeof line.done === 'string') held.delete(line.done);
  }
  const jobs = [...held.values()];
  for (const [taken, job] of jobs.entries()) {
    if ((await queue.add(job)) !== 'full') continue;
    keepOnly(path, jobs.slice(taken));
    throw new DeviceRiskError(ERR_QUEUE_FULL, dataMessages.legacyKept(path, taken, jobs.length), {
      operation: 'queue',
    });
  }
  importedAs(path);
  return true;
}

/** Rewrites the journal at `path` with `jobs` alone, whole or not at all (a new file renamed over it). */
function keepOnly(path: string, jobs: CheckJob[]): void {
  // A name of this process's own: two processes starting on the directory never write one file.
  const next = `${path}.${process.pid}.next`;
  writeFileSync(next, jobs.map((job) => JSON.stringify({ add: job }) + '\n').join(''), { mode: 0o600 });
  renameSync(next, path);
}

/** Writes the entries of `dir`'s store.jsonl still live at `now` into `store`, then renames it. */
export async function importLegacyStore(dir: string, store: Store, now: number): Promise<boolean> {
  const path = join(dir, LEGACY_STORE_FILE);
  const lines = linesOf(path);
  if (!lines) return false;
  const entries = new Map<string, { value: string; until: number }>();
  for (const line of lines) {
    if (!Array.isArray(line) || typeof line[0] !== 'string') continue;
    const [key, value, until] = line as [string, unknown, unknown];
    if (typeof value === 'string' && typeof until === 'number') entries.set(key, { value, until });
    else entries.delete(key);
  }
  // Never over a value already there: another process on the directory, starting at the same
  // time, may have imported it and changed it since (an outbox record marked delivered).
  for (const [key, { value, until }] of entries) if (until > now) await store.setIfAbsent(key, value, until - now);
  importedAs(path);
  return true;
}

/** Renames an imported journal; one another process on the directory renamed first is imported all the same. */
function importedAs(path: string): void {
  try {
    renameSync(path, `${path}.imported`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}
