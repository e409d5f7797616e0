/**
 * An append-only journal of JSON lines, one process per path (Node only: node:fs): each line is
 * written and fsync'd before `append` returns, and the file is rewritten as the live lines
 * (through a new file renamed over it) whenever it holds more than twice them plus `slack`.
 * The file queue (queue/file.ts) and the gateway's file store (src/gateway/file-store.ts)
 * keep what they answered for in one, so that a process killed mid-write loses nothing it
 * answered for.
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';

export interface Journal<Line> {
  /** Writes `line` and waits for the disk to have it; compacts past the bound. */
  append(line: Line): void;
  close(): void;
}

export interface JournalOptions<Line> {
  /** The lines that rebuild what is live now, for a compaction (the first one at open). */
  live(): Line[];
  /** How many lines are live now, without building them. */
  size(): number;
  /** Lines past twice the live ones before a compaction. Default 1000. */
  slack?: number;
}

/** The journal's lines; none for a missing file. A line that does not parse is skipped: a write torn by a kill, never answered. */
export function readJournal<Line>(path: string): Line[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const lines: Line[] = [];
  for (const raw of text.split('\n')) {
    try {
      lines.push(JSON.parse(raw) as Line);
    } catch {
      // An empty line, or a torn write at the end: what it wrote was never answered.
    }
  }
  return lines;
}

/** Opens the journal at `path`, compacted at once to `live()`. */
export function openJournal<Line>(path: string, options: JournalOptions<Line>): Journal<Line> {
  const slack = options.slack ?? 1000;
  let lines = 0;
  let fd = compact();

  function compact(): number {
    const current = options.live();
    const next = `${path}.${process.pid}.tmp`;
    const out = openSync(next, 'w');
    writeSync(out, current.map((line) => JSON.stringify(line) + '\n').join(''));
    fsyncSync(out);
    closeSync(out);
    renameSync(next, path);
    lines = current.length;
    return openSync(path, 'a');
  }

  return {
    append(line) {
      writeSync(fd, JSON.stringify(line) + '\n');
      fsyncSync(fd);
      if (++lines > 2 * options.size() + slack) {
        closeSync(fd);
        fd = compact();
      }
    },
    close: () => closeSync(fd),
  };
}
