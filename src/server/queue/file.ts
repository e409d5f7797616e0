/**
 * The queue of one instance that outlives its process: the memory queue's order and turns,
 * with every accepted job written to a file (one JSON line, fsync'd) before `add` answers, and
 * a line when it leaves. A process killed mid-backlog (SIGKILL, a deploy, a crash) loses
 * nothing: the next process on the same path reads the file and checks what was left. Node,
 * Bun and Deno (node:fs; runtimes/checks.mjs); one queue per path (path-lock.ts). A handler
 * given no queue keeps one in its data directory (default.ts).
 */
import { openJournal, readJournal } from '../journal.js';
import { lockPath } from './path-lock.js';
import { checkOptions } from '../options-table.js';
import { createMemoryQueue, type CheckJob, type CheckQueue, type MemoryQueueOptions } from './queue.js';
import { FILE_QUEUE_OPTIONS } from './settings.js';

export interface FileQueueOptions extends MemoryQueueOptions {
  /**
   * The journal file: created when missing, read at start. One queue per path: a second (in
   * this process or another) is refused with `invalid_configuration` until the first closes.
   */
  path: string;
}

/** One line of the journal: a job accepted, or the key of one that left. */
type Line = { add: CheckJob } | { done: string };

/**
 * A queue in this process's memory, journaled to `path`: what `add` answered `added` for is
 * on disk first; a job run to its end (checked, or given up and told) is marked done. At start
 * the journal is read (a torn last line, from a kill mid-write, is skipped), compacted to the
 * jobs still held, and those are queued again in their order. The file holds at most about
 * twice the jobs held plus 1000 lines: it is compacted again past that.
 *
 * A job whose check ended in the instant between the service's answer and its done line is
 * run again after a kill: with the default memory store (its records lost with the process)
 * that is a second transaction for it. Everything accepted is checked at least once.
 */
export function createFileQueue(options: FileQueueOptions): CheckQueue & { idle(): Promise<void> } {
  checkOptions(options, FILE_QUEUE_OPTIONS);
  const { path } = options;
  const inner = createMemoryQueue(options);
  const held = new Map<string, CheckJob>();
  const unlock = lockPath(path);
  let journal: ReturnType<typeof openJournal<Line>>;
  try {
    for (const line of readJournal<Line>(path)) {
      if ('add' in line) held.set(line.add.key, line.add);
      else held.delete(line.done);
    }
    journal = openJournal<Line>(path, {
      live: () => [...held.values()].map((job) => ({ add: job })),
      size: () => held.size,
    });
  } catch (error) {
    unlock();
    throw error;
  }
  for (const job of held.values()) void inner.add(job);

  let closed = false;
  return {
    async add(job) {
      if (closed) return 'full';
      const added = await inner.add(job);
      if (added === 'added') {
        held.set(job.key, job);
        journal.append({ add: job });
      }
      return added;
    },
    process(run) {
      inner.process(async (job) => {
        const result = await run(job);
        if (result.done && held.delete(job.key) && !closed) journal.append({ done: job.key });
        return result;
      });
    },
    counts: () => inner.counts(),
    idle: () => inner.idle(),
    async close() {
      await inner.close();
      if (closed) return;
      closed = true;
      journal.close();
      unlock();
    },
  };
}
