// Which build each bundler picks from the packed tarball, as Google's loader tests its bundler
// matrix: the production build by default, the development build through the `development`
// export condition (webpack, Vite and Parcel in development mode, esbuild, Rollup and Node when
// asked).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { createRequire } from 'node:module';
import { build as esbuild } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installPackedTarball, ROOT } from '../support/tarball.js';

let dir: string;
let entry: string;

beforeAll(() => {
  ({ dir } = installPackedTarball('bbc-bundlers-'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'shop', private: true, type: 'module' }));
  entry = join(dir, 'checkout.js');
  writeFileSync(
    entry,
    "import { captureBlackbox } from 'blackbox-capture';\nwindow.capture = () => captureBlackbox({ loaderUrl: '/iojs/loader.js' });\n",
  );
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

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
function viteBundle(mode: 'production' | 'development', input = entry): string {
  return viteFiles(mode, input).join('\n');
}

/** The JavaScript files of `vite build`, one string each. */
function viteFiles(mode: 'production' | 'development', input = entry): string[] {
  const outDir = join(dir, `vite-${mode}-${basename(input, '.js')}`);
  writeFileSync(
    join(dir, 'vite.config.mjs'),
    `export default { logLevel: 'silent', build: { outDir: ${JSON.stringify(outDir)}, minify: false, rollupOptions: { input: ${JSON.stringify(input)} } } };`,
  );
  const { NODE_ENV: _, ...rest } = process.env;
  const env = mode === 'development' ? { ...rest, NODE_ENV: 'development' } : rest;
  const result = spawnSync(process.execPath, [join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--mode', mode], {
    cwd: dir,
    env,
    encoding: 'utf8',
  });
  expect(result.stderr).toBe('');
  const files = readdirSync(join(outDir, 'assets')).filter((f) => f.endsWith('.js'));
  return files.map((f) => readFileSync(join(outDir, 'assets', f), 'utf8'));
}

async function webpackBundle(mode: 'production' | 'development'): Promise<string> {
  const { default: webpack } = await import('webpack');
  const outDir = join(dir, `webpack-${mode}`);
  await new Promise<void>((resolve, reject) =>
    webpack(
      {
        mode,
        context: dir,
        entry,
        devtool: false,
        output: { path: outDir, filename: 'main.js' },
        optimization: { minimize: false },
      },
      (error, stats) =>
        error || stats?.hasErrors() ? reject(error ?? new Error(stats!.toString('errors-only'))) : resolve(),
    ),
  );
  return readdirSync(outDir)
    .filter((f) => f.endsWith('.js'))
    .map((f) => readFileSync(join(outDir, f), 'utf8'))
    .join('\n');
}

/**
 * Rollup with its node-resolve plugin, as a browser app configures it. node-resolve 16 adds
 * `development` or `production` from NODE_ENV when the plugin is created (development when it
 * is set to anything but production), unless `exportConditions` names one.
 */
async function rollupBundle(nodeEnv: string | undefined, exportConditions: string[] = []): Promise<string> {
  const { rollup } = await import('rollup');
  const { nodeResolve } = await import('@rollup/plugin-node-resolve');
  const before = process.env.NODE_ENV;
  if (nodeEnv === undefined) delete process.env.NODE_ENV;
  else process.env.NODE_ENV = nodeEnv;
  let plugin;
  try {
    plugin = nodeResolve({ browser: true, exportConditions, rootDir: dir });
  } finally {
    if (before === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = before;
  }
  const bundle = await rollup({ input: entry, plugins: [plugin], logLevel: 'silent' });
  const { output } = await bundle.generate({ format: 'es', dir: join(dir, 'rollup-out') });
  await bundle.close();
  return output.map((chunk) => ('code' in chunk ? chunk.code : '')).join('\n');
}

/**
 * Parcel through its API, in the mode its CLI sets: `parcel build` production, `parcel serve`
 * and `parcel watch` development. `project` is the folder of the app's package.json (Parcel
 * reads the `exports` map only where that opts in with `packageExports`).
 */
async function parcelBundle(project: string, file: string, mode: 'production' | 'development'): Promise<string> {
  const { Parcel } = await import('@parcel/core');
  const distDir = join(project, `parcel-${mode}`);
  const parcel = new Parcel({
    entries: join(project, file),
    defaultConfig: createRequire(import.meta.url).resolve('@parcel/config-default'),
    mode,
    shouldDisableCache: true,
    shouldAutoInstall: false,
    logLevel: 'error',
    defaultTargetOptions: { distDir, shouldOptimize: false },
  });
  const { bundleGraph } = await parcel.run();
  return bundleGraph
    .getBundles()
    .map((b) => readFileSync(b.filePath, 'utf8'))
    .join('\n');
}

/**
 * A Parcel app beside the installed package: its package.json (with `extra` fields), its
 * lockfile (Parcel's project root is the folder of the nearest lockfile, else the current
 * directory) and the checkout entry.
 */
function parcelProject(project: string, extra: object = {}): void {
  mkdirSync(project, { recursive: true });
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'shop', private: true, type: 'module', ...extra }),
  );
  writeFileSync(
    join(project, 'package-lock.json'),
    JSON.stringify({ name: 'shop', lockfileVersion: 3, requires: true, packages: {} }),
  );
  writeFileSync(join(project, 'checkout.js'), readFileSync(entry, 'utf8'));
}

async function esbuildBundle(conditions: string[]): Promise<string> {
  const result = await esbuild({
    entryPoints: [entry],
    absWorkingDir: dir,
    bundle: true,
    format: 'esm',
    splitting: true,
    outdir: join(dir, 'esbuild-out'),
    write: false,
    conditions,
    logLevel: 'silent',
  });
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
  });

  it('Vite, an app using the entry and the element: one copy of the message texts, in a chunk of its own', () => {
    const both = join(dir, 'both.js');
    writeFileSync(
      both,
      "import { captureBlackbox } from 'blackbox-capture';\nimport 'blackbox-capture/element';\nwindow.capture = () => captureBlackbox({ loaderUrl: '/iojs/loader.js' });\n",
    );
    for (const mode of ['production', 'development'] as const) {
      const files = viteFiles(mode, both);
      expect(files.join('\n')).toContain('customElements.define');
      const withTexts = files.filter((code) => code.includes('the error carries the blackbox'));
      expect(withTexts, mode).toHaveLength(1);
      expect(withTexts[0], mode).not.toContain('customElements.define');
    }
  });

  it('webpack 5: production in production mode, development in development mode', async () => {
    expect(buildIn(await webpackBundle('production'))).toBe('production');
    expect(buildIn(await webpackBundle('development'))).toBe('development');
  });

  it('Rollup (node-resolve 16): production without NODE_ENV or with production, development with NODE_ENV=development or the condition', async () => {
    expect(buildIn(await rollupBundle(undefined))).toBe('production');
    expect(buildIn(await rollupBundle('production'))).toBe('production');
    expect(buildIn(await rollupBundle('development'))).toBe('development');
    expect(buildIn(await rollupBundle(undefined, ['development']))).toBe('development');
  });

  it('Parcel with packageExports: production for parcel build, development for parcel serve and watch', async () => {
    const project = join(dir, 'parcel-exports');
    parcelProject(project, { '@parcel/resolver-default': { packageExports: true } });
    expect(buildIn(await parcelBundle(project, 'checkout.js', 'production'))).toBe('production');
    expect(buildIn(await parcelBundle(project, 'checkout.js', 'development'))).toBe('development');
  });

  it('Parcel without packageExports (its default): the production build in both modes, subpaths through their fallback folders', async () => {
    const project = join(dir, 'parcel-default');
    parcelProject(project);
    expect(buildIn(await parcelBundle(project, 'checkout.js', 'production'))).toBe('production');
    expect(buildIn(await parcelBundle(project, 'checkout.js', 'development'))).toBe('production');
    // A subpath: Parcel reads element/package.json, which points into dist/.
    writeFileSync(join(project, 'element.js'), "import 'blackbox-capture/element';\n");
    expect(await parcelBundle(project, 'element.js', 'production')).toContain('customElements.define');
  });

  it('Node: production by default, development with --conditions=development', () => {
    const which = (args: string[]) =>
      spawnSync(
        process.execPath,
        [
          ...args,
          '--input-type=module',
          '-e',
          "const m = await import.meta.resolve('blackbox-capture'); console.log(m.split('/').pop())",
        ],
        { cwd: dir, encoding: 'utf8' },
      ).stdout.trim();
    expect(which([])).toBe('index.js');
    expect(which(['--conditions=development'])).toBe('index.development.js');
  });
});
