#!/usr/bin/env node
// The reference lists of docs/ and src/gateway/openapi.json, written from the code's own tables:
// one command, one marker format (CONTRIBUTING.md#generated-lists).
//
//   node scripts/reference-docs.mjs --write   rewrites every generated block
//   node scripts/reference-docs.mjs --check   exits 1 naming each stale block
//
// A block of a markdown file sits between `<!-- generated: NAME (…) -->` and
// `<!-- /generated: NAME -->`; a generated value of a JSON file is named by its JSON pointer.
// The blocks come from scripts/reference-blocks.ts (the code's tables: options, regions, gateway
// variables, metrics, outcomes, codes), bundled here with esbuild, and from scripts/size.mjs's
// measure of dist/ (the size figures: only when dist/ exists, so after `npm run build`).
// test/scripts/reference-docs.test.ts (unit) and test/package/size-budget.test.ts (built) fail
// when a committed block is not what this command writes.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { importSource } from './import-source.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const COMMAND = 'node scripts/reference-docs.mjs --write';

/** A block's markers; `command` is what writes it (this command, or `npm run mutation:table`). */
const begin = (name, command = COMMAND) => `<!-- generated: ${name} (${command}) -->`;
const end = (name) => `<!-- /generated: ${name} -->`;
const MARKER = /<!-- (\/?)generated: ([\w-]+)( \([^)]+\))? -->/g;

/** Each generated block of a markdown text, by name: where its lines start and end, and the lines. */
function parse(text) {
  const found = {};
  const open = [];
  for (const match of text.matchAll(MARKER)) {
    const [marker, closing, name, command] = match;
    if (!closing) {
      if (!command) throw new Error(`the block ${name} must name its command: ${begin(name)}`);
      open.push({ name, from: match.index + marker.length });
    } else {
      const last = open.pop();
      if (last?.name !== name) throw new Error(`${end(name)} closes no open block ${name}`);
      if (name in found) throw new Error(`two blocks named ${name}`);
      const body = text.slice(last.from, match.index).replace(/^\n/, '').replace(/\n$/, '');
      found[name] = { from: last.from, to: match.index, body };
    }
  }
  if (open.length) throw new Error(`the block ${open[0].name} is never closed (${end(open[0].name)})`);
  return found;
}

/** The generated blocks of a markdown text, by name: the lines between their markers. */
export function blocksIn(text) {
  return Object.fromEntries(Object.entries(parse(text)).map(([name, { body }]) => [name, body]));
}

/** `text` with each named block's lines replaced by `blocks[name]`; every name must have its markers. */
export function rewrite(text, blocks) {
  const present = parse(text);
  for (const name of Object.keys(blocks))
    if (!(name in present)) throw new Error(`no block ${name}: add ${begin(name)} … ${end(name)}`);
  // From the last block to the first, so that the places of those before stay true.
  return Object.keys(blocks)
    .sort((a, b) => present[b].from - present[a].from)
    .reduce(
      (out, name) => `${out.slice(0, present[name].from)}\n${blocks[name]}\n${out.slice(present[name].to)}`,
      text,
    );
}

const pointer = (path) =>
  path
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));

/** The value at a JSON pointer (`/components/schemas/…`), or undefined. */
export function valueAt(document, path) {
  return pointer(path).reduce((value, key) => (value === undefined ? undefined : value[key]), document);
}

function setAt(document, path, value) {
  const keys = pointer(path);
  const parent = valueAt(document, `/${keys.slice(0, -1).join('/')}`.replace(/^\/$/, ''));
  if (parent === undefined || typeof parent !== 'object') throw new Error(`no place for ${path}`);
  parent[keys.at(-1)] = value;
}

/**
 * The places that differ from what the code says, one line each: `file: block NAME …`.
 * `files` maps a path (from the repository's root) to its blocks: markdown blocks by name,
 * JSON values by pointer. `read` gives a file's committed text.
 */
export function staleBlocks(files, read = (path) => readFileSync(`${ROOT}/${path}`, 'utf8')) {
  const problems = [];
  for (const [path, blocks] of Object.entries(files)) {
    const text = read(path);
    if (path.endsWith('.json')) {
      const document = JSON.parse(text);
      for (const [at, value] of Object.entries(blocks))
        if (JSON.stringify(valueAt(document, at)) !== JSON.stringify(value))
          problems.push(`${path}: ${at} is not what the code says`);
      continue;
    }
    const present = blocksIn(text);
    for (const [name, body] of Object.entries(blocks)) {
      if (!(name in present)) problems.push(`${path}: no block ${name} (${begin(name)} … ${end(name)})`);
      else if (present[name] !== body) problems.push(`${path}: block ${name} is not what the code says`);
    }
  }
  return problems;
}

const INTEGER_KEY = '~integer~';

/** Writes every block of `files`; a JSON file is formatted as prettier formats it. */
async function writeBlocks(files) {
  const written = [];
  for (const [path, blocks] of Object.entries(files)) {
    const file = `${ROOT}/${path}`;
    const text = readFileSync(file, 'utf8');
    let out;
    if (path.endsWith('.json')) {
      // Keys such as "429" keep their place: JavaScript puts integer keys of an object first.
      const document = JSON.parse(text.replace(/"(\d+)":/g, `"${INTEGER_KEY}$1":`));
      for (const [at, value] of Object.entries(blocks))
        setAt(document, at.replace(/\/(\d+)(?=\/|$)/g, `/${INTEGER_KEY}$1`), value);
      const json = JSON.stringify(document, null, 2).replaceAll(`"${INTEGER_KEY}`, '"');
      const prettier = await import('prettier');
      const options = (await prettier.resolveConfig(file)) ?? {};
      out = await prettier.format(json, { ...options, filepath: file });
    } else out = rewrite(text, blocks);
    if (out !== text) {
      writeFileSync(file, out);
      written.push(path);
    }
  }
  return written;
}

/** Merges block maps by file. */
const merge = (...maps) => {
  const out = {};
  for (const map of maps) for (const [path, blocks] of Object.entries(map)) out[path] = { ...out[path], ...blocks };
  return out;
};

/** The code's blocks: scripts/reference-blocks.ts, bundled with esbuild (its imports are TypeScript). */
async function codeBlocks() {
  const module = await importSource('scripts/reference-blocks.ts', 'reference-docs');
  return module.referenceBlocks();
}

/** The size figures' blocks, from dist/ as `npm run build` left it; none without a build. */
async function sizeBlocks() {
  if (!existsSync(`${ROOT}/dist/index.js`)) return undefined;
  const { sizeFiles } = await import('./size-docs.mjs');
  return sizeFiles();
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const sizes = await sizeBlocks();
  if (!sizes) console.warn('no dist/: the size figures are left as they are (npm run build first)');
  const files = merge(await codeBlocks(), sizes ?? {});
  if (process.argv.includes('--write')) {
    const written = await writeBlocks(files);
    console.log(written.length ? `written: ${written.join(', ')}` : 'every generated block is current');
  } else {
    const problems = staleBlocks(files);
    for (const problem of problems) console.error(`${problem}: run ${COMMAND}`);
    if (problems.length) process.exitCode = 1;
    else console.log('every generated block is current');
  }
}
