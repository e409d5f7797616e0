// What an earlier version left in a data directory (src/server/sqlite/legacy.ts): the journal's
// jobs still held and the store's live entries, read once into the SQLite file, the old file
// renamed; lines a kill tore, or that are not what the version wrote, are skipped.
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFileQueue } from '../../../src/server/queue/file.js';
import type { CheckJob } from '../../../src/server/queue/queue.js';
import { importLegacyQueue, importLegacyStore } from '../../../src/server/sqlite/legacy.js';
import { createSqliteStore } from '../../../src/server/sqlite/store.js';

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
      lines({ add: job('a') }, { add: job('b') }, 42, null, { done: 'a' }, ['x'], { add: job('c') }) +
        '{"add":{"key":"torn","finger',
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

  it('a journal the queue cannot all take stays for the next start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bbc-legacy-'));
    writeFileSync(join(dir, 'queue.jsonl'), lines({ add: job('a') }, { add: job('b') }));
    const queue = createFileQueue({ path: join(dir, 'data.sqlite'), maxQueued: 1 });
    expect(await importLegacyQueue(dir, queue)).toBe(false);
    expect(existsSync(join(dir, 'queue.jsonl'))).toBe(true);
    await queue.close();
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
});
