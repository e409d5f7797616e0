/**
 * One SQLite database file of a data directory (docs/server.md#the-data-directory), through
 * the runtime's `node:sqlite` (Node 22.13+, Deno 2, Bun 1.4): the file queue (queue/file.ts)
 * and the gateway's store (sqlite/store.ts) keep in it what they answered for. WAL with
 * `synchronous=FULL`: a statement that returned is on the disk. Several processes on one file
 * are safe by SQLite's own locking (`busy_timeout`), with no lock of ours. The file and its
 * -wal and -shm are 0600, the directory made 0700.
 *
 * A full disk (SQLITE_FULL) is `store_full` and an I/O or locking failure `store_unavailable`,
 * both with a Retry-After: the caller answers 503 and holds nothing in memory, and the next
 * call tries again, so the file works again by itself once there is room (no restart). A
 * damaged file (`PRAGMA quick_check`, or not a database) is `invalid_configuration` naming it.
 * The file first opened is the only one used: gone from its path while in use (a volume
 * unmounted), every call is `store_unavailable`, never a new empty file made in its place.
 */
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import {
  DeviceRiskError,
  ERR_INVALID_CONFIGURATION,
  ERR_SHUTTING_DOWN,
  ERR_STORE_FULL,
  ERR_STORE_UNAVAILABLE,
  isStoreAway,
} from '../errors.js';
import { dataMessages } from '../messages.js';

/** What the kit uses of a `node:sqlite` statement (the runtimes' own types differ a little). */
interface Statement {
  run(...params: SqlValue[]): { changes: number | bigint };
  get(...params: SqlValue[]): Record<string, unknown> | undefined;
  all(...params: SqlValue[]): Record<string, unknown>[];
}
type SqlValue = string | number | null;
export interface Connection {
  exec(sql: string): void;
  prepare(sql: string): Statement;
  close(): void;
}

/** How long a write waits for another process's transaction before it fails (store_unavailable), in ms. */
export const BUSY_TIMEOUT_MS = 5000;
/** Seconds a browser waits before it posts again when the data directory's disk is full. */
const DISK_FULL_RETRY_AFTER_S = 5;

/** SQLite's primary result codes the kit tells apart (sqlite.org/rescode.html). */
const SQLITE = {
  BUSY: 5,
  LOCKED: 6,
  NOMEM: 7,
  READONLY: 8,
  IOERR: 10,
  CORRUPT: 11,
  FULL: 13,
  CANTOPEN: 14,
  NOTADB: 26,
};
/** Deno's node:sqlite gives no errcode: its message is SQLite's own text for the code. */
const BY_TEXT: Array<[RegExp, number]> = [
  [/database or disk is full/i, SQLITE.FULL],
  [/disk I\/O error/i, SQLITE.IOERR],
  [/database (disk image is malformed|corrupt)/i, SQLITE.CORRUPT],
  [/file is not a database/i, SQLITE.NOTADB],
  [/database is locked|database table is locked/i, SQLITE.BUSY],
  [/unable to open database file/i, SQLITE.CANTOPEN],
  [/attempt to write a readonly database/i, SQLITE.READONLY],
];

/** The primary SQLite result code of an error, or undefined for any other error. */
export function sqliteCode(error: unknown): number | undefined {
  const { errcode, errno, code, message } = (error ?? {}) as {
    errcode?: unknown;
    errno?: unknown;
    code?: unknown;
    message?: unknown;
  };
  if (typeof errcode === 'number') return errcode & 0xff;
  if (code === 'ENOSPC') return SQLITE.FULL;
  if (code === 'EIO') return SQLITE.IOERR;
  if (typeof errno === 'number' && String(code).startsWith('SQLITE_')) return errno & 0xff;
  if (code !== 'ERR_SQLITE_ERROR' || typeof message !== 'string') return undefined;
  return BY_TEXT.find(([text]) => text.test(message))?.[1];
}

/** An error of the database at `path` in the kit's terms; other errors (a bug) as they are. */
export function databaseFailure(error: unknown, path: string, what: string): unknown {
  const code = sqliteCode(error);
  if (code === SQLITE.FULL)
    return new DeviceRiskError(ERR_STORE_FULL, dataMessages.diskFull(path, what), {
      retryAfter: DISK_FULL_RETRY_AFTER_S,
      operation: 'store',
      cause: error,
    });
  if (code === SQLITE.CORRUPT || code === SQLITE.NOTADB) return damaged(path, (error as Error).message, error);
  if (code === undefined) return error;
  return new DeviceRiskError(ERR_STORE_UNAVAILABLE, dataMessages.failed(path, what, (error as Error).message), {
    retryAfter: 1,
    operation: 'store',
    cause: error,
  });
}

/**
 * The data file's format (SQLite's user_version): its tables, and the records in them. A file
 * of a later format (a rollback after an upgrade that changed it) is refused at opening, never
 * read by rules it was not written by; one without (0, made by this or an earlier release of
 * this format) is marked with it.
 */
export const DATA_FORMAT = 1;

const damaged = (path: string, reason: string, cause?: unknown) =>
  new DeviceRiskError(ERR_INVALID_CONFIGURATION, dataMessages.damaged(path, reason), { cause });

/** `node:sqlite`, loaded without a static import: the file queue's CommonJS build and every runtime take it alike. */
function engine(): new (path: string) => Connection {
  const load = (globalThis as { process?: { getBuiltinModule?: (name: string) => unknown } }).process?.getBuiltinModule;
  let sqlite: { DatabaseSync?: new (path: string) => Connection } | undefined;
  try {
    sqlite = load?.('node:sqlite') as typeof sqlite;
  } catch (cause) {
    // Node 22 before 22.13 knows node:sqlite only behind --experimental-sqlite.
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, dataMessages.noSqlite, { cause });
  }
  if (!sqlite?.DatabaseSync) throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, dataMessages.noSqlite);
  return sqlite.DatabaseSync;
}

export interface Database {
  readonly path: string;
  /** Runs `work` in one transaction (BEGIN IMMEDIATE: the writer's lock at once), committed before it returns. */
  transaction<T>(what: string, work: (connection: Connection) => T): T;
  /** Runs one statement (its own transaction); `what` names it in an error. */
  statement<T>(what: string, work: (connection: Connection) => T): T;
  close(): void;
}

/**
 * The database at `path` with `schema` (CREATE … IF NOT EXISTS statements), its directory
 * made when missing. Opened and checked at once: a damaged file, or a directory that cannot
 * hold it, throws `invalid_configuration`; a full disk or an I/O error only defers the opening
 * to the next call, which answers 503 until it succeeds.
 */
export function openDatabase(path: string, schema: string): Database {
  const Engine = engine();
  let open: Connection | undefined;
  let checked = false;
  let closed = false;
  /** The file first opened: every later call is on it, or on nothing. */
  let opened: FileIdentity | undefined;
  // Looked up from where it was first opened, whatever the working directory is later.
  const where = resolve(path);
  const gone = () =>
    new DeviceRiskError(ERR_STORE_UNAVAILABLE, dataMessages.gone(path), { retryAfter: 1, operation: 'store' });
  const statements = new Map<string, Statement>();

  function connect(): Connection {
    // Closed by its owner: a call still under way (a request past its handler's close) is refused, never a connection opened again and left.
    if (closed) throw new DeviceRiskError(ERR_SHUTTING_DOWN, dataMessages.closed(path), { retryAfter: 1 });
    // A file unlinked under an open connection takes writes (WAL) that no one reads again, and
    // one made anew would answer empty: either would be untrue, so the call is refused.
    if (opened && !isSameFile(where, opened)) {
      drop();
      throw gone();
    }
    if (open) return open;
    if (!opened) createPrivately(path);
    const connection = new Engine(path);
    try {
      // Before anything that locks: a writer of another process is waited for, not failed.
      connection.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
      if (!checked) {
        // The first three faults name the damage well enough; the rest would only lengthen the line.
        const rows = connection.prepare('PRAGMA quick_check(3)').all();
        const verdict = rows.map((row) => String(Object.values(row)[0]).replace(/\s+/g, ' ')).join('; ');
        if (verdict !== 'ok') throw damaged(path, verdict);
      }
      const format = Number(Object.values(connection.prepare('PRAGMA user_version').get()!)[0]);
      if (format > DATA_FORMAT)
        throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, dataMessages.laterFormat(path, format, DATA_FORMAT));
      connection.exec('PRAGMA journal_mode = WAL');
      connection.exec('PRAGMA synchronous = FULL');
      // Its temporary tables and sorts in memory: the deploy recipes' root is read-only, /tmp too.
      connection.exec('PRAGMA temp_store = MEMORY');
      connection.exec(schema);
      if (format < DATA_FORMAT) connection.exec(`PRAGMA user_version = ${DATA_FORMAT}`);
    } catch (error) {
      connection.close();
      throw error;
    }
    checked = true;
    const identity = opened ?? identityOf(where);
    if (!identity) {
      connection.close();
      throw gone();
    }
    opened = identity;
    open = connection;
    return connection;
  }

  /** Lets the connection go (statements with it): the next call opens another, if it may. */
  function drop(): void {
    statements.clear();
    try {
      open?.close();
    } catch {
      // A connection that cannot close is dropped all the same.
    }
    open = undefined;
  }

  /**
   * A failure in the kit's terms; after an I/O error the connection is opened again next time.
   * A full disk keeps it: the transaction was rolled back, and the next write finds room or not.
   */
  function failure(error: unknown, what: string): unknown {
    const failed = databaseFailure(error, path, what);
    if (sqliteCode(error) === SQLITE.IOERR) drop();
    return failed;
  }

  const prepared = (connection: Connection): Connection => ({
    exec: (sql) => connection.exec(sql),
    prepare(sql) {
      let statement = statements.get(sql);
      if (!statement) statements.set(sql, (statement = connection.prepare(sql)));
      return statement;
    },
    close: () => connection.close(),
  });

  const database: Database = {
    path,
    statement(what, work) {
      try {
        return work(prepared(connect()));
      } catch (error) {
        throw failure(error, what);
      }
    },
    transaction(what, work) {
      try {
        const connection = prepared(connect());
        connection.exec('BEGIN IMMEDIATE');
        try {
          const result = work(connection);
          connection.exec('COMMIT');
          return result;
        } catch (error) {
          try {
            connection.exec('ROLLBACK');
          } catch {
            // Already rolled back by SQLite (a full disk ends the transaction).
          }
          throw error;
        }
      } catch (error) {
        throw failure(error, what);
      }
    },
    close() {
      closed = true;
      statements.clear();
      open?.close();
      open = undefined;
    },
  };
  try {
    connect();
  } catch (error) {
    const failed = failure(error, 'open');
    // Room or the disk may come back: the next call opens it. Anything else is the configuration's.
    if (!isStoreAway(failed)) throw failed;
  }
  return database;
}

/** Which file a path names: the same device and inode is the same file. */
interface FileIdentity {
  dev: number;
  ino: number;
}
function identityOf(path: string): FileIdentity | undefined {
  try {
    const { dev, ino } = statSync(path);
    return { dev, ino };
  } catch {
    // Gone, or not to be known now (an I/O error): not the file first opened, until it is again.
    return undefined;
  }
}
const isSameFile = (path: string, first: FileIdentity): boolean => {
  const now = identityOf(path);
  return now?.dev === first.dev && now.ino === first.ino;
};

/**
 * Makes the directory (0700) and the file (0600) before SQLite does: SQLite gives its -wal and
 * -shm the file's own mode, so that none of them is readable by another local user.
 */
function createPrivately(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  closeSync(openSync(path, 'a', 0o600));
  chmodSync(path, 0o600);
}
