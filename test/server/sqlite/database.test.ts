// The data directory's database (src/server/sqlite/database.ts): SQLite's failures in the
// kit's terms, from each runtime's error shape (Node and Bun give a code, Deno only SQLite's
// text), and the check at start that names a damaged file.
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BUSY_TIMEOUT_MS,
  DATA_FORMAT,
  databaseFailure,
  openDatabase,
  sqliteCode,
} from '../../../src/server/sqlite/database.js';
import { createSqliteStore } from '../../../src/server/sqlite/store.js';
import { faultyEngine, rowsOf, sqliteError as nodeError, writeRows } from '../../support/sqlite.js';

const denoError = (message: string) => Object.assign(new Error(message), { code: 'ERR_SQLITE_ERROR' });
const pathIn = (name = 'data.sqlite') => join(mkdtempSync(join(tmpdir(), 'bbc-database-')), name);
const SCHEMA = 'CREATE TABLE IF NOT EXISTS t (x)';
const count = (database: ReturnType<typeof openDatabase>) =>
  database.statement('count', (c) => c.prepare('SELECT count(*) AS n FROM t').get()!.n);

describe('the failures of the data directory', () => {
  it.each([
    ['Node and Bun: SQLITE_FULL', nodeError(13, 'database or disk is full'), 'store_full', 5],
    ['an extended I/O error (SQLITE_IOERR_WRITE)', nodeError(10 | (3 << 8), 'disk I/O error'), 'store_unavailable', 1],
    ['another process kept the lock past busy_timeout', nodeError(5, 'database is locked'), 'store_unavailable', 1],
    [
      'Deno: the text of SQLITE_FULL',
      Object.assign(new Error('database or disk is full'), { code: 'ERR_SQLITE_ERROR' }),
      'store_full',
      5,
    ],
    [
      'Deno: the text of SQLITE_IOERR',
      Object.assign(new Error('disk I/O error'), { code: 'ERR_SQLITE_ERROR' }),
      'store_unavailable',
      1,
    ],
    ['the file system: ENOSPC', Object.assign(new Error('no space'), { code: 'ENOSPC' }), 'store_full', 5],
    ['a damaged page', nodeError(11, 'database disk image is malformed'), 'invalid_configuration', undefined],
    ['a file that is not a database', nodeError(26, 'file is not a database'), 'invalid_configuration', undefined],
    [
      'Bun: SQLITE_FULL in errno, its name in code',
      Object.assign(new Error('full'), { errno: 13 | 256, code: 'SQLITE_FULL' }),
      'store_full',
      5,
    ],
    ['the file system: EIO', Object.assign(new Error('i/o'), { code: 'EIO' }), 'store_unavailable', 1],
    ['Deno: a damaged page', denoError('database disk image is malformed'), 'invalid_configuration', undefined],
    ['Deno: not a database', denoError('file is not a database'), 'invalid_configuration', undefined],
    ['Deno: locked', denoError('database table is locked'), 'store_unavailable', 1],
    ['Deno: cannot open', denoError('unable to open database file'), 'store_unavailable', 1],
    ['Deno: read-only', denoError('attempt to write a readonly database'), 'store_unavailable', 1],
  ])('%s', (_, error, code, retryAfter) => {
    const failure = databaseFailure(error, '/data/blackbox-capture.sqlite', 'the queue took a checkout');
    expect(failure).toMatchObject({ code, message: expect.stringContaining('/data/blackbox-capture.sqlite') });
    expect((failure as { retryAfter?: number }).retryAfter).toBe(retryAfter);
    // The failure of the store, for the caller's log and metrics; the cause kept for the operator.
    expect((failure as { operation?: string }).operation).toBe(retryAfter === undefined ? undefined : 'store');
    expect((failure as Error).cause).toBe(error);
  });

  it.each([
    ['an errno without an SQLite code name', Object.assign(new Error('x'), { errno: 13, code: 'EACCES' })],
    ['an SQLite text under another code', Object.assign(new Error('database or disk is full'), { code: 'ERR_OTHER' })],
    ['an SQLite error without a message', Object.assign({ code: 'ERR_SQLITE_ERROR', message: 13 })],
    ['an SQLite error whose message is not text', { code: 'ERR_SQLITE_ERROR', message: ['database or disk is full'] }],
    ['an SQLite code name without an errno', { errno: 'x', code: 'SQLITE_FULL' }],
    ['an SQLite text no rule knows', denoError('no such table: t')],
    ['nothing at all', undefined],
  ])('%s has no SQLite code', (_, error) => {
    expect(sqliteCode(error)).toBeUndefined();
  });

  it('any other error (a bug) is let through as it is', () => {
    const bug = new TypeError('x is not a function');
    expect(sqliteCode(bug)).toBeUndefined();
    expect(databaseFailure(bug, '/data/x.sqlite', 'read')).toBe(bug);
    expect(databaseFailure(nodeError(1, 'no such table: nope'), '/data/x.sqlite', 'read')).toMatchObject({
      code: 'store_unavailable',
    });
  });
});

describe('a database closed by its owner', () => {
  it('refuses every later call (shutting_down), never opening the file again', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'bbc-closed-')), 'data.sqlite');
    const db = openDatabase(path, 'CREATE TABLE IF NOT EXISTS t (x)');
    db.statement('insert', (c) => c.prepare('INSERT INTO t VALUES (1)').run());
    db.close();
    expect(() => db.statement('read', (c) => c.prepare('SELECT x FROM t').all())).toThrow(
      expect.objectContaining({ code: 'shutting_down', retryAfter: 1 }),
    );
    expect(() => db.transaction('write', (c) => c.prepare('INSERT INTO t VALUES (2)').run())).toThrow(
      expect.objectContaining({ code: 'shutting_down' }),
    );
    // The store on it too: a request past its handler's close is answered, not given a connection.
    const store = createSqliteStore(path);
    store.close();
    await expect(store.get('k')).rejects.toMatchObject({ code: 'shutting_down' });
  });
});

describe('the check at start', () => {
  it('a file whose pages are damaged (PRAGMA quick_check) is named, with what to do', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'bbc-database-')), 'data.sqlite');
    const store = createSqliteStore(path);
    for (let i = 0; i < 300; i++) await store.set(`key-${i}`, 'v'.repeat(200), 60_000);
    store.close();
    // Pages past the first overwritten, the header left whole.
    const fd = openSync(path, 'r+');
    for (let page = 2; page * 4096 < statSync(path).size; page += 2)
      writeSync(fd, Buffer.alloc(512, 0x5a), 0, 512, page * 4096 + 100);
    closeSync(fd);
    expect(() => openDatabase(path, 'SELECT 1')).toThrow(
      expect.objectContaining({
        code: 'invalid_configuration',
        message: expect.stringMatching(
          /data\.sqlite is damaged \(.+\)\. Stop every process on its directory, move the file/,
        ),
      }),
    );
  });

  it('a file of a later data format (a rollback after an upgrade) is refused, untouched; an unmarked one is marked', () => {
    const path = pathIn();
    const format = (version: number) => writeRows(path, `PRAGMA user_version = ${version}`);
    const userVersion = () => [
      rowsOf(path, 'PRAGMA user_version')[0]!.user_version,
      rowsOf(path, "SELECT name FROM sqlite_master WHERE type = 'table'").length,
    ];
    format(DATA_FORMAT + 1);
    expect(() => openDatabase(path, SCHEMA)).toThrow(
      expect.objectContaining({
        code: 'invalid_configuration',
        message: `[blackbox-capture/server] ${path} was written by a later release of blackbox-capture (data format ${DATA_FORMAT + 1}; this one reads up to ${DATA_FORMAT}): run that release or a later one on it, so that what it holds is read by the rules it was written by (docs/server.md#the-data-directory)`,
      }),
    );
    expect(userVersion()).toEqual([DATA_FORMAT + 1, 0]);
    // An earlier release's file (unmarked, its rows kept): marked with this format.
    format(0);
    openDatabase(path, SCHEMA).close();
    expect(userVersion()).toEqual([DATA_FORMAT, 1]);
    format(DATA_FORMAT);
    openDatabase(path, SCHEMA).close();
    expect(userVersion()).toEqual([DATA_FORMAT, 1]);
  });

  it('a sound file opens, and the same file again in the same process', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'bbc-database-')), 'data.sqlite');
    const a = openDatabase(path, 'CREATE TABLE IF NOT EXISTS t (x)');
    const b = openDatabase(path, 'CREATE TABLE IF NOT EXISTS t (x)');
    a.statement('write', (c) => c.prepare('INSERT INTO t VALUES (?)').run(1));
    expect(b.statement('read', (c) => c.prepare('SELECT x FROM t').all())).toEqual([expect.objectContaining({ x: 1 })]);
    a.close();
    b.close();
  });
});

describe('the connection', () => {
  it('waits busy_timeout for another writer, in WAL with synchronous=FULL, its temporary store in memory', () => {
    const path = pathIn();
    const database = openDatabase(path, SCHEMA);
    const pragma = (name: string) =>
      database.statement(name, (c) => Object.values(c.prepare(`PRAGMA ${name}`).get()!)[0]);
    expect([pragma('busy_timeout'), pragma('journal_mode'), pragma('synchronous'), pragma('temp_store')]).toEqual([
      BUSY_TIMEOUT_MS,
      'wal',
      2,
      // MEMORY: nothing written to a temporary directory, which a read-only root does not have.
      2,
    ]);
    database.close();
  });

  it('makes its directory 0700 and the file with its -wal 0600', () => {
    const path = join(pathIn('nested'), 'deeper', 'data.sqlite');
    const database = openDatabase(path, SCHEMA);
    database.statement('write', (c) => c.prepare('INSERT INTO t VALUES (1)').run());
    const mode = (file: string) => statSync(file).mode & 0o777;
    expect([mode(join(path, '..')), mode(path), mode(`${path}-wal`)]).toEqual([0o700, 0o600, 0o600]);
    database.close();
  });

  it('runs SQL of a work on its connection, each statement prepared once', () => {
    const engine = faultyEngine();
    const database = engine.opening(() => openDatabase(pathIn(), SCHEMA));
    database.transaction('write', (c) => c.exec('INSERT INTO t VALUES (1)'));
    for (let i = 0; i < 3; i++) expect(count(database)).toBe(1);
    expect(engine.state.prepared.filter((sql) => sql.startsWith('SELECT count'))).toHaveLength(1);
    database.close();
    // Closed twice: nothing more to close.
    database.close();
    expect(engine.state.closed).toBe(1);
  });

  it('a work that closes its connection closes the database: the next call opens it again', () => {
    const engine = faultyEngine();
    const database = engine.opening(() => openDatabase(pathIn(), SCHEMA));
    database.statement('close', (c) => c.close());
    expect(engine.state.closed).toBe(1);
  });

  it('a transaction that fails is rolled back, and its error is let through', () => {
    const database = openDatabase(pathIn(), SCHEMA);
    const bug = new TypeError('a bug in the work');
    expect(() =>
      database.transaction('write', (c) => {
        c.prepare('INSERT INTO t VALUES (1)').run();
        throw bug;
      }),
    ).toThrow(bug);
    expect(count(database)).toBe(0);
    database.close();
  });

  it('a full disk in a transaction is store_full naming what was refused; the rollback SQLite did is not an error', () => {
    const engine = faultyEngine();
    const path = pathIn();
    const database = engine.opening(() => openDatabase(path, SCHEMA));
    engine.state.fail = nodeError(13, 'database or disk is full');
    expect(() =>
      database.transaction('the queue took a checkout', (c) => c.prepare('INSERT INTO t VALUES (1)').run()),
    ).toThrow(
      expect.objectContaining({
        code: 'store_full',
        message: expect.stringContaining('the queue took a checkout was refused'),
      }),
    );
    expect(engine.state.executed).toContain('ROLLBACK');
    // The connection is kept: the next write finds room.
    database.statement('write', (c) => c.prepare('INSERT INTO t VALUES (1)').run());
    expect([count(database), engine.state.opened]).toEqual([1, 1]);
    database.close();
  });

  it('a statement that fails is the kit’s error naming it', () => {
    const engine = faultyEngine();
    const database = engine.opening(() => openDatabase(pathIn(), SCHEMA));
    engine.state.fail = nodeError(5, 'database is locked');
    expect(() => count(database)).toThrow(
      expect.objectContaining({
        code: 'store_unavailable',
        message: expect.stringContaining('(count: database is locked)'),
      }),
    );
    // Not an I/O error: the connection stays.
    expect(count(database)).toBe(0);
    expect([engine.state.opened, engine.state.closed]).toEqual([1, 0]);
    database.close();
  });

  it('after an I/O error, the connection is closed and the next call opens another, without a new check', () => {
    const engine = faultyEngine();
    const database = engine.opening(() => openDatabase(pathIn(), SCHEMA));
    engine.state.fail = nodeError(10, 'disk I/O error');
    expect(() => count(database)).toThrow(expect.objectContaining({ code: 'store_unavailable' }));
    expect(engine.state.closed).toBe(1);
    expect(count(database)).toBe(0);
    expect(engine.state.opened).toBe(2);
    // Prepared again on the new connection; the file checked once, at start.
    expect(engine.state.prepared.filter((sql) => sql.startsWith('SELECT count'))).toHaveLength(2);
    expect(engine.state.prepared.filter((sql) => sql.startsWith('PRAGMA quick_check'))).toHaveLength(1);
    database.close();
  });

  it('after an I/O error, a connection that cannot close is dropped all the same', () => {
    const engine = faultyEngine();
    const database = engine.opening(() => openDatabase(pathIn(), SCHEMA));
    engine.state.fail = nodeError(10, 'disk I/O error');
    engine.state.failClose = true;
    expect(() => count(database)).toThrow(expect.objectContaining({ code: 'store_unavailable' }));
    engine.state.failClose = false;
    expect(count(database)).toBe(0);
    expect(engine.state.opened).toBe(2);
    database.close();
  });
});

describe('the file first opened', () => {
  const refused = expect.objectContaining({
    code: 'store_unavailable',
    message: expect.stringMatching(/was removed or replaced while this process had it open/),
  });

  it('removed, or moved aside: every call refused, none made anew; put back, it is used again', () => {
    const path = pathIn();
    const database = openDatabase(path, SCHEMA);
    database.statement('write', (c) => c.prepare('INSERT INTO t VALUES (1)').run());
    renameSync(path, `${path}.aside`);
    expect(() => count(database)).toThrow(refused);
    expect(() => database.transaction('write', (c) => c.prepare('INSERT INTO t VALUES (2)').run())).toThrow(refused);
    expect(existsSync(path)).toBe(false);
    renameSync(`${path}.aside`, path);
    expect(count(database)).toBe(1);
    // Its directory gone: refused, and not made again.
    rmSync(dirname(path), { recursive: true });
    expect(() => count(database)).toThrow(refused);
    expect(existsSync(dirname(path))).toBe(false);
    database.close();
  });

  it('another file put in its place (a copy, a restore): refused until a restart opens it', () => {
    const path = pathIn();
    const database = openDatabase(path, SCHEMA);
    database.statement('write', (c) => c.prepare('INSERT INTO t VALUES (1)').run());
    const otherPath = pathIn();
    const other = openDatabase(otherPath, SCHEMA);
    other.statement('write', (c) => c.prepare('INSERT INTO t VALUES (1), (2)').run());
    other.close();
    // As a restore goes: the old file and its -wal and -shm moved aside, the other put in place.
    for (const end of ['', '-wal', '-shm']) renameSync(path + end, `${path}${end}.old`);
    renameSync(otherPath, path);
    expect(() => count(database)).toThrow(refused);
    database.close();
    const restarted = openDatabase(path, SCHEMA);
    expect(count(restarted)).toBe(2);
    restarted.close();
  });

  it('gone as it is first opened: refused, its connection closed, never kept unknown', () => {
    const engine = faultyEngine();
    const path = pathIn();
    engine.state.onExec = (sql) => {
      if (sql === SCHEMA) rmSync(path);
    };
    expect(() => engine.opening(() => openDatabase(path, SCHEMA))).not.toThrow();
    expect([engine.state.opened, engine.state.closed]).toEqual([1, 1]);
  });

  it('opened under a relative path: still its file after the working directory changes', () => {
    const path = pathIn();
    const cwd = process.cwd();
    process.chdir(dirname(path));
    try {
      const database = openDatabase(basename(path), SCHEMA);
      process.chdir(tmpdir());
      database.statement('write', (c) => c.prepare('INSERT INTO t VALUES (1)').run());
      expect(count(database)).toBe(1);
      database.close();
    } finally {
      process.chdir(cwd);
    }
  });

  // A volume unmounted under the process (here lazily, as a busy mount goes): the open file is
  // no longer at its path, and the mount point's own empty directory is.
  it.skipIf(process.getuid?.() !== 0)(
    'its volume unmounted: refused, nothing written in the directory left',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'bbc-volume-'));
      expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir]).status).toBe(0);
      try {
        const store = createSqliteStore(join(dir, 'data.sqlite'));
        await store.set('a', '1', 60_000);
        expect(spawnSync('umount', ['--lazy', dir]).status).toBe(0);
        await expect(store.set('b', '2', 60_000)).rejects.toEqual(refused);
        await expect(store.get('a')).rejects.toEqual(refused);
        expect(readdirSync(dir)).toEqual([]);
        store.close();
      } finally {
        spawnSync('umount', ['--lazy', dir]);
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});

describe('the opening', () => {
  it.each([
    ['a full disk', nodeError(13, 'database or disk is full')],
    ['an I/O error', nodeError(10, 'disk I/O error')],
    ['a lock held past busy_timeout', nodeError(5, 'database is locked')],
  ])('deferred by %s: the next call opens the file', (_, error) => {
    const engine = faultyEngine();
    engine.state.failOpen = error;
    const database = engine.opening(() => openDatabase(pathIn(), SCHEMA));
    expect(engine.state.opened).toBe(0);
    expect(count(database)).toBe(0);
    expect(engine.state.opened).toBe(1);
    database.close();
  });

  it('refuses a bug in opening as it is, never deferred', () => {
    const engine = faultyEngine();
    const bug = new TypeError('not a constructor');
    engine.state.failOpen = bug;
    expect(() => engine.opening(() => openDatabase(pathIn(), SCHEMA))).toThrow(bug);
  });

  it('names each fault quick_check reports, its white space folded, and closes the connection', () => {
    const engine = faultyEngine();
    engine.state.quickCheck = [{ quick_check: 'row 3 missing  from\nindex i' }, { quick_check: 'page 5:\tnever used' }];
    expect(() => engine.opening(() => openDatabase(pathIn(), SCHEMA))).toThrow(
      expect.objectContaining({
        code: 'invalid_configuration',
        message: expect.stringContaining('is damaged (row 3 missing from index i; page 5: never used)'),
      }),
    );
    expect(engine.state.closed).toBe(1);
  });
});

describe('a runtime without node:sqlite', () => {
  it.each([
    ['no process.getBuiltinModule (Node 22 before 22.3)', undefined],
    [
      'node:sqlite unknown (Node 22 before 22.13, without --experimental-sqlite)',
      () => {
        throw Object.assign(new Error('No such built-in module: node:sqlite'), { code: 'ERR_UNKNOWN_BUILTIN_MODULE' });
      },
    ],
  ])('%s: invalid_configuration naming what it needs', (_, load) => {
    const original = (process as { getBuiltinModule?: unknown }).getBuiltinModule;
    Object.defineProperty(process, 'getBuiltinModule', { value: load, configurable: true, writable: true });
    try {
      let thrown: unknown;
      try {
        openDatabase(pathIn('x.sqlite'), 'SELECT 1');
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toMatchObject({
        code: 'invalid_configuration',
        message: expect.stringContaining('node:sqlite, which the data directory needs: Node 22.13 or later'),
      });
      // The loader's own refusal kept for the operator.
      if (load) expect((thrown as Error).cause).toMatchObject({ code: 'ERR_UNKNOWN_BUILTIN_MODULE' });
    } finally {
      Object.defineProperty(process, 'getBuiltinModule', { value: original, configurable: true, writable: true });
    }
  });

  it('a runtime without a process object (a worker of an edge runtime): the same', () => {
    const original = Object.getOwnPropertyDescriptor(globalThis, 'process')!;
    const path = pathIn('x.sqlite');
    let thrown: unknown;
    // Synchronous: nothing else runs while the global is away.
    Object.defineProperty(globalThis, 'process', { value: undefined, configurable: true, writable: true });
    try {
      openDatabase(path, 'SELECT 1');
    } catch (error) {
      thrown = error;
    } finally {
      Object.defineProperty(globalThis, 'process', original);
    }
    expect(thrown).toMatchObject({ code: 'invalid_configuration' });
  });
});
