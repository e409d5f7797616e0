// Which build each bundler picks from the packed tarball, as Google's loader tests its bundler
// matrix: the production build by default, the development build through the `development`
// export condition (webpack and Vite in development mode, esbuild and Node when asked).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build as esbuild } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
let dir: string;
let entry: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bbc-bundlers-'));
  execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const tarball = join(dir, readdirSync(dir).find((f) => f.endsWith('.tgz'))!);
  const installed = join(dir, 'node_modules', 'blackbox-capture');
  mkdirSync(installed, { recursive: true });
  execFileSync('tar', ['xzf', tarball, '-C', installed, '--strip-components=1']);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'shop', private: true, type: 'module' }));
  entry = join(dir, 'checkout.js');
  writeFileSync(entry, "import { captureBlackbox } from 'blackbox-capture';\nwindow.capture = () => captureBlackbox({ loaderUrl: '/iojs/loader.js' });\n");
}, 60_000);

/** Which build a bundle holds: only the development build warns of a relative uriHook. */
function buildIn(code: string): 'development' | 'production' {
  expect(code).toContain('io_global_object_name'); // the package is in it at all
  return code.includes('is relative: the first-party scripts') ? 'development' : 'production';
}

/**
 * `vite build` as a user runs it: its CLI, in the project, without the test runner's NODE_ENV.
 * Vite picks the export condition from NODE_ENV, not from --mode: a development build is
 * `NODE_ENV=development vite build --mode development` (its dev server uses it too).
 */
function viteBundle(mode: 'production' | 'development'): string {
  const outDir = join(dir, `vite-${mode}`);
  writeFileSync(join(dir, 'vite.config.mjs'), `export default { logLevel: 'silent', build: { outDir: ${JSON.stringify(outDir)}, minify: false, rollupOptions: { input: ${JSON.stringify(entry)} } } };`);
  const { NODE_ENV: _, ...rest } = process.env;
  const env = mode === 'development' ? { ...rest, NODE_ENV: 'development' } : rest;
  const result = spawnSync(process.execPath, [join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--mode', mode], { cwd: dir, env, encoding: 'utf8' });
  expect(result.stderr).toBe('');
  const files = readdirSync(join(outDir, 'assets')).filter((f) => f.endsWith('.js'));
  return files.map((f) => readFileSync(join(outDir, 'assets', f), 'utf8')).join('\n');
}

async function webpackBundle(mode: 'production' | 'development'): Promise<string> {
  const { default: webpack } = await import('webpack');
  const outDir = join(dir, `webpack-${mode}`);
  await new Promise<void>((resolve, reject) =>
    webpack({ mode, context: dir, entry, devtool: false, output: { path: outDir, filename: 'main.js' }, optimization: { minimize: false } }, (error, stats) =>
      error || stats?.hasErrors() ? reject(error ?? new Error(stats!.toString('errors-only'))) : resolve(),
    ),
  );
  return readdirSync(outDir).filter((f) => f.endsWith('.js')).map((f) => readFileSync(join(outDir, f), 'utf8')).join('\n');
}

async function esbuildBundle(conditions: string[]): Promise<string> {
  const result = await esbuild({ entryPoints: [entry], absWorkingDir: dir, bundle: true, format: 'esm', splitting: true, outdir: join(dir, 'esbuild-out'), write: false, conditions, logLevel: 'silent' });
  return result.outputFiles.map((f) => f.text).join('\n');
}

describe('the packed tarball in bundlers', () => {
  it('esbuild: production by default, development with --conditions=development', async () => {
    expect(buildIn(await esbuildBundle([]))).toBe('production');
    expect(buildIn(await esbuildBundle(['development']))).toBe('development');
  });

  it('Vite: production for vite build, development for NODE_ENV=development vite build', () => {
    expect(buildIn(viteBundle('production'))).toBe('production');
    expect(buildIn(viteBundle('development'))).toBe('development');
  }, 60_000);

  it('webpack 5: production in production mode, development in development mode', async () => {
    expect(buildIn(await webpackBundle('production'))).toBe('production');
    expect(buildIn(await webpackBundle('development'))).toBe('development');
  }, 60_000);

  it('Node: production by default, development with --conditions=development', () => {
    const which = (args: string[]) =>
      spawnSync(process.execPath, [...args, '--input-type=module', '-e', "const m = await import.meta.resolve('blackbox-capture'); console.log(m.split('/').pop())"], { cwd: dir, encoding: 'utf8' }).stdout.trim();
    expect(which([])).toBe('index.js');
    expect(which(['--conditions=development'])).toBe('index.development.js');
  });
});
