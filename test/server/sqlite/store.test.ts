// The SQLite store (src/server/sqlite/store.ts): the Store contract, and what a file adds to
// it: every unexpired entry outlives its process, each write is committed before it answers,
// two stores on one file (two processes) see each other's writes and never both win one key.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../../src/server/sqlite/store.js';
import type { Store } from '../../../src/server/store/store.js';
import { storeContract } from '../../support/store-contract.js';
import { faultyEngine, rowsOf, sqliteError } from '../../support/sqlite.js';

const pathIn = () => join(mkdtempSync(join(tmpdir(), 'bbc-sqlite-store-')), 'data.sqlite');

describe('the Store contract: the SQLite store', () => storeContract(async () => createSqliteStore(pathIn())));

describe('the SQLite store', () => {
  it('outlives its process: a new store on the path has every unexpired entry', async () => {
    const path = pathIn();
    let clock = 1000;
    const first = createSqliteStore(path, { now: () => clock });
    await first.set('kept', 'yes', 10_000);
    await first.set('lapses', 'soon', 100);
    await first.setIfAbsent('claimed', 'one', 10_000);
    await first.compareAndSet('claimed', 'one', 'two', 10_000);
    clock += 500;
    const second = createSqliteStore(path, { now: () => clock });
    expect(await second.get('kept')).toBe('yes');
    expect(await second.get('claimed')).toBe('two');
    expect(await second.get('lapses')).toBeUndefined();
    // An expired key is absent to a claim: taken again.
    expect(await second.setIfAbsent('lapses', 'again', 1000)).toBe(true);
    clock += 10_000;
    expect(await second.get('kept')).toBeUndefined();
    first.close();
    second.close();
  });

  it('is in the file before a write answers, and a deletion too', async () => {
    const path = pathIn();
    const store = createSqliteStore(path);
    await store.set('k', 'v', 60_000);
    // Another connection (as another process would) reads the committed row.
    const read = () => rowsOf(path, 'SELECT value FROM store_entries WHERE key = ?', 'k').map((row) => row.value);
    expect(read()).toEqual(['v']);
    await store.delete('k');
    expect(read()).toEqual([]);
    store.close();
  });

  it('two stores on one file: one claim of a key wins, each sees the other write', async () => {
    const path = pathIn();
    const a = createSqliteStore(path);
    const b = createSqliteStore(path);
    const claims = await Promise.all([a.setIfAbsent('lease', 'a', 60_000), b.setIfAbsent('lease', 'b', 60_000)]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    const holder = (await b.get('lease'))!;
    expect(await a.compareAndSet('lease', holder, 'next', 60_000)).toBe(true);
    expect(await b.compareAndSet('lease', holder, 'stolen', 60_000)).toBe(false);
    expect(await b.get('lease')).toBe('next');
    a.close();
    b.close();
  });

  it('deletes expired entries as writes go, a batch at a time', async () => {
    const path = pathIn();
    let clock = 0;
    const store = createSqliteStore(path, { now: () => clock });
    for (let i = 0; i < 100; i++) await store.set(`old-${i}`, 'x', 10);
    clock = 100;
    // Not at every write: the 500th since the start sweeps.
    for (let i = 0; i < 399; i++) await store.set('live', String(i), 60_000);
    expect(rowsOf(path, 'SELECT count(*) AS n FROM store_entries')).toEqual([{ n: 101 }]);
    await store.set('live', 'last', 60_000);
    expect(rowsOf(path, 'SELECT key FROM store_entries')).toEqual([expect.objectContaining({ key: 'live' })]);
    store.close();
  });

  it.each([
    ['get', 'read', (store: Store) => store.get('k')],
    ['set', 'write', (store: Store) => store.set('k', 'v', 1000)],
    ['setIfAbsent', 'claim', (store: Store) => store.setIfAbsent('k', 'v', 1000)],
    ['compareAndSet', 'compare and set', (store: Store) => store.compareAndSet('k', 'v', 'w', 1000)],
    ['compareAndDelete', 'compare and delete', (store: Store) => store.compareAndDelete('k', 'v')],
    ['delete', 'delete', (store: Store) => store.delete('k')],
  ])('%s on a full disk rejects store_full naming the %s refused, never "absent"', async (_, what, call) => {
    const engine = faultyEngine();
    const store = engine.opening(() => createSqliteStore(pathIn()));
    engine.state.fail = sqliteError(13, 'database or disk is full');
    await expect(call(store)).rejects.toMatchObject({
      code: 'store_full',
      message: expect.stringContaining(`: ${what} was refused`),
    });
    store.close();
  });
});
