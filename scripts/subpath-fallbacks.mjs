#!/usr/bin/env node
// Subpath fallbacks for resolvers that do not read the `exports` map: Parcel by default
// (its `packageExports` is opt-in) and TypeScript's `moduleResolution: "node"` (node10).
// Both resolve `blackbox-capture/react` as the folder `react/` of the package and read its
// package.json, so each subpath gets one, written from the exports map (the one source):
// `main` and `types` from its `require` entry, `module` from its `import` entry, the
// production build in both. `npm run build` writes them beside dist/ (git ignores them), so
// that every `npm pack`, with or without scripts, has them.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Each JavaScript subpath (not the root, not package.json or the proxy recipes) and its fallback's fields. */
export function fallbacks() {
  const { exports } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  return Object.entries(exports)
    .filter(([subpath, target]) => subpath !== '.' && typeof target === 'object')
    .map(([subpath, { import: esm, require: cjs }]) => {
      const folder = subpath.slice(2);
      // Paths relative to the fallback's own folder, as its package.json reads them.
      const from = (path) => relative(folder, path.slice(2));
      return { folder, manifest: { main: from(cjs.default), module: from(esm.default), types: from(cjs.types) } };
    });
}

/** The top folders of the fallbacks (`server` for `server` and `server/redis`): what `files` must list. */
export const fallbackFolders = () => [...new Set(fallbacks().map(({ folder }) => folder.split('/')[0]))].sort();

/** Writes the fallback folders at the package root. */
export function writeFallbacks() {
  for (const { folder, manifest } of fallbacks()) {
    mkdirSync(join(root, folder), { recursive: true });
    writeFileSync(join(root, folder, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
  }
}

if (import.meta.url === `file://${process.argv[1]}`) writeFallbacks();
