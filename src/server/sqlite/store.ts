/**
 * A Store (store/store.ts) in the data directory's SQLite file (database.ts): what the
 * gateway keeps without REDIS_URL (the Idempotency-Key records with each check's progress,
 * the told markers, the callbacks, the outbox of decisions). Each operation is one statement,
 * so a compare-and-set is atomic across every process on the file; each is on the disk before
 * it answers. A full disk or an I/O error rejects (store_full, store_unavailable): never
 * "absent". Expired entries are deleted as writes go, a bounded batch at a time.
 */
import { systemNow, type Now } from '../time/clock.js';
import { checkOptions } from '../options-table.js';
import type { ClosableStore } from '../store/store.js';
import { openDatabase, type Database } from './database.js';
import { SQLITE_STORE_OPTIONS } from './settings.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS store_entries (key TEXT PRIMARY KEY, value TEXT NOT NULL, until INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS store_entries_until ON store_entries (until);
`;

/** Writes between two sweeps of expired entries, and the entries one sweep deletes at most. */
const SWEEP_EVERY = 500;
const SWEEP_BATCH = 1000;

export interface SqliteStoreOptions {
  now?: Now;
}

/** The store in the database file at `path` (made when missing, 0600), shared by every process on it. */
export function createSqliteStore(path: string, options: SqliteStoreOptions = {}): ClosableStore {
  checkOptions(options, SQLITE_STORE_OPTIONS);
  const now = options.now ?? systemNow;
  const db: Database = openDatabase(path, SCHEMA);
  let writes = 0;
  const changed = (result: { changes: number | bigint }) => Number(result.changes) > 0;

  /** One write statement; every SWEEP_EVERY of them, a batch of expired entries goes too. */
  function write(what: string, sql: string, ...params: Array<string | number>): boolean {
    const done = db.statement(what, (c) => changed(c.prepare(sql).run(...params)));
    if (++writes % SWEEP_EVERY === 0) sweep();
    return done;
  }
  function sweep(): void {
    try {
      db.statement('sweep', (c) =>
        c
          .prepare('DELETE FROM store_entries WHERE key IN (SELECT key FROM store_entries WHERE until <= ? LIMIT ?)')
          .run(now(), SWEEP_BATCH),
      );
    } catch {
      // An expired entry reads as absent all the same; the next sweep deletes it.
    }
  }
  const run = <T>(work: () => T): Promise<T> => {
    try {
      return Promise.resolve(work());
    } catch (error) {
      return Promise.reject(error);
    }
  };
  sweep();

  return {
    get: (key) =>
      run(() => {
        const row = db.statement('read', (c) =>
          c.prepare('SELECT value FROM store_entries WHERE key = ? AND until > ?').get(key, now()),
        );
        return row ? String(row.value) : undefined;
      }),
    set: (key, value, ttlMs) =>
      run(() => {
        write(
          'write',
          'INSERT INTO store_entries (key, value, until) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, until = excluded.until',
          key,
          value,
          now() + ttlMs,
        );
      }),
    setIfAbsent: (key, value, ttlMs) =>
      run(() => {
        const at = now();
        return write(
          'claim',
          'INSERT INTO store_entries (key, value, until) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, until = excluded.until WHERE store_entries.until <= ?',
          key,
          value,
          at + ttlMs,
          at,
        );
      }),
    compareAndSet: (key, expected, value, ttlMs) =>
      run(() => {
        const at = now();
        return write(
          'compare and set',
          'UPDATE store_entries SET value = ?, until = ? WHERE key = ? AND value = ? AND until > ?',
          value,
          at + ttlMs,
          key,
          expected,
          at,
        );
      }),
    compareAndDelete: (key, expected) =>
      run(() =>
        write(
          'compare and delete',
          'DELETE FROM store_entries WHERE key = ? AND value = ? AND until > ?',
          key,
          expected,
          now(),
        ),
      ),
    delete: (key) =>
      run(() => {
        write('delete', 'DELETE FROM store_entries WHERE key = ?', key);
      }),
    close: () => db.close(),
  };
}
