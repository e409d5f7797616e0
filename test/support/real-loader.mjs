// The vendor's real loader 5.2.2, read at run time from the pinned devDependency @jumio/websdk
// (docs/vendor-contract.md#the-loader): its js/loader.*.js embeds the loader as a base64 data: URL, after a config
// preamble. It is the vendor's code: tests, the benchmark and the conformance check extract it
// here and never write it into this repository or into dist/.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REAL_LOADER_PACKAGE = '@jumio/websdk';
export const REAL_LOADER_VERSION = '5.2.2';
/** Where the loader itself starts, after the config preamble. */
const LOADER_START = '(function B()';

let cached;

/** The source of the real loader 5.2.2; throws with the way out when the package is missing. */
export function realLoaderSource() {
  if (cached) return cached;
  // Its exports map hides js/: look for the folder the way Node looks for packages.
  let root;
  for (let dir = dirname(fileURLToPath(import.meta.url)); !root; dir = dirname(dir)) {
    if (existsSync(join(dir, 'node_modules', REAL_LOADER_PACKAGE, 'package.json')))
      root = join(dir, 'node_modules', REAL_LOADER_PACKAGE);
    else if (dirname(dir) === dir)
      throw new Error(`${REAL_LOADER_PACKAGE} is not installed: run npm install (it is a devDependency)`);
  }
  const dir = join(root, 'js');
  const file = readdirSync(dir).find((name) => /^loader\.[\w-]+\.js$/.test(name));
  if (!file) throw new Error(`${REAL_LOADER_PACKAGE}: no js/loader.*.js`);
  const match = /data:text\/javascript;base64,([A-Za-z0-9+/=]+)/.exec(readFileSync(join(dir, file), 'utf8'));
  if (!match) throw new Error(`${REAL_LOADER_PACKAGE}: js/${file} embeds no data:text/javascript URL`);
  const text = Buffer.from(match[1], 'base64').toString('utf8');
  const start = text.indexOf(LOADER_START);
  if (start < 0) throw new Error(`${REAL_LOADER_PACKAGE}: the embedded script has no "${LOADER_START}"`);
  const source = text.slice(start);
  if (!source.includes(`'${REAL_LOADER_VERSION}'`))
    throw new Error(`${REAL_LOADER_PACKAGE}: the embedded loader is not ${REAL_LOADER_VERSION}`);
  return (cached = source);
}
