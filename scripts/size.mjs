#!/usr/bin/env node
// Reports what the browser package costs a checkout page: each path bundled from
// dist/ as a user's bundler would (esbuild, minified ESM), then gzip -9 and brotli.
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const root = new URL('..', import.meta.url);
const paths = {
  'ESM captureBlackbox (minimal)': `import { captureBlackbox } from './dist/index.js'; captureBlackbox({ loaderUrl: '/l.js' });`,
  'ESM captureBlackbox (field + post)': `import { captureBlackbox } from './dist/index.js'; captureBlackbox({ loaderUrl: '/l.js', field: 'bb', post: '/risk' });`,
};

export async function measure() {
  const rows = [];
  const sizes = (name, code) => {
    const bytes = Buffer.from(code);
    rows.push({
      name,
      minified: bytes.length,
      gzip: gzipSync(bytes, { level: 9 }).length,
      brotli: brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
    });
  };
  for (const [name, contents] of Object.entries(paths)) {
    const result = await build({
      stdin: { contents, resolveDir: root.pathname, loader: 'js' },
      bundle: true,
      minify: true,
      format: 'esm',
      target: 'es2020',
      write: false,
    });
    sizes(name, result.outputFiles[0].text);
  }
  sizes('UMD file (dist/blackbox-capture.umd.js)', readFileSync(new URL('dist/blackbox-capture.umd.js', root), 'utf8'));
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await measure();
  console.log('\nBrowser bundle sizes (bytes):');
  console.log('| path | minified | gzip -9 | brotli |\n|---|---:|---:|---:|');
  for (const r of rows) console.log(`| ${r.name} | ${r.minified} | ${r.gzip} | ${r.brotli} |`);
}
