// Builds the three parts of the package:
// - the browser package: an ES module for bundlers, a minified UMD file for script
//   tags (global BlackboxCapture), one bundled declaration file;
// - the Node side (server kit, emulator): ES modules for Node 20+, with declarations.
import terser from '@rollup/plugin-terser';
import typescript from '@rollup/plugin-typescript';
import { builtinModules } from 'node:module';
import { dts } from 'rollup-plugin-dts';

const ts = () =>
  typescript({
    tsconfig: './tsconfig.json',
    include: ['src/**/*.ts'],
    noEmit: false,
    declaration: false,
    sourceMap: false,
  });

const nodeEntries = {
  server: 'src/server/index.ts',
  emulator: 'src/emulator/index.ts',
  'emulator-cli': 'src/emulator/cli.ts',
};
const nodeExternal = (id) => id.startsWith('node:') || builtinModules.includes(id);

export default [
  {
    input: 'src/browser/index.ts',
    output: { file: 'dist/index.js', format: 'es' },
    plugins: [ts()],
  },
  {
    input: 'src/browser/umd.ts',
    output: { file: 'dist/blackbox-capture.umd.js', format: 'umd', name: 'BlackboxCapture', exports: 'named' },
    plugins: [ts(), terser({ ecma: 2020, compress: { passes: 2 }, format: { comments: false } })],
  },
  {
    input: nodeEntries,
    output: { dir: 'dist', format: 'es', entryFileNames: '[name].js', chunkFileNames: 'chunk-[name]-[hash].js' },
    external: nodeExternal,
    plugins: [ts()],
  },
  {
    input: 'src/browser/index.ts',
    output: { file: 'dist/index.d.ts', format: 'es' },
    plugins: [dts()],
  },
  {
    input: { server: 'src/server/index.ts', emulator: 'src/emulator/index.ts' },
    output: { dir: 'dist', format: 'es', entryFileNames: '[name].d.ts', chunkFileNames: 'chunk-[name]-[hash].d.ts' },
    external: nodeExternal,
    plugins: [dts()],
  },
];
