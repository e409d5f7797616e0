#!/usr/bin/env node
// What the browser package costs a checkout page: each path bundled from dist/ as a
// user's bundler would (esbuild: minified ESM, code splitting on, so the lazily
// imported delivery code is a chunk of its own), then gzip -9 and brotli.
// GUARDS fail `npm test` (test/package/size-budget.test.ts); TARGETS are the size goals, reported by
// `npm run bench`, not enforced.
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const root = new URL('..', import.meta.url);
export const TARGETS = { minimal: 1500, full: 1700, umd: 2500 };
/**
 * Regression guards one step (about 100 bytes) above the production build's sizes: 3474,
 * 4105 and 4385 with the development/production split (the lean-and-fast issue); 3767, 4449
 * and 4707 with capture outcomes and the degraded grace (the operations issue); 3893, 4595
 * and 5175 with the capture nonce and the consent option (the forms-and-frameworks issue);
 * 3951, 4658 and 5211 with the main-thread work (failure flags by string, loopback part by part);
 * 3957, 4662 and 5222 with failed scripts looked for only once a failure may have been seen;
 * 3979, 4693 and 5243 with a call that settles once (an abort from the final update wins) and
 * no retry after an abort that landed with an answer; 3980, 4700 and 5248 with consented calls
 * joining the page run's one delivery; 3988, 4699 and 5250 with the production build's post
 * address rule and hostile page configs as typed errors (issue #57); 3965, 4698 and 5244 with the
 * failed-script check in a chunk of its own, the capture time and the order token in the POST.
 */
export const GUARDS = { minimal: 3990, full: 4700, umd: 5280 };

const sizes = (code) => {
  const bytes = Buffer.from(code);
  return {
    minified: bytes.length,
    gzip: gzipSync(bytes, { level: 9 }).length,
    brotli: brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
  };
};

export async function bundle(contents) {
  const result = await build({
    stdin: { contents, resolveDir: root.pathname, loader: 'js', sourcefile: 'page.js' },
    bundle: true,
    minify: true,
    splitting: true,
    outdir: '/virtual',
    format: 'esm',
    target: 'es2020',
    write: false,
    metafile: true,
  });
  // Up front: the entry and the chunks it imports statically; lazy: the dynamically imported ones.
  const text = (path) =>
    result.outputFiles.find(
      (f) => f.path.endsWith(path.replace(/^.*?\/virtual/, '/virtual')) || f.path.endsWith('/' + path.split('/').pop()),
    ).text;
  const outputs = result.metafile.outputs;
  const entryPath = Object.keys(outputs).find((p) => outputs[p].entryPoint);
  const upfront = new Set([entryPath]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of [...upfront])
      for (const i of outputs[p].imports)
        if (i.kind === 'import-statement' && !upfront.has(i.path)) {
          upfront.add(i.path);
          grew = true;
        }
  }
  const js = Object.keys(outputs).filter((p) => p.endsWith('.js'));
  const join = (paths) => paths.map(text).join('\n');
  // The messages chunk is loaded only when something fails; the delivery chunk when `post` is used.
  const lazy = (name) => js.filter((p) => !upfront.has(p) && p.includes(name));
  return { entry: join([...upfront]), delivery: join(lazy('deliver')), messages: join(lazy('messages')) };
}

export async function measure() {
  const minimal = await bundle(
    `import { captureBlackbox } from './dist/index.js'; captureBlackbox({ loaderUrl: '/l.js' });`,
  );
  const full = await bundle(
    `import { captureBlackbox } from './dist/index.js'; captureBlackbox({ loaderUrl: '/l.js', field: 'bb', post: '/risk' });`,
  );
  const umd = readFileSync(new URL('dist/blackbox-capture.umd.js', root), 'utf8');
  const developmentMinimal = await bundle(
    `import { captureBlackbox } from './dist/index.development.js'; captureBlackbox({ loaderUrl: '/l.js' });`,
  );
  const developmentUmd = readFileSync(new URL('dist/blackbox-capture.development.umd.js', root), 'utf8');
  return {
    // What every page loads up front with the minimal call.
    minimal: {
      ...sizes(minimal.entry),
      deliveryCodeUpfront: /idempotency-key/.test(minimal.entry),
      messagesUpfront: /ad blocker/.test(minimal.entry),
      // The entries of their own and the consent chunk: none of their code is on the minimal path.
      entriesUpfront: [
        '__tcfapi',
        'ReportingObserver',
        'consent_timeout',
        'customElements',
        'attachInternals',
        'useSyncExternalStore',
        // The framework bindings' (element, React, Vue, Svelte): the checkout id they post with.
        'checkout-id',
      ].filter((marker) => minimal.entry.includes(marker)),
    },
    // Up front plus the delivery chunk, loaded when `post` is used: what a page that captures and delivers loads.
    full: {
      ...sizes(full.entry + '\n' + full.delivery),
      upfront: sizes(full.entry).gzip,
      lazy: sizes(full.delivery).gzip,
    },
    // Loaded only when a call fails, to write the error's message.
    messages: sizes(full.messages),
    // The script-tag file: everything but the message texts, which it imports from beside it on failure.
    umd: { ...sizes(umd), messagesInside: /ad blocker/.test(umd) },
    // The development build (every check, the warnings): what a page costs in development only.
    development: { minimal: sizes(developmentMinimal.entry), umd: sizes(developmentUmd) },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const m = await measure();
  console.log(
    '\nBrowser bundle sizes, production build unless named (bytes; the guards, gzip -9, fail npm test; the size targets are in npm run bench):',
  );
  console.log('| path | minified | gzip -9 | brotli | guard |\n|---|---:|---:|---:|---:|');
  console.log(
    `| ESM captureBlackbox (minimal) | ${m.minimal.minified} | ${m.minimal.gzip} | ${m.minimal.brotli} | ${GUARDS.minimal} |`,
  );
  console.log(
    `| ESM captureBlackbox (field + post: up front ${m.full.upfront} + lazy ${m.full.lazy}) | ${m.full.minified} | ${m.full.gzip} | ${m.full.brotli} | ${GUARDS.full} |`,
  );
  console.log(`| UMD file | ${m.umd.minified} | ${m.umd.gzip} | ${m.umd.brotli} | ${GUARDS.umd} |`);
  console.log(
    `| ESM messages chunk (loaded only on failure) | ${m.messages.minified} | ${m.messages.gzip} | ${m.messages.brotli} | — |`,
  );
  console.log(
    `| development build: ESM minimal | ${m.development.minimal.minified} | ${m.development.minimal.gzip} | ${m.development.minimal.brotli} | — |`,
  );
  console.log(
    `| development build: UMD file | ${m.development.umd.minified} | ${m.development.umd.gzip} | ${m.development.umd.brotli} | — |`,
  );
  if (m.minimal.deliveryCodeUpfront) console.log('WARNING: the delivery code is in the minimal path');
  if (m.minimal.messagesUpfront) console.log('WARNING: the messages are in the minimal path');
  if (m.umd.messagesInside) console.log('WARNING: the messages are inside the UMD file');
}
