/**
 * A Store (src/server/store/store.ts) of one process that outlives it: the memory store's
 * rules, every entry written to one JSON file (through a file renamed over it, fsync'd)
 * before a write answers. The gateway's outbox lives in it when there is no REDIS_URL, in
 * DATA_DIR beside the file queue: an undelivered decision survives a restart. Small by
 * design: decisions waiting for the shop, not a database. Node only; one process per path.
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import type { Store } from '../server/store/store.js';

type Entries = Map<string, { value: string; until: number }>;

export function createFileStore(path: string, now: () => number = Date.now): Store {
  const entries: Entries = load(path, now());
  const live = (key: string) => {
    const entry = entries.get(key);
    if (entry && entry.until <= now()) entries.delete(key);
    return entries.get(key);
  };
  /** Writes every live entry; synchronous, so that two writes never interleave. */
  const save = () => {
    const at = now();
    const rows: Array<[string, string, number]> = [];
    for (const [key, entry] of entries) if (entry.until > at) rows.push([key, entry.value, entry.until]);
    const next = `${path}.${process.pid}.tmp`;
    const fd = openSync(next, 'w');
    writeSync(fd, JSON.stringify(rows));
    fsyncSync(fd);
    closeSync(fd);
    renameSync(next, path);
  };
  const put = (key: string, value: string, ttlMs: number) => {
    entries.set(key, { value, until: now() + ttlMs });
    save();
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
      entries.delete(key);
      save();
      return Promise.resolve(true);
    },
    delete(key) {
      if (entries.delete(key)) save();
      return Promise.resolve();
    },
  };
}

/** The entries of the file, unexpired; none for a missing file. A file that does not parse is refused, never emptied. */
function load(path: string, at: number): Entries {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
    throw error;
  }
  const rows = JSON.parse(text) as Array<[string, string, number]>;
  return new Map(rows.filter(([, , until]) => until > at).map(([key, value, until]) => [key, { value, until }]));
}
