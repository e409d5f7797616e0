/**
 * A Store (src/server/store/store.ts) of one process that outlives it: the memory store's
 * rules, each write appended to a journal (one JSON line, fsync'd) before it answers, and
 * the journal compacted to the live entries when it has grown past twice them plus 1000 lines
 * (as the file queue does: src/server/queue/file.ts). The gateway without REDIS_URL keeps
 * everything in it, in DATA_DIR: the Idempotency-Key records with the progress of each check,
 * the told markers, the callbacks and the outbox; a restart resumes a check on its transaction
 * and tells no decision twice. Node only; one process per path.
 */
import { openJournal, readJournal } from '../server/journal.js';
import type { Store } from '../server/store/store.js';

/** A journal line: an entry written (key, value, epoch ms until which it lives), or deleted (key alone). */
type Line = [key: string, value?: string, until?: number];
type Entries = Map<string, { value: string; until: number }>;

export interface FileStoreOptions {
  now?: () => number;
  /** Lines past twice the live entries before the journal is compacted. Default 1000. */
  slack?: number;
}

export function createFileStore(path: string, options: FileStoreOptions = {}): Store & { close(): void } {
  const now = options.now ?? Date.now;
  const slack = options.slack ?? 1000;
  const entries: Entries = load(path, now());
  // A compaction keeps the entries still live and forgets the rest.
  const journal = openJournal<Line>(path, {
    live() {
      const at = now();
      const kept: Line[] = [];
      for (const [key, entry] of entries)
        if (entry.until > at) kept.push([key, entry.value, entry.until]);
        else entries.delete(key);
      return kept;
    },
    size: () => entries.size,
    slack,
  });
  const append = (line: Line) => journal.append(line);
  const live = (key: string) => {
    const entry = entries.get(key);
    if (entry && entry.until <= now()) entries.delete(key);
    return entries.get(key);
  };
  const put = (key: string, value: string, ttlMs: number) => {
    const until = now() + ttlMs;
    entries.set(key, { value, until });
    append([key, value, until]);
  };
  const remove = (key: string) => {
    entries.delete(key);
    append([key]);
  };
  return {
    get: (key) => Promise.resolve(live(key)?.value),
    set: (key, value, ttlMs) => Promise.resolve(put(key, value, ttlMs)),
    setIfAbsent(key, value, ttlMs) {
      if (live(key)) return Promise.resolve(false);
      put(key, value, ttlMs);
      return Promise.resolve(true);
    },
    compareAndSet(key, expected, value, ttlMs) {
      if (live(key)?.value !== expected) return Promise.resolve(false);
      put(key, value, ttlMs);
      return Promise.resolve(true);
    },
    compareAndDelete(key, expected) {
      if (live(key)?.value !== expected) return Promise.resolve(false);
      remove(key);
      return Promise.resolve(true);
    },
    delete(key) {
      if (live(key)) remove(key);
      return Promise.resolve();
    },
    close: () => journal.close(),
  };
}

/** The live entries of the journal at `at`; none for a missing file; torn lines skipped (readJournal). */
function load(path: string, at: number): Entries {
  const entries: Entries = new Map();
  for (const [key, value, until] of readJournal<Line>(path)) {
    if (value !== undefined && until! > at) entries.set(key, { value, until: until! });
    else entries.delete(key);
  }
  return entries;
}
