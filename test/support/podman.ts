/**
 * Containers for the tests of deploy/ (test/deploy/): Debian's podman with runc, and the base
 * image a shop would bring, made here without a registry: Debian's minbase by debootstrap from
 * the mirror apt uses, libatomic1 (which the node binary links), and this Node at
 * /usr/local/bin/node; nothing else (no npm, no curl). Kept in podman's store under a tag that
 * is a hash of its recipe, so that a later run finds it in a second (the first takes about two
 * minutes).
 */
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The engine's settings for every podman call here (CONTAINERS_CONF), so that a documented
 * command runs as written: runc (Debian's podman may have no crun), and limits that runc may set
 * for a user other than root (podman's defaults, a million open files, exceed the host's).
 */
const CONTAINERS_CONF = join(mkdtempSync(join(tmpdir(), 'bbc-podman-')), 'containers.conf');
writeFileSync(
  CONTAINERS_CONF,
  '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\n\n[engine]\nruntime = "runc"\n',
);
/** The environment of a podman call, or of a documented command that calls it. */
export const podmanEnv = (extra: Record<string, string> = {}) => ({ ...process.env, CONTAINERS_CONF, ...extra });

export function podman(args: string[], options: SpawnSyncOptions = {}) {
  return spawnSync('podman', args, { encoding: 'utf8', timeout: 600_000, env: podmanEnv(), ...options }) as {
    status: number | null;
    stdout: string;
    stderr: string;
    error?: Error;
  };
}

/** Why podman cannot run a container here, or undefined when it can. */
export function podmanProblem(): string | undefined {
  for (const tool of ['podman', 'runc', 'debootstrap']) {
    const found = spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
    if (!found) return `${tool} is not installed (apt-get install podman runc debootstrap)`;
  }
  const info = podman(['info', '--format', '{{.Host.OCIRuntime.Name}}']);
  if (info.status !== 0) return `podman info failed: ${info.stderr.trim().split('\n').pop()}`;
  return undefined;
}

/** The Debian mirror apt is configured with (sources.list or its deb822 files). */
export function debianMirror(): string {
  const files = [
    '/etc/apt/sources.list',
    ...listed('/etc/apt/sources.list.d').map((f) => `/etc/apt/sources.list.d/${f}`),
  ];
  for (const file of files) {
    if (!existsSync(file)) continue;
    const text = readFileSync(file, 'utf8');
    const uri =
      /^URIs:\s*(\S+\/debian)\/?\s*$/m.exec(text)?.[1] ??
      /^deb\s+(?:\[[^\]]*\]\s+)?(\S+\/debian)\/?\s/m.exec(text)?.[1];
    if (uri) return uri;
  }
  return 'http://deb.debian.org/debian';
}

const listed = (dir: string) => (existsSync(dir) ? readdirSync(dir) : []);

const RECIPE_VERSION = 1;

/** The base image's tag, made now unless podman's store has it. */
export function baseImage(): string {
  const recipe = {
    version: RECIPE_VERSION,
    suite: 'bookworm',
    variant: 'minbase',
    include: ['libatomic1'],
    mirror: debianMirror(),
    node: process.version,
    arch: process.arch,
  };
  const hash = createHash('sha256').update(JSON.stringify(recipe)).digest('hex').slice(0, 16);
  const tag = `localhost/blackbox-capture-test-base:${hash}`;
  if (podman(['image', 'exists', tag]).status === 0) return tag;
  const work = mkdtempSync('/var/tmp/bbc-base-');
  try {
    const rootfs = join(work, 'rootfs');
    const debootstrap = spawnSync(
      'debootstrap',
      [`--variant=${recipe.variant}`, `--include=${recipe.include.join(',')}`, recipe.suite, rootfs, recipe.mirror],
      { encoding: 'utf8', timeout: 900_000 },
    );
    if (debootstrap.status !== 0)
      throw new Error(
        `debootstrap failed (${debootstrap.status}): ${debootstrap.stdout.slice(-2000)}${debootstrap.stderr}`,
      );
    // What a slim base leaves out: the downloaded packages and the package lists.
    for (const dir of ['var/cache/apt/archives', 'var/lib/apt/lists'])
      for (const name of listed(join(rootfs, dir)))
        if (name !== 'partial' && name !== 'lock') rmSync(join(rootfs, dir, name), { recursive: true, force: true });
    copyFileSync(process.execPath, join(rootfs, 'usr/local/bin/node'));
    const tar = join(work, 'rootfs.tar');
    const packed = spawnSync('tar', ['-C', rootfs, '-cf', tar, '.'], { encoding: 'utf8' });
    if (packed.status !== 0) throw new Error(`tar failed: ${packed.stderr}`);
    const imported = podman(['import', '--change', 'CMD ["/bin/bash"]', tar, tag]);
    if (imported.status !== 0) throw new Error(`podman import failed: ${imported.stderr}`);
    return tag;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
