// A data directory's SQLite file read as another process would, through node:sqlite itself
// (not the kit's code under test), and node:sqlite as the kit loads it with faults put in
// (a full disk, an I/O error, a damaged file) that a test cannot make a real disk show at will.
// @types/node of the toolchain has no node:sqlite: typed here.
import { createRequire } from 'node:module';

interface Statement {
  run(...params: unknown[]): { changes: number | bigint };
  get(...params: unknown[]): Record<string, unknown> | undefined;
  all(...params: unknown[]): Record<string, unknown>[];
}
interface Reader {
  exec(sql: string): void;
  prepare(sql: string): Statement;
  close(): void;
}
const { DatabaseSync } = createRequire(import.meta.url)('node:sqlite') as {
  DatabaseSync: new (path: string, options?: { timeout?: number }) => Reader;
};

/** The rows `sql` selects in the file at `path`, read by a connection of its own. */
export function rowsOf(path: string, sql: string, ...params: unknown[]): Record<string, unknown>[] {
  const reader = new DatabaseSync(path);
  try {
    return reader.prepare(sql).all(...params);
  } finally {
    reader.close();
  }
}

/** Runs `sql` once per set of `params` on the file at `path`, in one transaction, as another process on it would. */
export function writeRows(path: string, sql: string, ...paramSets: unknown[][]): void {
  const writer = new DatabaseSync(path, { timeout: 5000 });
  try {
    writer.prepare('BEGIN IMMEDIATE').run();
    const statement = writer.prepare(sql);
    for (const params of paramSets.length > 0 ? paramSets : [[]]) statement.run(...params);
    writer.prepare('COMMIT').run();
  } finally {
    writer.close();
  }
}

/** A node:sqlite error as Node and Bun throw it: SQLite's result code in `errcode`. */
export const sqliteError = (errcode: number, errstr: string) =>
  Object.assign(new Error(errstr), { code: 'ERR_SQLITE_ERROR', errcode, errstr });

/**
 * node:sqlite's connections with faults: each a real connection on the file, whose next
 * statement throws `fail` (once, after `skip` statements), whose opening throws `failOpen` (once), whose close throws
 * with `failClose`, and whose quick_check answers `quickCheck` when set. Counts what the kit did.
 */
export function faultyEngine() {
  const state = {
    fail: undefined as Error | undefined,
    /** Statements let through before `fail` is thrown. */
    skip: 0,
    failOpen: undefined as Error | undefined,
    failClose: false,
    quickCheck: undefined as Record<string, unknown>[] | undefined,
    /** Called with each statement executed, after it ran. */
    onExec: undefined as ((sql: string) => void) | undefined,
    opened: 0,
    closed: 0,
    prepared: [] as string[],
    executed: [] as string[],
  };
  const once = (key: 'fail' | 'failOpen') => {
    const error = state[key];
    if (error === undefined) return;
    if (key === 'fail' && state.skip > 0) {
      state.skip--;
      return;
    }
    state[key] = undefined;
    throw error;
  };
  function connect(path: string): Reader {
    once('failOpen');
    state.opened++;
    const real = new DatabaseSync(path);
    return {
      exec(sql) {
        state.executed.push(sql);
        real.exec(sql);
        state.onExec?.(sql);
      },
      prepare(sql) {
        state.prepared.push(sql);
        if (state.quickCheck && sql.startsWith('PRAGMA quick_check')) {
          const rows = state.quickCheck;
          return { run: () => ({ changes: 0 }), get: () => rows[0], all: () => rows };
        }
        const statement = real.prepare(sql);
        const faulty =
          <R>(call: (...params: unknown[]) => R) =>
          (...params: unknown[]): R => {
            once('fail');
            return call(...params);
          };
        return {
          run: faulty((...params) => statement.run(...params)),
          get: faulty((...params) => statement.get(...params)),
          all: faulty((...params) => statement.all(...params)),
        };
      },
      close() {
        state.closed++;
        real.close();
        if (state.failClose) throw sqliteError(10, 'disk I/O error');
      },
    };
  }
  /** Runs `open` (the kit opening its file) with this engine as node:sqlite; what it returns keeps it. */
  function opening<T>(open: () => T): T {
    const original = process.getBuiltinModule;
    const load = (name: string) =>
      name === 'node:sqlite'
        ? {
            DatabaseSync: function (path: string) {
              return connect(path);
            },
          }
        : original(name);
    Object.defineProperty(process, 'getBuiltinModule', { value: load, configurable: true, writable: true });
    try {
      return open();
    } finally {
      Object.defineProperty(process, 'getBuiltinModule', { value: original, configurable: true, writable: true });
    }
  }
  return { state, opening };
}

/** Runs `sql` (a schema change, a fault put in with a trigger) in the file at `path`, by a connection of its own. */
export function execIn(path: string, sql: string): void {
  const writer = new DatabaseSync(path, { timeout: 5000 });
  try {
    writer.exec(sql);
  } finally {
    writer.close();
  }
}
