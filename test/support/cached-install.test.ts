// The framework tests' toolchains in the user cache: installed once per package list, a
// second chance for a registry that stalls, a skip (or under CI a failure) when it is away.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cachedInstall, type NpmInstall } from './cached-install.js';

const caches: string[] = [];
afterEach(() => {
  for (const dir of caches.splice(0)) rmSync(dir, { recursive: true, force: true });
  vi.restoreAllMocks();
});
/** An empty cache folder, as XDG_CACHE_HOME. */
function cache(): { XDG_CACHE_HOME: string } {
  const dir = mkdtempSync(join(tmpdir(), 'bbc-toolchain-cache-'));
  caches.push(dir);
  return { XDG_CACHE_HOME: dir };
}
/** An npm install that records its calls and fails the first `failures` of them. */
function npm(failures = 0): NpmInstall & { calls: string[][] } {
  const calls: string[][] = [];
  return Object.assign(
    (_dir: string, args: string[]) => {
      calls.push(args);
      if (calls.length <= failures) throw new Error('npm error network ETIMEDOUT');
    },
    { calls },
  );
}
const PACKAGES = ['tool@1.2.3', 'helper@4'];

describe('cachedInstall', () => {
  it('installs the packages into <cache>/blackbox-capture/<folder> once; the same list again is taken from the cache', () => {
    const env = cache();
    const install = npm();
    const first = cachedInstall('tool-1.2.3', PACKAGES, { env, install });
    expect(first).toMatchObject({ installed: true, dir: join(env.XDG_CACHE_HOME, 'blackbox-capture', 'tool-1.2.3') });
    expect(first.app).toBe(join(first.dir, 'app'));
    expect(install.calls).toEqual([['--no-audit', '--no-fund', ...PACKAGES]]);
    expect(cachedInstall('tool-1.2.3', PACKAGES, { env, install }).installed).toBe(true);
    expect(install.calls).toHaveLength(1);
  });

  it('installs again when the list changed, or when no install finished (no marker)', () => {
    const env = cache();
    const install = npm();
    cachedInstall('tool', PACKAGES, { env, install });
    cachedInstall('tool', [...PACKAGES, 'more@1'], { env, install, ignoreScripts: true });
    expect(install.calls[1]).toEqual(['--no-audit', '--no-fund', '--ignore-scripts', ...PACKAGES, 'more@1']);
    rmSync(join(env.XDG_CACHE_HOME, 'blackbox-capture', 'tool', 'node_modules'), { recursive: true });
    cachedInstall('tool', [...PACKAGES, 'more@1'], { env, install });
    expect(install.calls).toHaveLength(3);
  });

  it('gives a registry that fails once a second chance', () => {
    const install = npm(1);
    expect(cachedInstall('tool', PACKAGES, { env: cache(), install }).installed).toBe(true);
    expect(install.calls).toHaveLength(2);
  });

  it('twice away: not installed, no marker, and the skip is named; under CI the failure is thrown', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const env = cache();
    const away = cachedInstall('tool', PACKAGES, { env, install: npm(2) });
    expect(away.installed).toBe(false);
    expect(existsSync(join(away.dir, 'node_modules'))).toBe(false);
    expect(warn).toHaveBeenCalledWith('tool: skipped, tool@1.2.3 could not be installed from the registry');
    expect(() => cachedInstall('tool', PACKAGES, { env: { ...env, CI: '1' }, install: npm(2) })).toThrow(/ETIMEDOUT/);
  });

  it("writes the app's files with their folders, and clears the app", () => {
    const toolchain = cachedInstall('tool', PACKAGES, { env: cache(), install: npm() });
    toolchain.write('src/lib/a.ts', 'export const a = 1;\n');
    expect(readFileSync(join(toolchain.app, 'src/lib/a.ts'), 'utf8')).toBe('export const a = 1;\n');
    toolchain.clearApp();
    expect(existsSync(toolchain.app)).toBe(false);
  });
});
