// One queue per journal: a lock held by a live process (another, or a queue of this one) is
// refused with invalid_configuration naming the path and its owner; one left by a process that
// died, half written, or naming this pid with no queue here holding it, is taken over.
// Two real processes on one directory: test/server/queue/file-queue.clock.test.ts.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { lockPath } from '../../../src/server/queue/path-lock.js';

// Beside the test's data directory, removed with it (test/support/data-dir-setup.ts).
const journal = () => join(mkdtempSync(join(dirname(process.env.BLACKBOX_CAPTURE_DATA_DIR!), 'lock-')), 'queue.jsonl');
const refusedFor = (path: string, pid: number) =>
  expect.objectContaining({
    code: 'invalid_configuration',
    message: expect.stringContaining(`${path} is held by another queue (process ${pid}`),
  });

/** A process that runs until killed, and the promise of its exit. */
async function live() {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('spawn', resolve));
  const kill = () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    return exited;
  };
  return { pid: child.pid!, kill };
}

describe('lockPath', () => {
  it('takes the lock with its pid; a second in this process is refused until the first is released', () => {
    const path = journal();
    const release = lockPath(path);
    expect(readFileSync(`${path}.lock`, 'utf8')).toBe(String(process.pid));
    expect(() => lockPath(path)).toThrow(refusedFor(path, process.pid));
    release();
    expect(existsSync(`${path}.lock`)).toBe(false);
    // Released twice: nothing more happens.
    release();
    lockPath(path)();
  });

  it("another live process's lock is refused, naming it; once it is killed, its lock is taken over", async () => {
    const path = journal();
    const other = await live();
    writeFileSync(`${path}.lock`, String(other.pid));
    try {
      expect(() => lockPath(path)).toThrow(refusedFor(path, other.pid));
      expect(readFileSync(`${path}.lock`, 'utf8')).toBe(String(other.pid));
    } finally {
      await other.kill();
    }
    const release = lockPath(path);
    expect(readFileSync(`${path}.lock`, 'utf8')).toBe(String(process.pid));
    release();
  });

  it('a half-written lock (killed between create and write), or one naming this pid that no queue here holds, is taken over', async () => {
    const path = journal();
    writeFileSync(`${path}.lock`, '');
    lockPath(path)();
    // A container restarted: the new process has the old one's pid.
    writeFileSync(`${path}.lock`, String(process.pid));
    vi.resetModules();
    const fresh = (await import('../../../src/server/queue/path-lock.js')).lockPath;
    const release = fresh(path);
    expect(readFileSync(`${path}.lock`, 'utf8')).toBe(String(process.pid));
    release();
  });

  it('a directory it cannot write: the file system error as it is', () => {
    expect(() => lockPath(join(tmpdir(), 'bbc-missing-dir', 'x', 'queue.jsonl'))).toThrow(
      expect.objectContaining({ code: 'ENOENT' }),
    );
  });
});
