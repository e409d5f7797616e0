// The data directory's database (src/server/sqlite/database.ts): SQLite's failures in the
// kit's terms, from each runtime's error shape (Node and Bun give a code, Deno only SQLite's
// text), and the check at start that names a damaged file.
import { mkdtempSync, openSync, writeSync, closeSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { databaseFailure, openDatabase, sqliteCode } from '../../../src/server/sqlite/database.js';
import { createSqliteStore } from '../../../src/server/sqlite/store.js';

const nodeError = (errcode: number, errstr: string) =>
  Object.assign(new Error(errstr), { code: 'ERR_SQLITE_ERROR', errcode, errstr });

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
  ])('%s', (_, error, code, retryAfter) => {
    const failure = databaseFailure(error, '/data/blackbox-capture.sqlite', 'the queue took a checkout');
    expect(failure).toMatchObject({ code, message: expect.stringContaining('/data/blackbox-capture.sqlite') });
    expect((failure as { retryAfter?: number }).retryAfter).toBe(retryAfter);
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
      expect(() => openDatabase(join(mkdtempSync(join(tmpdir(), 'bbc-database-')), 'x.sqlite'), 'SELECT 1')).toThrow(
        expect.objectContaining({
          code: 'invalid_configuration',
          message: expect.stringContaining('node:sqlite, which the data directory needs: Node 22.13 or later'),
        }),
      );
    } finally {
      Object.defineProperty(process, 'getBuiltinModule', { value: original, configurable: true, writable: true });
    }
  });
});
