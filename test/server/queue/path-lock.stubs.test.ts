// The lock's races, with the file system's answers stubbed where two processes would have to
// meet within microseconds: a lock released between the failed create and its read, one moved
// by another taker before this one's rename, one replaced by a live owner meanwhile, one taken
// and released over and over; and a pid that runs as another user (EPERM). The real file
// system does the rest (test/server/queue/path-lock.test.ts).
import type * as fs from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';

/** Replacements of node:fs functions for the next calls, by name. */
const stubs: { readFileSync?: typeof fs.readFileSync; renameSync?: typeof fs.renameSync } = {};
vi.mock('node:fs', async (original) => {
  const real = await original<typeof import('node:fs')>();
  return {
    ...real,
    readFileSync: ((...args: Parameters<typeof real.readFileSync>) =>
      (stubs.readFileSync ?? real.readFileSync)(...args)) as typeof real.readFileSync,
    renameSync: (...args: Parameters<typeof real.renameSync>) => (stubs.renameSync ?? real.renameSync)(...args),
  };
});
const { lockPath } = await import('../../../src/server/queue/path-lock.js');
/** The file system itself, for the test's own reads and writes. */
const real = await vi.importActual<typeof import('node:fs')>('node:fs');
const { mkdtempSync, writeFileSync } = real;
const realRead = real.readFileSync;

afterEach(() => {
  delete stubs.readFileSync;
  delete stubs.renameSync;
  vi.restoreAllMocks();
});

const journal = () => join(mkdtempSync(join(dirname(process.env.BLACKBOX_CAPTURE_DATA_DIR!), 'lock-')), 'queue.jsonl');
const enoent = () => Object.assign(new Error('ENOENT: gone'), { code: 'ENOENT' });
/** A pid no process has (pid_max is at most 2^22). */
const DEAD = 4_194_304 + 7;

describe('lockPath, its races', () => {
  it('a pid that runs as another user (EPERM) is a live owner: refused', () => {
    const path = journal();
    writeFileSync(`${path}.lock`, String(DEAD));
    vi.spyOn(process, 'kill').mockImplementation(() => {
      throw Object.assign(new Error('EPERM'), { code: 'EPERM' });
    });
    expect(() => lockPath(path)).toThrow(`held by another queue (process ${DEAD}`);
  });

  it('a pid that is no whole positive number is a half-written lock: taken over', () => {
    for (const text of ['-5', '1.5', '12abc']) {
      const path = journal();
      writeFileSync(`${path}.lock`, text);
      const kill = vi.spyOn(process, 'kill');
      lockPath(path)();
      expect(kill).not.toHaveBeenCalled();
    }
  });

  it('a lock released between the failed create and its read: tried again, taken', () => {
    const path = journal();
    writeFileSync(`${path}.lock`, String(DEAD));
    let reads = 0;
    stubs.readFileSync = ((file: fs.PathOrFileDescriptor, options?: unknown) => {
      if (++reads === 1) {
        real.rmSync(`${path}.lock`);
        throw enoent();
      }
      return realRead(file, options as BufferEncoding);
    }) as typeof fs.readFileSync;
    lockPath(path);
    expect(realRead(`${path}.lock`, 'utf8')).toBe(String(process.pid));
  });

  it('a stale lock another taker moved first (ENOENT on the rename): tried again, taken', () => {
    const path = journal();
    writeFileSync(`${path}.lock`, String(DEAD));
    let renames = 0;
    stubs.renameSync = (from, to) => {
      if (++renames === 1) throw enoent();
      real.renameSync(from, to);
    };
    lockPath(path);
    expect(renames).toBe(2);
    expect(realRead(`${path}.lock`, 'utf8')).toBe(String(process.pid));
  });

  it('a rename error other than ENOENT is thrown as it is', () => {
    const path = journal();
    writeFileSync(`${path}.lock`, String(DEAD));
    stubs.renameSync = () => {
      throw Object.assign(new Error('EACCES: no'), { code: 'EACCES' });
    };
    expect(() => lockPath(path)).toThrow('EACCES: no');
  });

  it('a stale lock replaced by a live owner before the rename: put back, refused naming that owner', () => {
    const path = journal();
    // On disk a live owner (the test runner's parent); read first as the dead one it replaced.
    writeFileSync(`${path}.lock`, String(process.ppid));
    let reads = 0;
    stubs.readFileSync = ((file: fs.PathOrFileDescriptor, options?: unknown) =>
      ++reads === 1 ? String(DEAD) : realRead(file, options as BufferEncoding)) as typeof fs.readFileSync;
    expect(() => lockPath(path)).toThrow(`held by another queue (process ${process.ppid}`);
    expect(realRead(`${path}.lock`, 'utf8')).toBe(String(process.ppid));
  });

  it('a lock taken and released over and over meanwhile: refused after six tries, not looped for ever', () => {
    const path = journal();
    writeFileSync(`${path}.lock`, String(DEAD));
    let reads = 0;
    stubs.readFileSync = (() => {
      reads++;
      throw enoent();
    }) as typeof fs.readFileSync;
    expect(() => lockPath(path)).toThrow('held by another queue (process 0');
    expect(reads).toBe(7);
  });

  it('a read error other than ENOENT is thrown as it is', () => {
    const path = journal();
    writeFileSync(`${path}.lock`, String(DEAD));
    stubs.readFileSync = (() => {
      throw Object.assign(new Error('EIO: broken'), { code: 'EIO' });
    }) as typeof fs.readFileSync;
    expect(() => lockPath(path)).toThrow('EIO: broken');
  });
});
