#!/usr/bin/env node
// What comparable script loaders cost, bundled the same way as
// scripts/size.mjs bundles ours (esbuild, minified ESM, gzip -9). Not a dependency of the
// package or of the tests; install them where this runs:
//   npm install --no-save @stripe/stripe-js @googlemaps/js-api-loader @fingerprintjs/fingerprintjs-pro
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { bundle } from './size.mjs';

const root = new URL('..', import.meta.url);
const PEERS = {
  '@stripe/stripe-js': `import { loadStripe } from '@stripe/stripe-js'; loadStripe('pk_test_x');`,
  '@googlemaps/js-api-loader': `import { setOptions, importLibrary } from '@googlemaps/js-api-loader'; setOptions({ key: 'k' }); importLibrary('maps');`,
  '@fingerprintjs/fingerprintjs-pro': `import { load } from '@fingerprintjs/fingerprintjs-pro'; load({ apiKey: 'k' });`,
  'blackbox-capture': `import { captureBlackbox } from './dist/index.js'; captureBlackbox({ loaderUrl: '/l.js' });`,
};

console.log('| package | version | minified | gzip -9 |\n|---|---|---:|---:|');
for (const [name, contents] of Object.entries(PEERS)) {
  let version;
  try {
    // Read directly: not every package exports its package.json.
    const manifest = name === 'blackbox-capture' ? 'package.json' : `node_modules/${name}/package.json`;
    version = JSON.parse(readFileSync(new URL(manifest, root), 'utf8')).version;
  } catch {
    console.log(`| ${name} | not installed | — | — |`);
    continue;
  }
  // What the page loads up front, as size.mjs measures ours: the entry and its static imports.
  const code = (await bundle(contents)).entry;
  console.log(`| ${name} | ${version} | ${code.length} | ${gzipSync(Buffer.from(code), { level: 9 }).length} |`);
}
