// Builds the browser package: an ES module for bundlers, a minified UMD file for
// script tags (global BlackboxCapture), and one bundled declaration file.
import terser from '@rollup/plugin-terser';
import typescript from '@rollup/plugin-typescript';
import { dts } from 'rollup-plugin-dts';

const ts = () =>
  typescript({
    tsconfig: './tsconfig.json',
    include: ['src/**/*.ts'],
    noEmit: false,
    declaration: false,
    sourceMap: false,
  });

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
    input: 'src/browser/index.ts',
    output: { file: 'dist/index.d.ts', format: 'es' },
    plugins: [dts()],
  },
];
