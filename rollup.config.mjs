// Builds the three parts of the package:
// - the browser package: an ES module for bundlers, a minified UMD file for script
//   tags (global BlackboxCapture), one bundled declaration file;
// - the Node side (server kit, emulator): ES modules for Node 22+ (and Deno, Bun), with declarations.
import { nodeResolve } from '@rollup/plugin-node-resolve';
import terser from '@rollup/plugin-terser';
import { transform } from 'esbuild';
import { builtinModules } from 'node:module';
import { dts } from 'rollup-plugin-dts';

// TypeScript to JavaScript, one file at a time (esbuild: isolatedModules holds, so no file needs
// another to be compiled). Types are checked once, by `npm run typecheck`, not by each of the
// build's variants: that was two thirds of the build's time.
const TS_SOURCE = /\.tsx?$/;
const ts = () => ({
  name: 'typescript-by-esbuild',
  async resolveId(source, importer, options) {
    // The sources import each other as './x.js' (what Node and tsc resolve): find x.ts.
    if (!importer || !TS_SOURCE.test(importer) || !/^\.\.?\/.*\.js$/.test(source)) return null;
    return this.resolve(source.replace(/\.js$/, '.ts'), importer, { ...options, skipSelf: true });
  },
  async transform(code, id) {
    if (!TS_SOURCE.test(id)) return null;
    const result = await transform(code, {
      loader: 'ts',
      target: 'es2020',
      format: 'esm',
      sourcefile: id,
      supported: { 'top-level-await': true },
      tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true, useDefineForClassFields: false } },
    });
    return { code: result.code, map: null };
  },
});

// Every byte of the browser files is paid by every checkout page. The preamble is V8's
// explicit compile hint (Chromium 136+; a plain comment elsewhere): compile every function
// with the script, on the streaming thread, instead of each on its first call on the
// page's main thread, where the capture call runs (measured: 2.2 ms -> 1.4 ms per call).
const minify = {
  ecma: 2020,
  module: true,
  compress: { passes: 3, unsafe_arrows: true },
  format: { comments: false, preamble: '//# allFunctionsCalledOnLoad' },
};

/**
 * The UMD file without its AMD branch (docs/browser.md#the-script-tag): a script tag's file runs
 * as it loads, so that its tag starts a capture. Handed to a page's AMD loader instead (RequireJS,
 * on every Magento storefront), an anonymous define() from a plain tag is refused ("mismatched
 * anonymous define() module") and the file never runs: no window.BlackboxCapture, no start. It
 * sets the global, or module.exports under require() (the .cjs copy).
 */
const withoutAmd = () => ({
  name: 'without-amd',
  renderChunk(code) {
    const branch = /typeof define\s*===\s*'function'\s*&&\s*define\.amd\s*\?\s*define\([^)]*\)\s*:\s*/;
    if (!branch.test(code)) throw new Error("rollup's UMD wrapper changed: its AMD branch was not found");
    return { code: code.replace(branch, ''), map: null };
  },
});

/** The message texts' module, which the UMD file imports from beside itself. */
const MESSAGES_MODULE = /(^|\/)messages\.js$/;
/** The package's browser entry, which the element imports from beside itself (dist/index.js). */
const BROWSER_ENTRY = /(^|\/)(src\/browser\/)?index(\.ts|\.js)?$/;
/** The failed-script check, loaded only when a script fails, which the UMD file imports from beside itself. */
const UNPARSED_MODULE = /(^|\/)unparsed\.js$/;
/** The TCF adapter (data-consent="tcf:…"), which the UMD file imports from beside itself: dist/tcf.js. */
const TCF_MODULE = /(^|\/)tcf\.js$/;
/** The script tag's checkout claim (data-checkout-id), which the UMD file imports from beside itself: dist/browser-claim.js. */
const TAG_CHECKOUT_MODULE = /(^|\/)tag-checkout\.js$/;
/** The element's entry, which Vue's <BlackboxCapture> loads from beside itself (dist/element.js). */
const ELEMENT_MODULE = /(^|\/)element\.js$/;

const nodeEntries = {
  server: 'src/server/index.ts',
  'server-redis': 'src/server/store/redis.ts',
  'server-bullmq': 'src/server/queue/bullmq.ts',
  'server-file-queue': 'src/server/queue/file.ts',
  'server-status': 'src/server/status/index.ts',
  'server-parts': 'src/server/parts.ts',
  emulator: 'src/emulator/index.ts',
};
// htmlparser2 is a dependency of the package: the command imports it from node_modules.
const nodeExternal = (id) =>
  id.startsWith('node:') ||
  builtinModules.includes(id) ||
  id === 'playwright-core' ||
  id === 'htmlparser2' ||
  id === 'bullmq';

// Declarations: one self-contained file per entry and module kind (.d.ts for import,
// .d.cts for require), so that neither points into a declaration of the other kind: one build per
// entry, written twice (the same text suits both).
// They are rolled up from the declarations tsc writes once for all of src (build:types): read
// from .d.ts files, rollup-plugin-dts needs no type checker of its own for each entry.
const TYPES = '.build/types';
const declarations = (input, name, extra = {}) => [
  {
    input: input.replace(/^src\//, `${TYPES}/`).replace(/\.ts$/, '.d.ts'),
    output: ['d.ts', 'd.cts'].map((ext) => ({ file: `dist/${name}.${ext}`, format: 'es', ...extra })),
    // Vue's types stay Vue's: blackbox-capture/vue's declarations import them from 'vue'.
    external: (id) => nodeExternal(id) || id === 'vue',
    plugins: [dts()],
  },
];

/**
 * The production build swaps each browser module that has a `<name>.production.ts`
 * twin for it: options.ts (every rule) for the rules production keeps, warnings.ts
 * for none. The development build is the sources as they are.
 */
const productionTwins = () => ({
  name: 'production-twins',
  async resolveId(source, importer, options) {
    if (!importer || !/^\.\/(options|warnings)\.js$/.test(source)) return null;
    return this.resolve(source.replace(/\.js$/, '.production.js'), importer, { ...options, skipSelf: true });
  },
});

/**
 * The modules the edge build swaps for their stand-ins (x.edge.ts beside them): the Node adapter's upstream
 * (the proxy's node:http path, as src/server/proxy/upstream.ts imports it) and the default queue's file
 * (src/server/queue/data-dir.ts, as queue/default.ts imports it: no file system, the queue in memory).
 */
const NODE_UPSTREAM = /(^|\/)(adapter\/node\/upstream|\.\/data-dir)\.js$/;

/**
 * The edge build: the modules above are replaced by their stand-ins, and any other import
 * of Node's modules fails the build, so that a Worker bundling dist/server.edge.js never meets one.
 */
const withoutNode = () => ({
  name: 'without-node',
  async resolveId(source, importer, options) {
    if (source.startsWith('node:') || builtinModules.includes(source))
      this.error(`the edge build of the server kit imports ${source} (from ${importer})`);
    if (importer && NODE_UPSTREAM.test(source))
      return this.resolve(source.replace(/\.js$/, '.edge.js'), importer, { ...options, skipSelf: true });
    return null;
  },
});

/** The browser files of one build: ESM and CommonJS for bundlers and require(), UMD for script tags. */
function browserBuild(build) {
  const production = build === 'production';
  const suffix = production ? '' : '.development';
  const chunks = production ? 'browser' : 'browser-development';
  const twins = production ? [productionTwins()] : [];
  return [
    {
      // The delivery code is a chunk of its own (dynamic import): pages that do not
      // use `post` never load it, and bundlers keep it out of the main chunk. The lean entry
      // shares the page's run with the full one: one chunk of both (browser-loader-run.js), so that a
      // page that imports both has one run.
      input: { [`index${suffix}`]: 'src/browser/index.ts', [`lean${suffix}`]: 'src/browser/lean.ts' },
      output: [
        { dir: 'dist', format: 'es', entryFileNames: '[name].js', chunkFileNames: `${chunks}-[name].js` },
        // For require() (tests, server rendering in CommonJS): the same code as CommonJS.
        {
          dir: 'dist',
          format: 'cjs',
          entryFileNames: '[name].cjs',
          chunkFileNames: `${chunks}-[name].cjs`,
          exports: 'named',
        },
      ],
      preserveEntrySignatures: 'strict',
      plugins: [...twins, ts(), terser(minify)],
    },
    {
      // One file, but for the message texts: a script tag pays for them only when a call
      // fails, when the file imports the ES chunk beside it (dynamic import works in classic
      // scripts, relative to the script's own URL, with its nonce). The delivery code stays
      // inside: `post` must not depend on a second file being deployed. The .cjs copy is the
      // same file for require(). Both builds share the one messages chunk.
      input: 'src/browser/umd.ts',
      external: (id) =>
        MESSAGES_MODULE.test(id) || TCF_MODULE.test(id) || UNPARSED_MODULE.test(id) || TAG_CHECKOUT_MODULE.test(id),
      output: ['js', 'cjs'].map((ext) => ({
        file: `dist/blackbox-capture${suffix}.umd.${ext}`,
        format: 'umd',
        name: 'BlackboxCapture',
        exports: 'named',
        inlineDynamicImports: true,
        // The inlined chunks' namespace objects reach only this file's own code: no freeze to pay for.
        freeze: false,
        paths: (id) =>
          MESSAGES_MODULE.test(id)
            ? './browser-messages.js'
            : UNPARSED_MODULE.test(id)
              ? './browser-unparsed.js'
              : TCF_MODULE.test(id)
                ? './tcf.js'
                : TAG_CHECKOUT_MODULE.test(id)
                  ? './browser-claim.js'
                  : id,
      })),
      plugins: [...twins, ts(), withoutAmd(), terser(minify)],
    },
    {
      // blackbox-capture/element and blackbox-capture/react: import the package's own entry (one
      // core, one loader run per page, whatever a page combines) and the TCF adapter beside it.
      // The message texts too: the entry's own chunk, so that a bundle using both carries one copy.
      input: { [`element${suffix}`]: 'src/browser/element.ts', [`react${suffix}`]: 'src/browser/react.ts' },
      external: (id) => BROWSER_ENTRY.test(id) || TCF_MODULE.test(id) || MESSAGES_MODULE.test(id) || id === 'react',
      output: ['es', 'cjs'].map((format) => ({
        dir: 'dist',
        format,
        entryFileNames: `[name].${format === 'es' ? 'js' : 'cjs'}`,
        // What the two share (checkout.ts, errors.ts): a chunk of theirs, among dist/browser-*.js.
        chunkFileNames: `${chunks}-[name].${format === 'es' ? 'js' : 'cjs'}`,
        paths: (id) =>
          BROWSER_ENTRY.test(id)
            ? `./index${suffix}.${format === 'es' ? 'js' : 'cjs'}`
            : TCF_MODULE.test(id)
              ? `./tcf.${format === 'es' ? 'js' : 'cjs'}`
              : MESSAGES_MODULE.test(id)
                ? `./${chunks}-messages.${format === 'es' ? 'js' : 'cjs'}`
                : id,
      })),
      plugins: [ts(), terser(minify)],
    },
    {
      // blackbox-capture/vue and blackbox-capture/svelte: entries of their own on the package's
      // entry, as the element and the hook are; what they share is a chunk of theirs.
      input: { [`vue${suffix}`]: 'src/browser/vue.ts', [`svelte${suffix}`]: 'src/browser/svelte.ts' },
      external: (id) => BROWSER_ENTRY.test(id) || MESSAGES_MODULE.test(id) || ELEMENT_MODULE.test(id) || id === 'vue',
      output: ['es', 'cjs'].map((format) => ({
        dir: 'dist',
        format,
        entryFileNames: `[name].${format === 'es' ? 'js' : 'cjs'}`,
        chunkFileNames: `${chunks}-[name].${format === 'es' ? 'js' : 'cjs'}`,
        paths: (id) =>
          BROWSER_ENTRY.test(id)
            ? `./index${suffix}.${format === 'es' ? 'js' : 'cjs'}`
            : MESSAGES_MODULE.test(id)
              ? `./${chunks}-messages.${format === 'es' ? 'js' : 'cjs'}`
              : ELEMENT_MODULE.test(id)
                ? `./element${suffix}.${format === 'es' ? 'js' : 'cjs'}`
                : id,
      })),
      plugins: [ts(), terser(minify)],
    },
    {
      // blackbox-capture/angular: plain JavaScript, no decorator (src/browser/angular.ts says why).
      // It imports the package's own entry of its build, as the element and the hook do: one core
      // per page, under the development condition too.
      input: { [`angular${suffix}`]: 'src/browser/angular.ts' },
      external: (id) => BROWSER_ENTRY.test(id) || MESSAGES_MODULE.test(id) || id.startsWith('@angular/'),
      output: ['es', 'cjs'].map((format) => ({
        dir: 'dist',
        format,
        entryFileNames: `[name].${format === 'es' ? 'js' : 'cjs'}`,
        paths: (id) =>
          BROWSER_ENTRY.test(id)
            ? `./index${suffix}.${format === 'es' ? 'js' : 'cjs'}`
            : MESSAGES_MODULE.test(id)
              ? `./${chunks}-messages.${format === 'es' ? 'js' : 'cjs'}`
              : id,
      })),
      plugins: [ts(), terser(minify)],
    },
  ];
}

/** The JavaScript files. */
const code = [
  ...browserBuild('production'),
  ...browserBuild('development'),
  {
    // blackbox-capture/diagnose: the doctor in the page, an entry of its own (never in the capture's bundle).
    // It holds its HTML tokenizer (htmlparser2): a page cannot resolve a bare import, and under
    // Trusted Types the browser's own parser (DOMParser) is a sink it may not use.
    input: { diagnose: 'src/doctor/diagnose.ts' },
    output: [
      { dir: 'dist', format: 'es', entryFileNames: '[name].js' },
      { dir: 'dist', format: 'cjs', entryFileNames: '[name].cjs', exports: 'named' },
    ],
    plugins: [ts(), nodeResolve({ browser: true }), terser({ ecma: 2020, format: { comments: false } })],
  },
  {
    // The script tag's checkout claim, beside the UMD file (both builds import this one file):
    // loaded only by a tag with data-checkout-id. It has no error of its own (the UMD file's `fault`).
    input: { 'browser-claim': 'src/browser/tag-checkout.ts' },
    output: { dir: 'dist', format: 'es', entryFileNames: '[name].js' },
    plugins: [ts(), terser(minify)],
  },
  {
    // blackbox-capture/react-jsx: types only; its module is empty, for an import that a bundler keeps.
    input: { 'react-jsx': 'src/browser/react-jsx.ts' },
    output: [
      { dir: 'dist', format: 'es', entryFileNames: '[name].js' },
      { dir: 'dist', format: 'cjs', entryFileNames: '[name].cjs' },
    ],
    onwarn: (warning, warn) => warning.code !== 'EMPTY_BUNDLE' && warn(warning),
    plugins: [ts()],
  },
  {
    // blackbox-capture/tcf: the IAB TCF v2 consent adapter, an entry of its own (the minimal path never holds it).
    input: { tcf: 'src/browser/tcf.ts' },
    output: [
      { dir: 'dist', format: 'es', entryFileNames: '[name].js' },
      { dir: 'dist', format: 'cjs', entryFileNames: '[name].cjs', exports: 'named' },
    ],
    plugins: [ts(), terser(minify)],
  },
  {
    input: { ...nodeEntries, 'emulator-cli': 'src/emulator/cli.ts', cli: 'src/cli.ts' },
    output: { dir: 'dist', format: 'es', entryFileNames: '[name].js', chunkFileNames: 'chunk-[name]-[hash].js' },
    external: nodeExternal,
    plugins: [ts()],
  },
  {
    // blackbox-capture/server on Workers and edge runtimes (the `workerd` and `edge-light`
    // export conditions): the same kit in one file, its proxy without the node:http path, so
    // that it imports nothing from Node and runs without `nodejs_compat`.
    input: { 'server.edge': 'src/server/index.ts' },
    output: { dir: 'dist', format: 'es', entryFileNames: '[name].js', inlineDynamicImports: true },
    plugins: [withoutNode(), ts()],
  },
  {
    input: nodeEntries,
    output: {
      dir: 'dist',
      format: 'cjs',
      entryFileNames: '[name].cjs',
      chunkFileNames: 'chunk-[name]-[hash].cjs',
      exports: 'named',
    },
    external: nodeExternal,
    plugins: [ts()],
  },
];

/** The declaration files: they read .build/types, which `tsc -p tsconfig.declarations.json` writes. */
const declarationFiles = [
  ...declarations('src/doctor/diagnose.ts', 'diagnose'),
  ...declarations('src/browser/tcf.ts', 'tcf'),
  ...declarations('src/browser/element.ts', 'element'),
  ...declarations('src/browser/react.ts', 'react'),
  ...declarations('src/browser/angular.ts', 'angular'),
  {
    // The element's types stay in the element's declaration file: a second copy of its
    // HTMLElementTagNameMap entry would clash with the first in a page that imports both.
    input: `${TYPES}/browser/react-jsx.d.ts`,
    output: ['js', 'cjs'].map((ext) => ({
      file: `dist/react-jsx.d.${ext === 'js' ? 'ts' : 'cts'}`,
      format: 'es',
      paths: (id) => (/element\.(d\.ts|js)$/.test(id) ? `./element.${ext}` : id),
    })),
    external: (id) => id === 'react' || /element\.(d\.ts|js)$/.test(id),
    plugins: [dts()],
  },
  ...declarations('src/browser/vue.ts', 'vue'),
  ...declarations('src/browser/svelte.ts', 'svelte'),
  ...declarations('src/browser/index.ts', 'index'),
  ...declarations('src/browser/lean.ts', 'lean'),
  ...declarations('src/browser/umd.ts', 'blackbox-capture.umd', { footer: 'export as namespace BlackboxCapture;' }),
  ...declarations('src/server/index.ts', 'server'),
  ...declarations('src/server/store/redis.ts', 'server-redis'),
  ...declarations('src/server/queue/bullmq.ts', 'server-bullmq'),
  ...declarations('src/server/queue/file.ts', 'server-file-queue'),
  ...declarations('src/server/status/index.ts', 'server-status'),
  ...declarations('src/server/parts.ts', 'server-parts'),
  ...declarations('src/emulator/index.ts', 'emulator'),
];

// scripts/build.mjs builds the code while tsc writes the types (`--configPart code`), then
// the declarations (`--configPart declarations`); plain `rollup -c` builds both.
export default (args) => {
  const part = args.configPart;
  delete args.configPart;
  return part === 'code' ? code : part === 'declarations' ? declarationFiles : [...code, ...declarationFiles];
};
