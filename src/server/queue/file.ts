/**
 * The queue of one instance that outlives its process: the memory queue's order and turns,
 * with every accepted job written to a file (one JSON line, fsync'd) before `add` answers, and
 * a line when it leaves. A process killed mid-backlog (SIGKILL, a deploy, a crash) loses
 * nothing: the next process on the same path reads the file and checks what was left. Node
 * only (node:fs); one process per path.
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { createMemoryQueue, type CheckJob, type CheckQueue, type MemoryQueueOptions } from './queue.js';

export interface FileQueueOptions extends MemoryQueueOptions {
  /** The journal file: created when missing, read at start. One process per path. */
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
  const { path } = options;
  const inner = createMemoryQueue(options);
  const held = new Map<string, CheckJob>();
  for (const line of readJournal(path)) {
    if ('add' in line) held.set(line.add.key, line.add);
    else held.delete(line.done);
  }
  let lines = 0;
  let fd = compact();
  for (const job of held.values()) void inner.add(job);

  /** Rewrites the journal as the jobs held, in their order, through a new file renamed over it. */
  function compact(): number {
    const next = `${path}.${process.pid}.tmp`;
    const out = openSync(next, 'w');
    const text = [...held.values()].map((job) => JSON.stringify({ add: job } satisfies Line) + '\n').join('');
    writeSync(out, text);
    fsyncSync(out);
    closeSync(out);
    renameSync(next, path);
    lines = held.size;
    return openSync(path, 'a');
  }

  /** Appends one line and waits for the disk to have it. */
  function append(line: Line): void {
    writeSync(fd, JSON.stringify(line) + '\n');
    fsyncSync(fd);
    lines++;
    if (lines > 2 * held.size + 1000) {
      closeSync(fd);
      fd = compact();
    }
  }

  let closed = false;
  return {
    async add(job) {
      if (closed) return 'full';
      const added = await inner.add(job);
      if (added === 'added') {
        held.set(job.key, job);
        append({ add: job });
      }
      return added;
    },
    process(run) {
      inner.process(async (job) => {
        const result = await run(job);
        if (result.done && held.delete(job.key) && !closed) append({ done: job.key });
        return result;
      });
    },
    counts: () => inner.counts(),
    idle: () => inner.idle(),
    async close() {
      await inner.close();
      closed = true;
      closeSync(fd);
    },
  };
}

/** The journal's lines; none for a missing file; a line that does not parse (torn by a kill) is skipped. */
function readJournal(path: string): Line[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const lines: Line[] = [];
  for (const raw of text.split('\n')) {
    if (!raw) continue;
    try {
      lines.push(JSON.parse(raw) as Line);
    } catch {
      // A torn write at the end: its add was never answered, so nothing accepted is lost.
    }
  }
  return lines;
}
