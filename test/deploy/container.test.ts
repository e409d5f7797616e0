// deploy/Containerfile as docs/deploy.md builds and runs it: Debian's podman builds the image
// from this repository (after npm ci and npm run build, with nothing else prepared) on a base
// of Debian's minbase and the node binary only, then runs it on the host's loopback beside
// the emulated service: a checkout reaches its signed decision, the HEALTHCHECK reports healthy
// through `blackbox-capture serve healthcheck`, and `podman stop` (SIGTERM) ends it with exit 0
// within the grace period, its data kept on the volume.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { gatewayEnvironment, postCheckout, webhookReceiver } from '../support/gateway.js';
import { closeServers } from '../support/http.js';
import { baseImage, podman, podmanEnv, podmanProblem } from '../support/podman.js';
import { freePort } from '../support/processes.mjs';
import { startRedis } from '../support/redis-server.mjs';
import { haveRedis } from '../support/redis.js';
import { ROOT } from '../support/tarball.js';
import { snippet } from '../support/readme.js';

const problem = podmanProblem();
if (problem && process.env.CI) throw new Error(`podman cannot run a container here: ${problem}; .ci/run installs it`);

const IMAGE = `localhost/blackbox-capture-gateway-test:${process.pid}`;
const CONTAINER = `bbc-gateway-test-${process.pid}`;
const VOLUME = `bbc-gateway-data-${process.pid}`;
/** The grace period `podman stop` gives before SIGKILL: the recipes' (recipes.test.ts holds them equal). */
const GRACE_SECONDS = 60;

const ok = (result: ReturnType<typeof podman>) => {
  expect(result.status, `${result.stderr}${result.error?.message ?? ''}`).toBe(0);
  return result.stdout;
};

describe.skipIf(problem !== undefined)(
  `deploy/Containerfile in podman${problem ? ` (skipped: ${problem})` : ''}`,
  () => {
    let emulator: Emulator | undefined;
    let buildSeconds = 0;
    /** The base image a shop brings (test/support/podman.ts). */
    let base = '';

    beforeAll(() => {
      base = baseImage();
      // The command docs/deploy.md prints, as written, with the base image in BASE_IMAGE.
      const command = snippet('deploy-container-build').code.trim();
      expect(command).toBe(
        'podman build --format docker -f deploy/Containerfile --build-arg BASE_IMAGE="$BASE_IMAGE" -t blackbox-capture-gateway .',
      );
      const started = Date.now();
      const built = spawnSync('sh', ['-c', command], {
        cwd: ROOT,
        encoding: 'utf8',
        env: podmanEnv({ BASE_IMAGE: base }),
        timeout: 600_000,
      });
      expect(built.status, built.stderr).toBe(0);
      // A tag of this run's own, so that the documented one can be built again meanwhile.
      ok(podman(['tag', 'localhost/blackbox-capture-gateway:latest', IMAGE]));
      ok(podman(['untag', 'localhost/blackbox-capture-gateway:latest', 'localhost/blackbox-capture-gateway:latest']));
      buildSeconds = (Date.now() - started) / 1000;
    }, 900_000);

    afterAll(async () => {
      podman(['rm', '--force', '--volumes', '--time', '0', CONTAINER]);
      podman(['volume', 'rm', '--force', VOLUME]);
      podman(['rmi', '--force', IMAGE]);
      await emulator?.close();
      await closeServers();
    });

    it('is built as stated, holds what the recipe says and nothing of npm or curl', () => {
      expect(buildSeconds).toBeGreaterThan(0);
      const config = JSON.parse(ok(podman(['image', 'inspect', IMAGE, '--format', '{{json .Config}}']))) as {
        User: string;
        StopSignal: string;
        Volumes: Record<string, unknown>;
        Env: string[];
        Entrypoint: string[];
      };
      // Docker's format keeps the HEALTHCHECK beside the config.
      const health = JSON.parse(ok(podman(['image', 'inspect', IMAGE, '--format', '{{json .HealthCheck}}']))) as {
        Test: string[];
      };
      expect(config.User).toBe('10001:10001');
      expect(config.StopSignal).toBe('SIGTERM');
      expect(Object.keys(config.Volumes)).toEqual(['/var/lib/blackbox-capture']);
      expect(config.Env).toEqual(
        expect.arrayContaining(['HOST=0.0.0.0', 'PORT=8787', 'DATA_DIR=/var/lib/blackbox-capture']),
      );
      expect(health.Test).toEqual([
        'CMD',
        'node',
        '--',
        '/opt/blackbox-capture/dist/cli.js',
        'serve',
        'healthcheck',
        '--timeout',
        '3',
      ]);
      expect(config.Entrypoint).toEqual(['node', '--', '/opt/blackbox-capture/dist/cli.js', 'serve']);
      const inside = ok(
        podman([
          'run',
          '--rm',
          '--entrypoint',
          'sh',
          IMAGE,
          '-c',
          'id -u; ls /opt/blackbox-capture; ls /opt/blackbox-capture/node_modules; command -v npm curl wget || true; node /opt/blackbox-capture/dist/cli.js --version',
        ]),
      ).split('\n');
      // Arguments after the image go to serve, node's own options ended by the ENTRYPOINT's `--`.
      const missing = podman(['run', '--rm', IMAGE, '--env-file', '/nonexistent/gateway.env']);
      expect(missing.status).toBe(2);
      // (podman adds its own lines: without systemd it cannot set the health check's timer.)
      expect(missing.stderr).toMatch(/^blackbox-capture serve: cannot read the env file \/nonexistent\/gateway\.env/m);
      const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
      expect(inside.filter(Boolean)).toEqual([
        '10001',
        'LICENSE',
        'dist',
        'node_modules',
        'package.json',
        'dom-serializer',
        'domelementtype',
        'domhandler',
        'domutils',
        'htmlparser2',
        version,
      ]);
    });

    it('runs beside the emulated service: a signed decision, healthy, and SIGTERM ends it with exit 0', async () => {
      emulator = await startEmulator({ accountRequestsPerSecond: 0 });
      const shop = await webhookReceiver();
      const gateway = await startContainer(CONTAINER, IMAGE, emulator, shop.url, [
        '--volume',
        `${VOLUME}:/var/lib/blackbox-capture`,
      ]);

      // The HEALTHCHECK, run as the engine runs it (podman's timer needs systemd; here, by hand).
      await expect.poll(() => podman(['healthcheck', 'run', CONTAINER]).status, { timeout: 30_000 }).toBe(0);
      expect(ok(podman(['inspect', CONTAINER, '--format', '{{.State.Healthcheck.Status}}'])).trim()).toBe('healthy');

      expect((await postCheckout(gateway.url, { order: 'container-order-1', from: '203.0.113.9' })).status).toBe(202);
      await expect.poll(shop.orders, { timeout: 30_000 }).toEqual(['container-order-1']);

      stopWithinGrace(CONTAINER);
      expect(gateway.logs()).toContain('SIGTERM: taking no new checkout');
      expect(gateway.logs()).toContain('stopped; what is queued and undelivered is kept');
      // The instance's journal and outbox are on the volume, for the next start.
      const kept = ok(
        podman([
          'run',
          '--rm',
          '--entrypoint',
          'ls',
          '--volume',
          `${VOLUME}:/var/lib/blackbox-capture`,
          IMAGE,
          '-A',
          '/var/lib/blackbox-capture',
        ]),
      );
      expect(kept.trim()).not.toBe('');
    }, 180_000);

    it.skipIf(!haveRedis)(
      "the fleet target: two gateways on one Redis (the host's), each ready and telling its decision",
      async () => {
        const fleetImage = `${IMAGE}-fleet`;
        ok(
          podman(
            [
              'build',
              '--format',
              'docker',
              '--target',
              'fleet',
              '-f',
              'deploy/Containerfile',
              '--build-arg',
              `BASE_IMAGE=${base}`,
              '-t',
              fleetImage,
              '.',
            ],
            { cwd: ROOT },
          ),
        );
        const redis = await startRedis();
        const names = [`${CONTAINER}-a`, `${CONTAINER}-b`];
        try {
          emulator ??= await startEmulator({ accountRequestsPerSecond: 0 });
          const shop = await webhookReceiver();
          const gateways = [];
          for (const name of names)
            gateways.push(await startContainer(name, fleetImage, emulator, shop.url, [], { REDIS_URL: redis.url }));
          for (const name of names)
            await expect.poll(() => podman(['healthcheck', 'run', name]).status, { timeout: 30_000 }).toBe(0);
          for (const [i, gateway] of gateways.entries())
            expect(
              (await postCheckout(gateway.url, { order: `fleet-order-${i}`, from: `203.0.113.${20 + i}` })).status,
            ).toBe(202);
          await expect.poll(shop.orders, { timeout: 30_000 }).toEqual(['fleet-order-0', 'fleet-order-1']);
          for (const name of names) stopWithinGrace(name);
        } finally {
          for (const name of names) podman(['rm', '--force', '--volumes', '--time', '0', name]);
          podman(['rmi', '--force', fleetImage]);
          await redis.stop();
        }
      },
      300_000,
    );
  },
);

/** A gateway container on the host's network beside `emulator`, configured by an env file; once it listens. */
async function startContainer(
  name: string,
  image: string,
  emulator: Emulator,
  decisionUrl: string,
  args: string[],
  extra: Record<string, string> = {},
) {
  const port = await freePort();
  // The image's DATA_DIR and defaults stand; on the host's network the test's gateway listens on loopback only.
  const { DATA_DIR: _hostDir, ...env } = gatewayEnvironment(emulator, decisionUrl, {
    PORT: String(port),
    HOST: '127.0.0.1',
    ...extra,
  });
  const envFile = join(mkdtempSync(join(tmpdir(), 'bbc-container-')), 'gateway.env');
  writeFileSync(
    envFile,
    Object.entries(env)
      .map(([key, value]) => `${key}=${value}\n`)
      .join(''),
  );
  ok(
    podman([
      'run',
      '--detach',
      '--name',
      name,
      '--network',
      'host',
      // As the Kubernetes manifests run it: nothing writable but the volume, no capability.
      '--read-only',
      '--cap-drop',
      'all',
      '--security-opt',
      'no-new-privileges',
      '--env-file',
      envFile,
      ...args,
      image,
    ]),
  );
  const logs = () => {
    const result = podman(['logs', name]);
    return result.stdout + result.stderr;
  };
  await expect.poll(logs, { timeout: 30_000 }).toContain(`blackbox-capture gateway on http://127.0.0.1:${port}`);
  return { url: `http://127.0.0.1:${port}`, logs };
}

/** `podman stop` (SIGTERM, then SIGKILL past the grace period): the gateway exits 0 within it. */
function stopWithinGrace(name: string) {
  const stopping = Date.now();
  ok(podman(['stop', '--time', String(GRACE_SECONDS), name]));
  expect((Date.now() - stopping) / 1000).toBeLessThan(GRACE_SECONDS);
  expect(ok(podman(['inspect', name, '--format', '{{.State.ExitCode}}'])).trim()).toBe('0');
}
