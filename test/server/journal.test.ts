// The journal under the file queue and the gateway's file store: what was appended is read
// back, a torn last line is skipped, and the file is compacted to the live lines past its bound.
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openJournal, readJournal } from '../../src/server/journal.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const pathIn = () => {
  const dir = mkdtempSync(join(tmpdir(), 'bbc-journal-'));
  dirs.push(dir);
  return join(dir, 'journal');
};
const linesOf = (path: string) => readFileSync(path, 'utf8').split('\n').filter(Boolean);

describe('readJournal', () => {
  it('reads nothing from a missing file, and skips a torn last line', () => {
    const path = pathIn();
    expect(readJournal(path)).toEqual([]);
    writeFileSync(path, '{"a":1}\n\n{"a":2}\n');
    appendFileSync(path, '{"a":');
    expect(readJournal(path)).toEqual([{ a: 1 }, { a: 2 }]);
  });

  it('throws what is not a missing file', () => {
    const path = pathIn();
    expect(() => readJournal(join(path, '..'))).toThrow(/EISDIR/);
  });
});

describe('openJournal', () => {
  it('compacts at open to the live lines, appends, and compacts again past twice them plus the slack', () => {
    const path = pathIn();
    writeFileSync(path, '{"old":1}\n{"old":2}\n');
    const live = [{ n: 0 }, { n: -1 }];
    const journal = openJournal<{ n: number }>(path, { live: () => live, size: () => live.length, slack: 3 });
    expect(readJournal(path)).toEqual([{ n: 0 }, { n: -1 }]);
    // 2 live lines: the bound is 2 × 2 + 3 = 7 lines; the eighth compacts.
    for (let n = 1; n <= 5; n++) journal.append({ n });
    expect(linesOf(path)).toHaveLength(7);
    journal.append({ n: 6 });
    expect(readJournal(path)).toEqual([{ n: 0 }, { n: -1 }]);
    journal.append({ n: 7 });
    expect(readJournal(path)).toEqual([{ n: 0 }, { n: -1 }, { n: 7 }]);
    journal.close();
  });

  it('slack defaults to 1000 lines', () => {
    const path = pathIn();
    const journal = openJournal<number>(path, { live: () => [], size: () => 0 });
    for (let n = 0; n < 1000; n++) journal.append(n);
    expect(linesOf(path)).toHaveLength(1000);
    journal.append(1000);
    expect(linesOf(path)).toHaveLength(0);
    journal.close();
  });
});
