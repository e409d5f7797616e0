// The size figures of the docs, from one source: scripts/size.mjs's measure() of dist/.
// `node scripts/reference-docs.mjs --write` (after `npm run build`) writes them into the
// `size-figures` block of docs/performance.md, beside the other generated lists;
// test/package/size-budget.test.ts fails when the committed block is not what the build
// measures. `npm run bench` prints the same table, with the pinned anchors (bench/anchors.mjs).
import { measure, GUARDS, TARGETS } from './size.mjs';

const n = (value) => value.toLocaleString('en-US');

/** The size table: each path as the files a page downloads, each file compressed on its own; anchors when given. */
export function sizeTable(m, anchors = []) {
  const rows = [
    [
      'minimal: `captureBlackbox({ loaderUrl })` from `blackbox-capture/lean`',
      m.minimal,
      TARGETS.minimal,
      GUARDS.minimal,
    ],
    [
      "the full entry's smallest call: `captureBlackbox({ loaderUrl })` from `blackbox-capture`",
      m.mainMinimal,
      TARGETS.mainMinimal,
      GUARDS.mainMinimal,
    ],
    [
      `field + post: ${m.full.files} files, ${n(m.full.upfront)} up front + ${n(m.full.lazy)} the delivery chunk`,
      m.full,
      TARGETS.full,
      GUARDS.full,
    ],
    ['UMD file: all a tag that starts a capture loads', { files: 1, ...m.umd }, TARGETS.umd, GUARDS.umd],
    ['messages chunk, loaded only when a call fails', m.messages],
    ['claim file: fetched only by a script tag with `data-checkout-id`', { files: 1, ...m.claim }],
    ['TCF consent entry (`blackbox-capture/tcf`), for a page that imports it', m.tcf],
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

/** The generated blocks of the size figures, by file (scripts/reference-docs.mjs). */
export async function sizeFiles() {
  return { 'docs/performance.md': { 'size-figures': sizeTable(await measure()) } };
}
