#!/usr/bin/env node
// npm run mutation:table: the per-file mutation scores of docs/mutation.md, from Stryker's
// JSON reports (reports/mutation/*.json, written by `npm run mutation`). A run measures the
// files it mutated; the rows of the other files stay as their last run left them, so the
// table is the latest score of every core file. `--print` writes the table to stdout instead;
// `--reports <dir>` and `--doc <file>` read and write elsewhere (the test of this command).
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { blocksIn, rewrite } from './reference-docs.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
// The markers of every generated list (scripts/reference-docs.mjs), naming this command.
const BLOCK = 'mutation-table';
const HEADER = [
  '| file | score | killed | timed out | survived | no coverage | measured |',
  '|---|---:|---:|---:|---:|---:|---|',
];

/** Counts of one file's mutants by Stryker status, and the score Stryker gives it. */
export function scoreOf(mutants) {
  const count = (status) => mutants.filter((mutant) => mutant.status === status).length;
  const killed = count('Killed');
  const timedOut = count('Timeout');
  const survived = count('Survived');
  const noCoverage = count('NoCoverage');
  const detected = killed + timedOut;
  const valid = detected + survived + noCoverage;
  // Ignored, compile and runtime errors count for nothing, as in Stryker's own score.
  return { killed, timedOut, survived, noCoverage, score: valid ? (detected / valid) * 100 : undefined };
}

/** A table row; `file` relative to src/. */
export function rowOf(file, counts, measured) {
  const score = counts.score === undefined ? '—' : `**${counts.score.toFixed(1)} %**`;
  const cells = [`\`${file}\``, score, counts.killed, counts.timedOut, counts.survived, counts.noCoverage, measured];
  return `| ${cells.join(' | ')} |`;
}

/** The rows of the table between the markers, by file. */
export function rowsOf(doc) {
  const table = blocksIn(doc)[BLOCK];
  if (table === undefined) throw new Error(`the table's markers are missing: <!-- generated: ${BLOCK} (…) -->`);
  const rows = new Map();
  for (const line of table.split('\n')) {
    const file = /^\| `([^`]+)` \|/.exec(line)?.[1];
    if (file) rows.set(file, line);
  }
  return rows;
}

/** New rows for every file of every report, the newest report winning. */
export function measuredRows(reportsDir) {
  if (!existsSync(reportsDir)) return new Map();
  const reports = readdirSync(reportsDir)
    .filter((name) => name.endsWith('.json'))
    .map((name) => join(reportsDir, name))
    .map((path) => ({ path, at: statSync(path).mtime }))
    .sort((a, b) => a.at - b.at);
  const rows = new Map();
  for (const { path, at } of reports) {
    const report = JSON.parse(readFileSync(path, 'utf8'));
    if (!report.files) throw new Error(`${path} is not a Stryker JSON report (no "files")`);
    for (const [name, { mutants }] of Object.entries(report.files)) {
      const file = name.replace(/\\/g, '/').replace(/^.*?src\//, '');
      rows.set(file, rowOf(file, scoreOf(mutants), at.toISOString().slice(0, 10)));
    }
  }
  return rows;
}

/** The table with `rows` merged into those of `doc`, sorted by file. */
export function tableOf(doc, rows) {
  const merged = new Map([...rowsOf(doc), ...rows]);
  const sorted = [...merged.keys()].sort().map((file) => merged.get(file));
  return [...HEADER, ...sorted].join('\n');
}

/** `doc` with its table replaced by `table`. */
export const withTable = (doc, table) => rewrite(doc, { [BLOCK]: table });

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      reports: { type: 'string', default: join(ROOT, 'reports/mutation') },
      doc: { type: 'string', default: join(ROOT, 'docs/mutation.md') },
      print: { type: 'boolean', default: false },
    },
  });
  const doc = readFileSync(values.doc, 'utf8');
  const rows = measuredRows(values.reports);
  const table = tableOf(doc, rows);
  if (values.print) console.log(table);
  else {
    writeFileSync(values.doc, withTable(doc, table));
    console.log(`${values.doc}: ${rows.size} file(s) measured, ${rowsOf(withTable(doc, table)).size} in the table`);
  }
}
