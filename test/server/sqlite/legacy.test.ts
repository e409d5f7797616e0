// What an earlier version left in a data directory (src/server/sqlite/legacy.ts): the journal's
// jobs still held and the store's live entries, read once into the SQLite file, the old file
// renamed; lines a kill tore, or that are not what the version wrote, are skipped.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFileQueue } from '../../../src/server/queue/file.js';
import type { CheckJob } from '../../../src/server/queue/queue.js';
import { importLegacyQueue, importLegacyStore } from '../../../src/server/sqlite/legacy.js';
import { createSqliteStore } from '../../../src/server/sqlite/store.js';
import { rowsOf } from '../../support/sqlite.js';

const job = (key: string): CheckJob => ({
  key,
  fingerprint: 'f',
  blackbox: 'bb',
  customer: { customerInternalReference: `order-${key}` },
  acceptedAt: 1,
});
const lines = (...values: unknown[]) => values.map((value) => JSON.stringify(value)).join('\n') + '\n';

describe("an earlier version's data directory", () => {
  it("the journal's held jobs join the queue, in order; the journal is renamed; torn and odd lines skipped", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bbc-legacy-'));
    writeFileSync(
      join(dir, 'queue.jsonl'),
      lines(
        { add: job('a') },
        { add: job('b') },
        42,
        null,
        { done: 'a' },
        ['x'],
        { add: { fingerprint: 'no key' } },
        { add: { key: 7 } },
        { add: 'c' },
        { add: job('c') },
      ) + '{"add":{"key":"torn","finger',
    );
    const queue = createFileQueue({ path: join(dir, 'data.sqlite') });
    expect(await importLegacyQueue(dir, queue)).toBe(true);
    expect(existsSync(join(dir, 'queue.jsonl'))).toBe(false);
    expect(existsSync(join(dir, 'queue.jsonl.imported'))).toBe(true);
    const ran: string[] = [];
    queue.process(async (j) => {
      ran.push(j.key);
      return { done: true };
    });
    await queue.idle();
    expect(ran).toEqual(['b', 'c']);
    // Read once: a second start finds nothing more.
    expect(await importLegacyQueue(dir, queue)).toBe(false);
    await queue.close();
  });

  it('a journal the queue cannot all take: queue_full naming it, the rest alone kept for the next start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bbc-legacy-'));
    writeFileSync(join(dir, 'queue.jsonl'), lines({ add: job('a') }, { add: job('b') }, { add: job('c') }));
    const path = join(dir, 'data.sqlite');
    const full = createFileQueue({ path, maxQueued: 1 });
    await expect(importLegacyQueue(dir, full)).rejects.toMatchObject({
      code: 'queue_full',
      operation: 'queue',
      message: expect.stringContaining(
        `${join(dir, 'queue.jsonl')} holds 3 checkouts of an earlier version; the queue took 1`,
      ),
    });
    // The rest alone: the next start adds it, whenever it comes (those taken may be forgotten by then).
    expect(readFileSync(join(dir, 'queue.jsonl'), 'utf8')).toBe(lines({ add: job('b') }, { add: job('c') }));
    expect(statSync(join(dir, 'queue.jsonl')).mode & 0o777).toBe(0o600);
    await full.close();
    const next = createFileQueue({ path: join(dir, 'next.sqlite') });
    expect(await importLegacyQueue(dir, next)).toBe(true);
    const ran: string[] = [];
    next.process(async (j) => {
      ran.push(j.key);
      return { done: true };
    });
    await next.idle();
    expect(ran).toEqual(['b', 'c']);
    await next.close();
  });

  it("the store's live entries are kept with the time they had left; deleted and expired ones are not", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bbc-legacy-'));
    writeFileSync(
      join(dir, 'store.jsonl'),
      lines(['kept', 'v1', 5000], ['kept', 'v2', 6000], ['gone', 'x', 6000], ['gone'], ['old', 'y', 500], { a: 1 }, 7),
    );
    let clock = 1000;
    const store = createSqliteStore(join(dir, 'data.sqlite'), { now: () => clock });
    expect(await importLegacyStore(dir, store, clock)).toBe(true);
    expect([await store.get('kept'), await store.get('gone'), await store.get('old')]).toEqual([
      'v2',
      undefined,
      undefined,
    ]);
    clock = 6000;
    expect(await store.get('kept')).toBeUndefined();
    expect(existsSync(join(dir, 'store.jsonl.imported'))).toBe(true);
    store.close();
  });

  it("writes only the store's live entries, each as its last well-formed line left it", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bbc-legacy-'));
    writeFileSync(
      join(dir, 'store.jsonl'),
      lines(
        ['a', 'v', 5000],
        ['a', 5, 6000],
        ['b', 'v', 5000],
        ['b', 'w', '9000'],
        [5, 'v', 9000],
        ['now', 'v', 1000],
        ['expired', 'v', 999],
        ['live', 'v', 1001],
      ),
    );
    const path = join(dir, 'data.sqlite');
    const store = createSqliteStore(path, { now: () => 1000 });
    expect(await importLegacyStore(dir, store, 1000)).toBe(true);
    // In the file itself: what has lapsed is not written at all.
    expect(rowsOf(path, 'SELECT key, value, until FROM store_entries')).toEqual([
      { key: 'live', value: 'v', until: 1001 },
    ]);
    store.close();
  });

  it('two processes on the directory starting at once: both import, neither fails, and no newer value is written over', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bbc-legacy-'));
    const until = Date.now() + 86_400_000;
    const journal = lines(...Array.from({ length: 200 }, (_, i) => [`k${i}`, `old${i}`, until]));
    writeFileSync(join(dir, 'store.jsonl'), journal);
    const path = join(dir, 'data.sqlite');
    const [a, b] = [createSqliteStore(path), createSqliteStore(path)];
    const both = await Promise.allSettled([
      importLegacyStore(dir, a, Date.now()),
      importLegacyStore(dir, b, Date.now()),
    ]);
    expect(both.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled']);
    // The first has served meanwhile (a record changed); the second read the journal before its rename.
    await a.set('k0', 'new', 60_000);
    writeFileSync(join(dir, 'store.jsonl'), journal);
    expect(await importLegacyStore(dir, b, Date.now())).toBe(true);
    expect([await b.get('k0'), await b.get('k199')]).toEqual(['new', 'old199']);
    a.close();
    b.close();
  });

  it('a rename refused for another reason (its new name a folder): that error, never "imported"', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bbc-legacy-'));
    writeFileSync(join(dir, 'store.jsonl'), lines(['a', 'v', Date.now() + 60_000]));
    mkdirSync(join(dir, 'store.jsonl.imported', 'in-the-way'), { recursive: true });
    const store = createSqliteStore(join(dir, 'data.sqlite'));
    await expect(importLegacyStore(dir, store, Date.now())).rejects.toMatchObject({ code: 'EISDIR' });
    expect(existsSync(join(dir, 'store.jsonl'))).toBe(true);
    store.close();
  });

  it('without a store.jsonl, reads nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bbc-legacy-'));
    const store = createSqliteStore(join(dir, 'data.sqlite'));
    expect(await importLegacyStore(dir, store, 1000)).toBe(false);
    store.close();
  });

  it('a journal it cannot read (not a file) is an error, never "no journal"', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bbc-legacy-'));
    mkdirSync(join(dir, 'queue.jsonl'));
    const queue = createFileQueue({ path: join(dir, 'data.sqlite') });
    await expect(importLegacyQueue(dir, queue)).rejects.toMatchObject({ code: 'EISDIR' });
    await queue.close();
  });
});
