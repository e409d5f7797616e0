// The nginx helper of the tests (test/support/nginx.mjs): it serves a checkout whatever its folder's
// permissions and whoever runs it, and a folder it cannot serve fails its start at once with
// the reason, never as a page that waits for its scripts until the test times out.
import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, linkSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script without types
import { NGINX, NGINX_JS_MODULE, nginxAvailable, startNginx } from './nginx.mjs';

const available = (nginxAvailable as () => boolean)();
// CI installs nginx-light and its njs module (.ci/run): there a missing one is a failure, not a skip.
if (!available && process.env.CI)
  throw new Error(
    `nginx or njs not found at ${NGINX as string}, ${NGINX_JS_MODULE as string}; .ci/run installs nginx-light, libnginx-mod-http-js`,
  );

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const start = startNginx as (
  collectorUrl: string,
  options: { dist: string },
) => Promise<{ origin: string; stop(): void }>;
// Never contacted: only /dist/ is requested.
const COLLECTOR = 'http://127.0.0.1:9';
const SCRIPT = 'export const served = true;\n';

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});
/** A new folder only its owner may enter, as `mktemp -d` makes them. */
function ownerOnlyFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bbc-nginx-test-'));
  chmodSync(dir, 0o700);
  scratch.push(dir);
  return dir;
}
/** A dist folder with one script in it, under `parent`. */
function distIn(parent: string): string {
  const dist = join(parent, 'checkout', 'dist');
  mkdirSync(dist, { recursive: true });
  writeFileSync(join(dist, 'index.js'), SCRIPT);
  return dist;
}

describe.skipIf(!available)('the nginx helper serves a checkout', () => {
  it('in a folder only its owner may enter, its files readable by the owner alone', async () => {
    const dist = distIn(ownerOnlyFolder());
    chmodSync(join(dist, 'index.js'), 0o600);
    const nginx = await start(COLLECTOR, { dist });
    try {
      const response = await fetch(`${nginx.origin}/dist/index.js`, { signal: AbortSignal.timeout(10_000) });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/javascript');
      expect(await response.text()).toBe(SCRIPT);
    } finally {
      nginx.stop();
    }
  });
});

describe.skipIf(!available)('the nginx helper, given a folder it cannot serve, fails at once with the reason', () => {
  it('a missing folder', async () => {
    const dist = join(ownerOnlyFolder(), 'no-such-dist');
    await expect(start(COLLECTOR, { dist })).rejects.toMatchObject({
      code: 'NGINX_CANNOT_SERVE',
      message: expect.stringMatching(/no-such-dist: ENOENT: no such file or directory/) as string,
    });
  });

  it('an empty folder: nothing proves that it serves', async () => {
    const dist = join(ownerOnlyFolder(), 'empty');
    mkdirSync(dist);
    await expect(start(COLLECTOR, { dist })).rejects.toMatchObject({
      code: 'NGINX_CANNOT_SERVE',
      message: expect.stringContaining('it holds no file') as string,
    });
  });

  // Root reads every file, so the helper runs as `nobody` when the tests run as root, and as
  // the tests' user otherwise: a folder or a file with no permission at all is then out of its
  // reach, as a 0700 checkout was out of reach of the nginx workers that root's nginx started
  // as `nobody`. The helper runs in a process of its own, from a copy that `nobody` can read.
  const asRoot = process.getuid?.() === 0;
  function runHelperElsewhere(
    dist: string,
    fakeNginx?: string,
  ): Promise<{ message?: string; code?: string; served?: boolean }> {
    const copy = mkdtempSync(join(tmpdir(), 'bbc-nginx-helper-'));
    scratch.push(copy);
    chmodSync(copy, 0o755);
    if (fakeNginx !== undefined) writeFileSync(join(copy, 'nginx'), fakeNginx, { mode: 0o755 });
    for (const file of [
      'test/support/nginx.mjs',
      'test/support/processes.mjs',
      'proxy/nginx/iojs-http.conf',
      'proxy/nginx/iojs-location.conf',
      'proxy/nginx/iojs.js',
    ]) {
      mkdirSync(dirname(join(copy, file)), { recursive: true, mode: 0o755 });
      copyFileSync(join(ROOT, file), join(copy, file));
      chmodSync(join(copy, file), 0o644);
    }
    writeFileSync(
      join(copy, 'run.mjs'),
      `import { startNginx } from './test/support/nginx.mjs';
      try {
        (await startNginx(${JSON.stringify(COLLECTOR)}, { dist: process.argv[2] })).stop();
        console.log(JSON.stringify({ served: true }));
      } catch (error) {
        console.log(JSON.stringify({ message: error.message, code: error.code }));
      }`,
    );
    chmodSync(join(copy, 'run.mjs'), 0o644);
    // This Node may sit where `nobody` cannot go (.ci/run's Node 26 in root's cache): a link to
    // it in the copy's folder, or a copy of it across file systems.
    const node = join(copy, 'node');
    try {
      linkSync(process.execPath, node);
    } catch {
      copyFileSync(process.execPath, node);
    }
    chmodSync(node, 0o755);
    return new Promise((resolve, reject) =>
      execFile(
        node,
        [join(copy, 'run.mjs'), dist],
        {
          timeout: 30_000,
          cwd: copy,
          env: { ...process.env, ...(fakeNginx === undefined ? {} : { NGINX_PATH: join(copy, 'nginx') }) },
          ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
        },
        (error, stdout, stderr) =>
          error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
      ),
    );
  }
  /** A dist folder the helper's process can reach, in a folder anyone may enter. */
  function reachableDist(): string {
    const parent = ownerOnlyFolder();
    chmodSync(parent, 0o755);
    const dist = distIn(parent);
    chmodSync(dirname(dist), 0o755);
    chmodSync(dist, 0o755);
    return dist;
  }

  it('a file of it the workers cannot read: the start fails with the line of error.log', async () => {
    const dist = reachableDist();
    chmodSync(join(dist, 'index.js'), 0);
    const result = await runHelperElsewhere(dist);
    expect(result.code).toBe('NGINX_CANNOT_SERVE');
    expect(result.message).toContain('GET /dist/index.js answered 403');
    expect(result.message).toMatch(/open\(\) ".*\/dist\/index\.js" failed \(13: Permission denied\)/);
    // The worker that logged it (`[error] <pid>#<thread>`) is gone: a failed start leaves no process.
    const worker = Number(/\[error\] (\d+)#/.exec(result.message!)![1]);
    expect(() => process.kill(worker, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
  });

  it('a folder the helper cannot read', async () => {
    const dist = reachableDist();
    chmodSync(dist, 0);
    expect(await runHelperElsewhere(dist)).toMatchObject({
      code: 'NGINX_CANNOT_SERVE',
      message: expect.stringMatching(/dist: EACCES: permission denied/) as string,
    });
  });

  it('the same helper, elsewhere, serves a folder it can read: the failures above are the permissions', async () => {
    expect(await runHelperElsewhere(reachableDist())).toEqual({ served: true });
  });

  // An nginx that passes `nginx -t` and then fails: its words reach the error, not a time-out.
  it('an nginx that exits at start: the start fails with what it said', async () => {
    const fake =
      '#!/bin/sh\n[ "$1" = -t ] && exit 0\necho "nginx: [emerg] bind() failed (98: Address in use)" >&2\nexit 1\n';
    expect(await runHelperElsewhere(reachableDist(), fake)).toMatchObject({
      code: 'NGINX_DID_NOT_START',
      message: expect.stringMatching(/^nginx exited \(1\); nginx said: nginx: \[emerg\] bind\(\) failed/) as string,
    });
  });

  it('an nginx that never answers: the start fails, naming the port', async () => {
    const fake = '#!/bin/sh\n[ "$1" = -t ] && exit 0\nexec sleep 600\n';
    expect(await runHelperElsewhere(reachableDist(), fake)).toMatchObject({
      code: 'NGINX_DID_NOT_START',
      message: expect.stringMatching(
        /^nginx did not answer on port \d+; nginx said: \(nothing in error\.log\)$/,
      ) as string,
    });
  });
});
