// The size anchors of `npm run bench`: what comparable loaders cost a page, pinned by version
// and measured by the method scripts/size.mjs measures ours (esbuild, minified ESM, code
// splitting, each up-front file through gzip -9 and brotli 11), in the same run. The two npm
// packages are installed, at their pinned versions, into a cache folder of their own (not
// dependencies of the package or of the tests); the vendor's loader is the pinned devDependency.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { bundle } from '../scripts/size.mjs';
import { realLoaderSource, REAL_LOADER_VERSION } from '../test/support/real-loader.mjs';

export const ANCHORS = {
  '@stripe/stripe-js': {
    version: '10.2.1',
    call: `import { loadStripe } from '@stripe/stripe-js/pure'; loadStripe('pk_test_x');`,
  },
  '@fingerprintjs/fingerprintjs-pro': {
    version: '3.12.9',
    call: `import { load } from '@fingerprintjs/fingerprintjs-pro'; load({ apiKey: 'k' });`,
  },
};
const CACHE = new URL('../.blackbox-capture/bench-anchors/', import.meta.url);

const compressed = (text) => ({
  gzip: gzipSync(Buffer.from(text), { level: 9 }).length,
  brotli: brotliCompressSync(Buffer.from(text), { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
});
const summed = (texts) =>
  texts.map(compressed).reduce((a, b) => ({ gzip: a.gzip + b.gzip, brotli: a.brotli + b.brotli }), {
    gzip: 0,
    brotli: 0,
  });

/** Installs the anchors at their pinned versions into the cache folder, unless they are there already. */
function install() {
  const installed = (name) => {
    const manifest = new URL(`node_modules/${name}/package.json`, CACHE);
    return existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).version;
  };
  const missing = Object.entries(ANCHORS).filter(([name, { version }]) => installed(name) !== version);
  if (!missing.length) return;
  mkdirSync(CACHE, { recursive: true });
  execFileSync(
    'npm',
    [
      'install',
      '--prefix',
      CACHE.pathname,
      '--no-save',
      '--no-package-lock',
      '--no-audit',
      '--no-fund',
      '--ignore-scripts',
    ].concat(missing.map(([name, { version }]) => `${name}@${version}`)),
    { stdio: 'ignore', timeout: 120_000 },
  );
  for (const [name, { version }] of missing)
    if (installed(name) !== version) throw new Error(`${name}@${version} did not install into ${CACHE.pathname}`);
}

/** Each anchor's up-front bytes, as `{ name, version, files, gzip, brotli }` rows. */
export async function measureAnchors() {
  install();
  const rows = [];
  for (const [name, { version, call }] of Object.entries(ANCHORS)) {
    const { upfront } = await bundle(call, CACHE.pathname);
    rows.push({ name, version, what: call, files: upfront.length, ...summed(upfront) });
  }
  // The vendor's loader as the page downloads it: one file, as served.
  rows.push({
    name: 'the vendor loader',
    version: REAL_LOADER_VERSION,
    what: 'loader.js as served',
    files: 1,
    ...compressed(realLoaderSource()),
  });
  return rows;
}
