import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFileStore } from '../../src/gateway/file-store.js';

const pathIn = () => join(mkdtempSync(join(tmpdir(), 'bbc-file-store-')), 'store.json');

describe('the file store', () => {
  it('keeps the memory store rules', async () => {
    const store = createFileStore(pathIn());
    expect(await store.setIfAbsent('a', '1', 60_000)).toBe(true);
    expect(await store.setIfAbsent('a', '2', 60_000)).toBe(false);
    expect(await store.compareAndSet('a', '2', '3', 60_000)).toBe(false);
    expect(await store.compareAndSet('a', '1', '3', 60_000)).toBe(true);
    expect(await store.get('a')).toBe('3');
    expect(await store.compareAndDelete('a', '1')).toBe(false);
    expect(await store.compareAndDelete('a', '3')).toBe(true);
    expect(await store.get('a')).toBeUndefined();
    await store.set('b', 'x', 60_000);
    await store.delete('b');
    expect(await store.get('b')).toBeUndefined();
  });

  it('outlives its process: a new store on the path has every unexpired entry', async () => {
    const path = pathIn();
    let clock = 1000;
    const first = createFileStore(path, { now: () => clock });
    await first.set('kept', 'yes', 10_000);
    await first.set('lapses', 'soon', 100);
    await first.setIfAbsent('claimed', 'one', 10_000);
    await first.compareAndSet('claimed', 'one', 'two', 10_000);
    clock += 500;
    const second = createFileStore(path, { now: () => clock });
    expect(await second.get('kept')).toBe('yes');
    expect(await second.get('claimed')).toBe('two');
    expect(await second.get('lapses')).toBeUndefined();
    clock += 10_000;
    expect(await second.get('kept')).toBeUndefined();
  });

  it('is on disk before a write answers, and a deletion too', async () => {
    const path = pathIn();
    const store = createFileStore(path);
    await store.set('k', 'v', 60_000);
    expect(readFileSync(path, 'utf8')).toContain('["k","v",');
    await store.delete('k');
    store.close();
    expect(await createFileStore(path).get('k')).toBeUndefined();
  });

  it('skips a line torn by a kill mid-write, keeping every other', async () => {
    const path = pathIn();
    const store = createFileStore(path);
    await store.set('a', '1', 60_000);
    store.close();
    writeFileSync(path, readFileSync(path, 'utf8') + '["b","2",');
    expect(await createFileStore(path).get('a')).toBe('1');
  });

  it('compacts the journal to the live entries as it grows', async () => {
    const path = pathIn();
    const store = createFileStore(path, { slack: 10 });
    await store.set('other', 'x', 60_000);
    for (let i = 0; i < 30; i++) await store.set('same', String(i), 60_000);
    const lines = readFileSync(path, 'utf8').split('\n').filter(Boolean);
    expect(lines.length).toBeLessThanOrEqual(2 * 2 + 10);
    store.close();
    const again = createFileStore(path);
    expect([await again.get('same'), await again.get('other')]).toEqual(['29', 'x']);
  });
});
