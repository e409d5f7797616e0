// npm run mutation:table: docs/mutation.md's rows from Stryker's JSON reports, the rows of
// files no report measured kept as they were.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error -- a command's module, without types
import { rowsOf, scoreOf } from '../../scripts/mutation-table.mjs';

const COMMAND = new URL('../../scripts/mutation-table.mjs', import.meta.url).pathname;
const mutants = (statuses: Record<string, number>) =>
  Object.entries(statuses).flatMap(([status, n]) => Array.from({ length: n }, () => ({ status })));
const DOC = [
  '# Scores',
  '<!-- generated: mutation-table (npm run mutation:table) -->',
  '| file | score | killed | timed out | survived | no coverage | measured |',
  '|---|---:|---:|---:|---:|---:|---|',
  '| `server/kept.ts` | **90.0 %** | — | — | 1 | 0 | — |',
  '| `server/old.ts` | **50.0 %** | 1 | 0 | 1 | 0 | 2026-01-01 |',
  '<!-- /generated: mutation-table -->',
  'after',
].join('\n');

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('npm run mutation:table', () => {
  it('scores killed and timed-out over all but ignored and errors, as Stryker does', () => {
    const counts = scoreOf(mutants({ Killed: 6, Timeout: 2, Survived: 1, NoCoverage: 1, Ignored: 9, CompileError: 3 }));
    expect(counts).toEqual({ killed: 6, timedOut: 2, survived: 1, noCoverage: 1, score: 80 });
    expect(scoreOf([]).score).toBeUndefined();
  });

  it('replaces the rows a report measured, the newest report winning, and keeps the rest', () => {
    dir = mkdtempSync(join(tmpdir(), 'mutation-table-'));
    const reports = join(dir, 'reports');
    spawnSync('mkdir', [reports]);
    const report = (name: string, files: Record<string, Record<string, number>>, at: number) => {
      const path = join(reports, name);
      const entries = Object.entries(files).map(([file, statuses]) => [file, { mutants: mutants(statuses) }]);
      writeFileSync(path, JSON.stringify({ files: Object.fromEntries(entries) }));
      utimesSync(path, at, at);
    };
    report('a.json', { 'src/server/old.ts': { Killed: 1, Survived: 3 } }, 1_000_000);
    report(
      'b.json',
      { 'src/server/old.ts': { Killed: 17, Timeout: 1, Survived: 2 }, 'src/server/new.ts': {} },
      2_000_000,
    );
    const doc = join(dir, 'mutation.md');
    writeFileSync(doc, DOC);
    const run = spawnSync(process.execPath, [COMMAND, '--reports', reports, '--doc', doc], { encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    const written = readFileSync(doc, 'utf8');
    expect([...(rowsOf(written) as Map<string, string>).values()]).toEqual([
      '| `server/kept.ts` | **90.0 %** | — | — | 1 | 0 | — |',
      '| `server/new.ts` | — | 0 | 0 | 0 | 0 | 1970-01-24 |',
      '| `server/old.ts` | **90.0 %** | 17 | 1 | 2 | 0 | 1970-01-24 |',
    ]);
    expect(written.startsWith('# Scores\n')).toBe(true);
    expect(written.endsWith('<!-- /generated: mutation-table -->\nafter')).toBe(true);
  });

  it('refuses a doc without its markers, and a JSON file that is no Stryker report', () => {
    dir = mkdtempSync(join(tmpdir(), 'mutation-table-'));
    const doc = join(dir, 'mutation.md');
    writeFileSync(doc, '# no table');
    const noMarkers = spawnSync(process.execPath, [COMMAND, '--reports', dir, '--doc', doc], { encoding: 'utf8' });
    expect(noMarkers.status).not.toBe(0);
    expect(noMarkers.stderr).toContain('markers are missing');
    writeFileSync(doc, DOC);
    writeFileSync(join(dir, 'other.json'), '{}');
    const notReport = spawnSync(process.execPath, [COMMAND, '--reports', dir, '--doc', doc], { encoding: 'utf8' });
    expect(notReport.stderr).toContain('is not a Stryker JSON report');
  });

  it("keeps docs/mutation.md's table in the command's form", () => {
    const rows = rowsOf(readFileSync(new URL('../../docs/mutation.md', import.meta.url), 'utf8')) as Map<
      string,
      string
    >;
    expect(rows.size).toBeGreaterThan(20);
    for (const row of rows.values())
      expect(row).toMatch(/^\| `[\w./-]+` \| (\*\*\d+\.\d %\*\*|—) (\| (\d+|—) ){4}\| (\d{4}-\d\d-\d\d|—) \|$/);
  });
});
