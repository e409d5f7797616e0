// A TypeScript module of this repository imported from plain JavaScript (a script, a bench):
// bundled with esbuild into node_modules/.cache/, its packages left external, then imported.
// Node cannot import the sources as they are: their imports name `.js` files that are `.ts`.
import { mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The module at `path` (from the repository's root), bundled afresh into `node_modules/.cache/<cache>/`. */
export async function importSource(path, cache) {
  const { build } = await import('esbuild');
  const dir = join(ROOT, 'node_modules/.cache', cache);
  mkdirSync(dir, { recursive: true });
  const outfile = join(dir, basename(path).replace(/\.ts$/, '.mjs'));
  await build({
    entryPoints: [join(ROOT, path)],
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    outfile,
    logLevel: 'warning',
  });
  return import(`${pathToFileURL(outfile).href}?${Date.now()}`);
}
