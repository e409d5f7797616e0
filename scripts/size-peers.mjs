#!/usr/bin/env node
// For the size decision: what comparable script loaders cost, bundled the same way as
// scripts/size.mjs bundles ours (esbuild, minified ESM, gzip -9). Not a dependency of the
// package or of the tests; install them where this runs:
//   npm install --no-save @stripe/stripe-js @googlemaps/js-api-loader @fingerprintjs/fingerprintjs-pro
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const root = new URL('..', import.meta.url);
const PEERS = {
  '@stripe/stripe-js': `import { loadStripe } from '@stripe/stripe-js'; loadStripe('pk_test_x');`,
  '@googlemaps/js-api-loader': `import { setOptions, importLibrary } from '@googlemaps/js-api-loader'; setOptions({ key: 'k' }); importLibrary('maps');`,
  '@fingerprintjs/fingerprintjs-pro': `import { load } from '@fingerprintjs/fingerprintjs-pro'; load({ apiKey: 'k' });`,
  'blackbox-capture': `import { captureBlackbox } from './dist/index.js'; captureBlackbox({ loaderUrl: '/l.js' });`,
  'bare capture sketch': `import { captureBlackbox } from './scripts/bare-capture-sketch.js'; captureBlackbox({ loaderUrl: '/l.js' });`,
};

console.log('| package | version | minified | gzip -9 |\n|---|---|---:|---:|');
for (const [name, contents] of Object.entries(PEERS)) {
  let version;
  try {
    // Read directly: not every package exports its package.json.
    const manifest = name === 'blackbox-capture' ? 'package.json' : `node_modules/${name}/package.json`;
    version = name.includes(' ') ? '—' : JSON.parse(readFileSync(new URL(manifest, root), 'utf8')).version;
  } catch {
    console.log(`| ${name} | not installed | — | — |`);
    continue;
  }
  const result = await build({ stdin: { contents, resolveDir: root.pathname, loader: 'js' }, bundle: true, minify: true, splitting: true, format: 'esm', target: 'es2020', outdir: '/virtual', write: false, metafile: true });
  // What the page loads up front: the entry and its static imports (no lazy chunks).
  const outputs = result.metafile.outputs;
  const upfront = new Set([Object.keys(outputs).find((path) => outputs[path].entryPoint)]);
  for (const path of upfront) for (const i of outputs[path].imports) if (i.kind === 'import-statement') upfront.add(i.path);
  const code = result.outputFiles.filter((file) => [...upfront].some((path) => file.path.endsWith(path.replace(/^.*?virtual/, '')))).map((file) => file.text).join('\n');
  console.log(`| ${name} | ${version} | ${code.length} | ${gzipSync(Buffer.from(code), { level: 9 }).length} |`);
}
