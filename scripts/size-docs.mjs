#!/usr/bin/env node
// The size figures of the docs, written from one source: scripts/size.mjs's measure() of dist/.
// `node scripts/size-docs.mjs --write` (after `npm run build`) rewrites the block between the
// `<!-- size-figures -->` markers of docs/performance.md; test/package/size-budget.test.ts
// fails when the committed block is not what the build measures. `npm run bench` prints the
// same table, with the pinned anchors (bench/anchors.mjs) beside it.
import { readFileSync, writeFileSync } from 'node:fs';
import { GUARDS, measure, TARGETS } from './size.mjs';

const DOC = new URL('../docs/performance.md', import.meta.url);
const START = '<!-- size-figures: written by node scripts/size-docs.mjs --write -->';
const END = '<!-- /size-figures -->';
const n = (value) => value.toLocaleString('en-US');

/** The size table: each path as the files a page downloads, each file compressed on its own; anchors when given. */
export function sizeTable(m, anchors = []) {
  const rows = [
    ['minimal: `captureBlackbox({ loaderUrl })`', m.minimal, TARGETS.minimal, GUARDS.minimal],
    [
      `field + post: ${m.full.files} files, ${n(m.full.upfront)} up front + ${n(m.full.lazy)} the delivery chunk`,
      m.full,
      TARGETS.full,
      GUARDS.full,
    ],
    ['UMD file: all a tag that starts a capture loads', { files: 1, ...m.umd }, TARGETS.umd, GUARDS.umd],
    ['messages chunk, loaded only when a call fails', m.messages],
    ['development build: minimal', m.development.minimal],
    ['development build: UMD file', { files: 1, ...m.development.umd }],
  ];
  const lines = [
    '| what a page loads | files | minified | gzip -9 | brotli 11 | target (gzip) | guard (gzip) |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      ([name, size, target, guard]) =>
        `| ${name} | ${size.files} | ${n(size.minified)} | ${n(size.gzip)} | ${n(size.brotli)} | ${target ? '≤ ' + n(target) : '—'} | ${guard ? n(guard) : '—'} |`,
    ),
    ...anchors.map(
      (a) =>
        `| anchor: ${a.name} ${a.version}, ${a.what.replace(/\|/g, '\\|')} | ${a.files} | — | ${n(a.gzip)} | ${n(a.brotli)} | — | — |`,
    ),
  ];
  return lines.join('\n');
}

/** The docs' block, as the current dist/ measures. */
export async function sizeBlock() {
  return `${START}\n${sizeTable(await measure())}\n${END}`;
}

/** The block as committed in docs/performance.md. */
export function committedBlock() {
  const text = readFileSync(DOC, 'utf8');
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/performance.md has no ${START} … ${END} block`);
  return text.slice(start, end + END.length);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const block = await sizeBlock();
  if (process.argv.includes('--write')) {
    writeFileSync(DOC, readFileSync(DOC, 'utf8').replace(committedBlock(), block));
    console.log('docs/performance.md: size figures written');
  } else console.log(block);
}
