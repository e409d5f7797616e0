// A framework's toolchain for the tests of the packed package in that framework (Nuxt,
// SvelteKit, Angular): installed from the npm registry into the user cache once per package
// list, outside the clone (beside the runtimes' binaries: a fresh clone does not install them
// again), with the test's app written beside them and the packed package in their
// node_modules, as npm users get it.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { runtimesCache } from './runtimes.mjs';
import { ROOT } from './tarball.js';

export interface CachedToolchain {
  /** The cache folder, whose node_modules holds the toolchain. */
  dir: string;
  /** The test's app, in the cache folder: its imports find the toolchain's packages. */
  app: string;
  /** False when the registry could not be reached: the test skips, named (with CI set, this throws instead). */
  installed: boolean;
  /** Writes a file of the app, with its folders. */
  write(file: string, text: string): void;
  /** Empties the app's folder. */
  clearApp(): void;
  /** Packs the package (npm pack) and unpacks it into the toolchain's node_modules, in place of the last one. */
  installPackage(): void;
}

/** `npm install <args>` in `dir`, throwing when it fails or takes over 5 minutes. */
export type NpmInstall = (dir: string, args: string[]) => void;

const npmInstall: NpmInstall = (dir, args) =>
  void execFileSync('npm', ['install', ...args], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 });

export interface CachedInstallOptions {
  /** npm's --ignore-scripts: for toolchains whose install scripts only fetch what the test does not use. */
  ignoreScripts?: boolean;
  /** XDG_CACHE_HOME (where the cache is) and CI (set: a failed install throws instead of skipping). */
  env?: NodeJS.ProcessEnv;
  install?: NpmInstall;
}

/**
 * `packages` installed into `<cache>/<folder>`, unless the list installed last is the same:
 * a marker written after the install names it, so that an install cut short is done again.
 */
export function cachedInstall(folder: string, packages: string[], options: CachedInstallOptions = {}) {
  const { env = process.env, install = npmInstall } = options;
  const dir = join(dirname(runtimesCache(env)), folder);
  const app = join(dir, 'app');
  const marker = join(dir, 'node_modules', '.blackbox-capture-installed');
  const flags = ['--no-audit', '--no-fund', ...(options.ignoreScripts ? ['--ignore-scripts'] : [])];
  const installed =
    isInstalled(marker, packages) ||
    (installTwice(() => install(dir, [...flags, ...packages]), dir, env.CI) && marked(marker, packages));
  if (!installed) console.warn(`${folder}: skipped, ${packages[0]} could not be installed from the registry`);
  const toolchain: CachedToolchain = {
    dir,
    app,
    installed,
    write(file, text) {
      mkdirSync(dirname(join(app, file)), { recursive: true });
      writeFileSync(join(app, file), text);
    },
    clearApp: () => rmSync(app, { recursive: true, force: true, maxRetries: 5 }),
    installPackage() {
      mkdirSync(app, { recursive: true });
      execFileSync('npm', ['pack', '--silent', '--pack-destination', app], {
        cwd: ROOT,
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      const unpacked = join(dir, 'node_modules', 'blackbox-capture');
      rmSync(unpacked, { recursive: true, force: true });
      mkdirSync(unpacked, { recursive: true });
      execFileSync('sh', ['-c', `tar xzf "${app}"/blackbox-capture-*.tgz -C "${unpacked}" --strip-components=1`]);
    },
  };
  return toolchain;
}

const isInstalled = (marker: string, packages: string[]) =>
  existsSync(marker) && readFileSync(marker, 'utf8') === packages.join('\n');

/** Writes the marker of a finished install; true. */
function marked(marker: string, packages: string[]): true {
  mkdirSync(dirname(marker), { recursive: true });
  writeFileSync(marker, packages.join('\n'));
  return true;
}

/**
 * False when the install failed twice (a registry that stalls once, seen on a busy machine,
 * gets a second chance); with CI set, the second failure is thrown.
 */
function installTwice(install: () => void, dir: string, ci: string | undefined): boolean {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'toolchain-cache', private: true }));
  for (let attempt = 1; ; attempt++) {
    try {
      install();
      return true;
    } catch (error) {
      if (attempt < 2) continue;
      if (ci) throw error;
      return false;
    }
  }
}
