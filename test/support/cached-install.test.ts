// The framework tests' sites in the user cache: `npm ci` of the committed lockfile, once per
// lockfile, a second chance for a registry that stalls, a skip (or under CI a failure) when it
// is away; and the committed sites themselves, each with the lockfile of its package.json.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cachedInstall, SITES, type NpmInstall } from './cached-install.js';

const folders: string[] = [];
afterEach(() => {
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
  vi.restoreAllMocks();
});
const temporary = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  folders.push(dir);
  return dir;
};
/** An empty cache folder, as XDG_CACHE_HOME. */
const cache = (): { XDG_CACHE_HOME: string } => ({ XDG_CACHE_HOME: temporary('bbc-site-cache-') });

const MANIFEST = JSON.stringify({ name: 'site-tool', private: true, dependencies: { tool: '1.2.3' } });
const lockfile = (integrity: string) =>
  JSON.stringify({ name: 'site-tool', lockfileVersion: 3, packages: { 'node_modules/tool': { integrity } } });
/** A site folder named `tool`, as in SITES: its package.json and its lockfile (null: none). */
function site(lock: string | null = lockfile('sha512-one')): string {
  const dir = join(temporary('bbc-site-'), 'tool');
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), MANIFEST);
  if (lock !== null) writeFileSync(join(dir, 'package-lock.json'), lock);
  return dir;
}
/** An `npm ci` that records its arguments and the lockfile it found, and fails the first `failures` calls. */
function npm(failures = 0): NpmInstall & { calls: string[][]; lockfiles: string[] } {
  const calls: string[][] = [];
  const lockfiles: string[] = [];
  return Object.assign(
    (dir: string, args: string[]) => {
      calls.push(args);
      lockfiles.push(readFileSync(join(dir, 'package-lock.json'), 'utf8'));
      expect(readFileSync(join(dir, 'package.json'), 'utf8')).toBe(MANIFEST);
      if (calls.length <= failures) throw new Error('npm error network ETIMEDOUT');
    },
    { calls, lockfiles },
  );
}
const marker = (dir: string) => join(dir, 'node_modules', '.blackbox-capture-installed');

describe('cachedInstall', () => {
  it("runs npm ci on the site's lockfile in <cache>/blackbox-capture/sites/<site> once; the same lockfile again is taken from the cache", () => {
    const env = cache();
    const install = npm();
    const tool = site();
    const first = cachedInstall(tool, { env, install });
    expect(first).toMatchObject({
      installed: true,
      dir: join(env.XDG_CACHE_HOME, 'blackbox-capture', 'sites', 'tool'),
      versions: { tool: '1.2.3' },
    });
    expect(first.app).toBe(join(first.dir, 'app'));
    expect(install.calls).toEqual([['--no-audit', '--no-fund']]);
    expect(install.lockfiles).toEqual([lockfile('sha512-one')]);
    expect(cachedInstall(tool, { env, install }).installed).toBe(true);
    expect(install.calls).toHaveLength(1);
  });

  it('installs again when the lockfile or the flags changed, or when no install finished (no marker)', () => {
    const env = cache();
    const install = npm();
    const tool = site();
    const { dir } = cachedInstall(tool, { env, install });
    writeFileSync(join(tool, 'package-lock.json'), lockfile('sha512-two'));
    cachedInstall(tool, { env, install });
    expect(install.lockfiles[1]).toBe(lockfile('sha512-two'));
    cachedInstall(tool, { env, install, ignoreScripts: true });
    expect(install.calls[2]).toEqual(['--no-audit', '--no-fund', '--ignore-scripts']);
    // npm ci empties node_modules first: an install cut short leaves no marker.
    rmSync(join(dir, 'node_modules'), { recursive: true });
    cachedInstall(tool, { env, install, ignoreScripts: true });
    expect(install.calls).toHaveLength(4);
    expect(existsSync(marker(dir))).toBe(true);
  });

  it('gives a registry that fails once a second chance', () => {
    const install = npm(1);
    expect(cachedInstall(site(), { env: cache(), install }).installed).toBe(true);
    expect(install.calls).toHaveLength(2);
  });

  it('twice away: not installed, no marker, and the skip is named; under CI the failure is thrown', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const env = cache();
    const tool = site();
    const away = cachedInstall(tool, { env, install: npm(2) });
    expect(away.installed).toBe(false);
    expect(existsSync(marker(away.dir))).toBe(false);
    expect(warn).toHaveBeenCalledWith("tool: skipped, the site's lockfile could not be installed from the registry");
    expect(() => cachedInstall(tool, { env: { ...env, CI: '1' }, install: npm(2) })).toThrow(/ETIMEDOUT/);
  });

  it('a site without its lockfile is refused with the command that writes it, before any install', () => {
    const install = npm();
    expect(() => cachedInstall(site(null), { env: cache(), install })).toThrow(
      /tool has no package-lock\.json: .*`npm install --package-lock-only`/,
    );
    expect(install.calls).toEqual([]);
  });

  it("writes the app's files with their folders, and clears the app", () => {
    const toolchain = cachedInstall(site(), { env: cache(), install: npm() });
    toolchain.write('src/lib/a.ts', 'export const a = 1;\n');
    expect(readFileSync(join(toolchain.app, 'src/lib/a.ts'), 'utf8')).toBe('export const a = 1;\n');
    toolchain.clearApp();
    expect(existsSync(toolchain.app)).toBe(false);
  });
});

describe('the committed sites', () => {
  const sites = readdirSync(SITES);

  it.each(sites)("%s: its lockfile was written for its package.json, which pins each dependency's version", (name) => {
    const read = (file: string) => JSON.parse(readFileSync(join(SITES, name, file), 'utf8')) as Record<string, any>;
    const manifest = read('package.json');
    const lock = read('package-lock.json');
    expect(lock.lockfileVersion).toBe(3);
    expect(lock.packages['']).toMatchObject({ dependencies: manifest.dependencies });
    for (const [dependency, version] of Object.entries(manifest.dependencies as Record<string, string>)) {
      expect(version).toMatch(/^\d+\.\d+\.\d+$/);
      expect(lock.packages[`node_modules/${dependency}`].version).toBe(version);
    }
  });
});
