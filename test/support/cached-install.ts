// A framework's site for the tests of the packed package in that framework (Nuxt, SvelteKit,
// Angular, the navigation models): a package.json and its package-lock.json committed in
// test/package/sites/<site>/, installed with `npm ci` from the npm registry into the user
// cache (beside the runtimes' binaries: a fresh clone does not install it again), with the
// test's app written beside it and the packed package in its node_modules, as npm users get
// it. The lockfile pins the whole tree: a site pinned by its package.json alone gets whatever
// its dependencies have become on the registry, and a build that passed breaks with no change
// here (issue 64: Nuxt 4.5.2's `nuxt build` on a newer tree). How to update a site: CONTRIBUTING.md#tests.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { runtimesCache } from './runtimes.mjs';
import { ROOT, writerIn } from './tarball.js';

/** The committed sites, one folder each: package.json and package-lock.json. */
export const SITES = join(ROOT, 'test', 'package', 'sites');

export interface CachedToolchain {
  /** The cache folder, whose node_modules holds the site's tree. */
  dir: string;
  /** The test's app, in the cache folder: its imports find the site's packages. */
  app: string;
  /** False when the registry could not be reached: the test skips, named (with CI set, this throws instead). */
  installed: boolean;
  /** The site's dependencies as its package.json pins them (name → version). */
  versions: Record<string, string>;
  /** Writes a file of the app, with its folders. */
  write(file: string, text: string): void;
  /** Empties the app's folder. */
  clearApp(): void;
  /** Packs the package (npm pack) and unpacks it into the site's node_modules, in place of the last one. */
  installPackage(): void;
}

/** `npm ci <args>` in `dir`, throwing when it fails or takes over 5 minutes. */
export type NpmInstall = (dir: string, args: string[]) => void;

const npmCi: NpmInstall = (dir, args) =>
  void execFileSync('npm', ['ci', ...args], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 });

export interface CachedInstallOptions {
  /** npm's --ignore-scripts: for sites whose install scripts only fetch what the test does not use. */
  ignoreScripts?: boolean;
  /** XDG_CACHE_HOME (where the cache is) and CI (set: a failed install throws instead of skipping). */
  env?: NodeJS.ProcessEnv;
  install?: NpmInstall;
}

const MARKER = '.blackbox-capture-installed';

/** The two files that say what a site installs, in the order they are hashed. */
const SITE_FILES = ['package.json', 'package-lock.json'] as const;

/**
 * The site in `site` (a folder of SITES) installed into `<cache>/blackbox-capture/sites/<name>`,
 * one folder per site whatever its lockfile (the cache holds one tree per site), unless the
 * tree installed last is this one: a marker written after the install holds the hash of the
 * site's files, so that a changed lockfile installs again and an install cut short is redone.
 */
export function cachedInstall(site: string, options: CachedInstallOptions = {}) {
  const { env = process.env, install = npmCi } = options;
  const name = basename(site);
  const files = new Map(SITE_FILES.map((file) => [file, siteFile(site, file)]));
  const manifest = JSON.parse(files.get('package.json') ?? '') as { dependencies?: Record<string, string> };
  const dir = join(dirname(runtimesCache(env)), 'sites', name);
  const app = join(dir, 'app');
  const marker = join(dir, 'node_modules', MARKER);
  const flags = ['--no-audit', '--no-fund', ...(options.ignoreScripts ? ['--ignore-scripts'] : [])];
  const hash = createHash('sha256')
    .update(JSON.stringify([flags, ...files.values()]))
    .digest('hex');
  const installed =
    (existsSync(marker) && readFileSync(marker, 'utf8') === hash) ||
    (installTwice(() => install(dir, flags), files, dir, env.CI) && marked(marker, hash));
  if (!installed) console.warn(`${name}: skipped, the site's lockfile could not be installed from the registry`);
  const toolchain: CachedToolchain = {
    dir,
    app,
    installed,
    versions: manifest.dependencies ?? {},
    write: writerIn(app),
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

/** A site's file; a site without it is the repository's mistake, said with the fix. */
function siteFile(site: string, file: string): string {
  try {
    return readFileSync(join(site, file), 'utf8');
  } catch (error) {
    throw new Error(
      `${site} has no ${file}: a site is a package.json and the package-lock.json that ` +
        '`npm install --package-lock-only` writes beside it (CONTRIBUTING.md#tests)',
      { cause: error },
    );
  }
}

/** Writes the marker of a finished install; true. */
function marked(marker: string, hash: string): true {
  mkdirSync(dirname(marker), { recursive: true });
  writeFileSync(marker, hash);
  return true;
}

/**
 * The site's files written into `dir` (as they were hashed), then `install` run there: false when it failed twice (a
 * registry that stalls once, seen on a busy machine, gets a second chance); with CI set, the
 * second failure is thrown.
 */
function installTwice(install: () => void, files: Map<string, string>, dir: string, ci: string | undefined): boolean {
  mkdirSync(dir, { recursive: true });
  for (const [file, text] of files) writeFileSync(join(dir, file), text);
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
