// The recipes of deploy/ held to the code and to each other without running them (the
// container runs in container.test.ts): every variable they set is one the gateway reads
// (src/gateway/settings.ts) and no secret is written in them; the image's packages are the
// production closure package-lock.json pins; the Kubernetes manifests pass the Kubernetes
// schema (kubernetes-models' validators, and its types by tsc, which refuse an unknown field);
// the systemd unit passes `systemd-analyze verify`; and the choices they share agree.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as core from 'kubernetes-models/v1';
import * as apps from 'kubernetes-models/apps/v1';
import * as networking from 'kubernetes-models/networking.k8s.io/v1';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { VARIABLES } from '../../src/gateway/settings.js';
import { ROOT } from '../support/tarball.js';

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const MANIFESTS = ['deploy/kubernetes/gateway.yaml', 'deploy/kubernetes/fleet.yaml'];
const SCRATCH = join(ROOT, '.scratch', `deploy-${process.pid}`);
afterAll(() => rmSync(SCRATCH, { recursive: true, force: true }));

/** The Containerfile's instructions, continuation lines joined, by stage (`FROM … AS name`, the last ''). */
function containerfile(): Array<{ stage: string; instruction: string; args: string }> {
  const lines = read('deploy/Containerfile')
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .filter((line) => line.trim() && !line.startsWith('#'));
  let stage = '';
  return lines.map((line) => {
    const [, instruction, args] = /^(\w+)\s+(.*)$/.exec(line.trim())!;
    if (instruction === 'FROM') stage = / AS (\S+)$/i.exec(args!)?.[1] ?? '';
    return { stage, instruction: instruction!, args: args! };
  });
}

/** The package folders a stage copies from node_modules. */
const copiedPackages = (stage: string) =>
  containerfile()
    .filter((line) => line.stage === stage && line.instruction === 'COPY' && line.args.startsWith('node_modules/'))
    .map((line) => /^node_modules\/(\S+?)\/ /.exec(line.args)![1]!)
    .sort();

type Lock = { packages: Record<string, { dependencies?: Record<string, string> }> };

/** The folders of node_modules that `names` need, by package-lock.json (nested ones ride in their parent's folder). */
function closure(names: string[]): string[] {
  const { packages } = JSON.parse(read('package-lock.json')) as Lock;
  const resolve = (from: string, name: string) => {
    for (let dir = from; ; dir = dir.slice(0, Math.max(0, dir.lastIndexOf('/node_modules/')))) {
      const key = `${dir ? `${dir}/` : ''}node_modules/${name}`;
      if (packages[key]) return key;
      if (!dir) throw new Error(`package-lock.json has no ${name} for ${from}`);
    }
  };
  const seen = new Set<string>();
  const todo = names.map((name) => resolve('', name));
  while (todo.length) {
    const key = todo.pop()!;
    if (seen.has(key)) continue;
    seen.add(key);
    for (const dependency of Object.keys(packages[key]!.dependencies ?? {})) todo.push(resolve(key, dependency));
  }
  return [...seen]
    .filter((key) => key.split('node_modules/').length === 2)
    .map((key) => key.slice('node_modules/'.length))
    .sort();
}

/** A Kubernetes object as the manifests write it. */
type K8sObject = { apiVersion: string; kind: string; [field: string]: unknown };

/** Every Kubernetes object of the manifests, with its file. */
const objects = () =>
  MANIFESTS.flatMap((file) =>
    parseAllDocuments(read(file)).map((document) => ({ file, object: document.toJS() as K8sObject })),
  );

type Container = {
  env?: Array<{ name: string; value?: string }>;
  livenessProbe: { httpGet: { path: string } };
  readinessProbe: { httpGet: { path: string } };
  volumeMounts?: Array<{ mountPath: string }>;
};
type PodSpec = {
  terminationGracePeriodSeconds: number;
  securityContext: { runAsNonRoot: boolean; runAsUser: number };
  containers: Container[];
};
const deployments = () =>
  objects()
    .filter(({ object }) => object.kind === 'Deployment')
    .map(({ file, object }) => ({
      file,
      spec: object.spec as { replicas: number; strategy: { type: string }; template: { spec: PodSpec } },
    }));

/** The variables a recipe gives the gateway: name and value. */
function recipeVariables(): Array<{ recipe: string; name: string; value: string | undefined }> {
  const found: Array<{ recipe: string; name: string; value: string | undefined }> = [];
  for (const line of containerfile().filter((line) => line.instruction === 'ENV'))
    for (const [, name, value] of line.args.matchAll(/(\w+)=(\S+)/g))
      found.push({ recipe: 'deploy/Containerfile', name: name!, value });
  const compose = parse(read('deploy/compose.yaml')) as {
    services: Record<string, { environment: Record<string, string> }>;
  };
  for (const [name, value] of Object.entries(compose.services.gateway!.environment))
    found.push({ recipe: 'deploy/compose.yaml', name, value });
  for (const [, name, value] of read('deploy/blackbox-capture.service').matchAll(/^Environment=(\w+)=(.*)$/gm))
    found.push({ recipe: 'deploy/blackbox-capture.service', name: name!, value });
  for (const { file, spec } of deployments())
    for (const { name, value } of spec.template.spec.containers.flatMap((c) => c.env ?? []))
      found.push({ recipe: file, name, value });
  return found;
}

describe('the recipes of deploy/', () => {
  it('set only variables the gateway reads, and never a secret', () => {
    const variables = recipeVariables();
    expect(new Set(variables.map((v) => v.recipe))).toEqual(
      new Set(['deploy/Containerfile', 'deploy/compose.yaml', 'deploy/blackbox-capture.service', ...MANIFESTS]),
    );
    expect(variables.filter(({ name }) => !(name in VARIABLES)).map((v) => `${v.recipe}: ${v.name}`)).toEqual([]);
    expect(
      variables
        .filter(({ name }) => VARIABLES[name as keyof typeof VARIABLES]?.kind === 'secret')
        .map((v) => `${v.recipe}: ${v.name}`),
    ).toEqual([]);
    // Each listens on every address of its container or pod, on the image's port, its data where the volume is.
    for (const recipe of ['deploy/Containerfile', 'deploy/compose.yaml', 'deploy/kubernetes/gateway.yaml']) {
      const of = (name: string) => variables.find((v) => v.recipe === recipe && v.name === name)?.value;
      expect([of('HOST'), of('PORT'), of('DATA_DIR')], recipe).toEqual([
        '0.0.0.0',
        '8787',
        '/var/lib/blackbox-capture',
      ]);
    }
    expect(variables.find((v) => v.recipe === 'deploy/blackbox-capture.service')).toEqual({
      recipe: 'deploy/blackbox-capture.service',
      name: 'DATA_DIR',
      value: '%S/blackbox-capture',
    });
  });

  it("copy into the image exactly the production closure package-lock.json pins: the package's, then the fleet's", () => {
    const { dependencies } = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    const own = closure(Object.keys(dependencies));
    expect(own).toContain('htmlparser2');
    expect(copiedPackages('one-instance')).toEqual(own);
    // The fleet's optional peers (gateway.ts loads them for REDIS_URL), beyond what the image has.
    expect(copiedPackages('fleet')).toEqual(closure(['ioredis', 'bullmq']).filter((name) => !own.includes(name)));
    // The default target is the one instance.
    expect(containerfile().at(-1)).toEqual({ stage: '', instruction: 'FROM', args: 'one-instance' });
  });

  it('agree on the user, the stop signal, the grace period, the health check and the data volume', () => {
    const lines = containerfile();
    const args = (instruction: string) => lines.find((line) => line.instruction === instruction)?.args;
    expect(args('USER')).toBe('10001:10001');
    expect(args('STOPSIGNAL')).toBe('SIGTERM');
    expect(args('VOLUME')).toBe('/var/lib/blackbox-capture');
    const healthcheck = /CMD (\[.*\])$/.exec(args('HEALTHCHECK')!)![1]!;
    const compose = (
      parse(read('deploy/compose.yaml')) as {
        services: {
          gateway: {
            stop_signal: string;
            stop_grace_period: string;
            healthcheck: { test: string[] };
            volumes: string[];
            build: { dockerfile: string; context: string };
          };
        };
      }
    ).services.gateway;
    expect(compose.healthcheck.test).toEqual(['CMD', ...(JSON.parse(healthcheck) as string[])]);
    expect(compose.stop_signal).toBe('SIGTERM');
    expect(compose.volumes).toEqual(['data:/var/lib/blackbox-capture']);
    // One volume name whatever runs it (Compose, podman-compose, podman run as docs/deploy.md writes it).
    const volumeName = (parse(read('deploy/compose.yaml')) as { volumes: { data: { name: string } } }).volumes.data
      .name;
    expect(volumeName).toBe('blackbox-capture-data');
    expect(read('docs/deploy.md')).toContain(`--volume ${volumeName}:/var/lib/blackbox-capture`);
    expect(compose.build).toMatchObject({ context: '..', dockerfile: 'deploy/Containerfile' });
    const unit = read('deploy/blackbox-capture.service');
    const grace = Number(/^TimeoutStopSec=(\d+)s$/m.exec(unit)![1]);
    expect(compose.stop_grace_period).toBe(`${grace}s`);
    for (const { file, spec } of deployments()) {
      expect(spec.template.spec.terminationGracePeriodSeconds, file).toBe(grace);
      expect(spec.template.spec.securityContext, file).toMatchObject({ runAsNonRoot: true, runAsUser: 10001 });
      for (const container of spec.template.spec.containers) {
        expect(container.livenessProbe.httpGet.path, file).toBe('/healthz');
        expect(container.readinessProbe.httpGet.path, file).toBe('/readyz');
      }
    }
    expect(unit).toMatch(/^KillSignal=SIGTERM$/m);
    expect(unit).toMatch(/^StateDirectory=blackbox-capture$/m);
  });

  it('one instance keeps one replica on its volume; a fleet shares Redis and rolls', () => {
    const [one, fleet] = deployments();
    expect(one!.file).toBe('deploy/kubernetes/gateway.yaml');
    expect([one!.spec.replicas, one!.spec.strategy.type]).toEqual([1, 'Recreate']);
    expect(one!.spec.template.spec.containers[0]!.volumeMounts).toEqual([
      { name: 'data', mountPath: '/var/lib/blackbox-capture' },
    ]);
    expect(fleet!.file).toBe('deploy/kubernetes/fleet.yaml');
    expect(fleet!.spec.replicas).toBeGreaterThan(1);
    expect(fleet!.spec.strategy.type).toBe('RollingUpdate');
    expect(read('deploy/kubernetes/fleet.yaml')).toMatch(/--maxmemory-policy noeviction/);
  });

  it("the fleet's Redis: its Secret's password through stdin, never on a command line, and only the gateway's pods let in", () => {
    const fleet = objects().filter(({ file }) => file === 'deploy/kubernetes/fleet.yaml');
    const redis = fleet.find(({ object }) => object.kind === 'StatefulSet')!.object as unknown as {
      spec: { template: { spec: { containers: RedisContainer[] } } };
    };
    const [container] = redis.spec.template.spec.containers;
    expect(container!.env).toEqual([
      {
        name: 'REDIS_PASSWORD',
        valueFrom: { secretKeyRef: { name: 'blackbox-capture-redis', key: 'REDIS_PASSWORD' } },
      },
    ]);
    // Run as the manifest writes it, redis-server and redis-cli on a socket of the test's own.
    const dir = join(SCRATCH, 'redis');
    mkdirSync(join(dir, 'bin'), { recursive: true });
    const socket = join(dir, 'redis.sock');
    for (const [name, options] of [
      ['redis-server', `--port 0 --unixsocket ${socket} --dir ${dir}`],
      ['redis-cli', `-s ${socket}`],
    ])
      writeFileSync(join(dir, 'bin', name!), `#!/bin/sh\nexec /usr/bin/${name} ${options} "$@"\n`, { mode: 0o755 });
    const env = { PATH: `${join(dir, 'bin')}:${process.env.PATH}`, REDIS_PASSWORD: 'a-password-0123456789abcdef' };
    const server = spawn(container!.command[0]!, [...container!.command.slice(1), ...container!.args], { env });
    try {
      const probe = () =>
        spawnSync(container!.readinessProbe.exec.command[0]!, container!.readinessProbe.exec.command.slice(1), { env });
      for (let i = 0; i < 50 && probe().status !== 0; i++) spawnSync('sleep', ['0.1']);
      expect(probe().status).toBe(0);
      // Without the password: refused.
      expect(spawnSync('/usr/bin/redis-cli', ['-s', socket, 'ping'], { encoding: 'utf8' }).stdout).toMatch(/NOAUTH/);
      // Nothing of it on the command line; the settings as written.
      const cmdline = readFileSync(`/proc/${server.pid}/cmdline`, 'utf8');
      expect(cmdline).not.toContain(env.REDIS_PASSWORD);
      const policy = spawnSync('/usr/bin/redis-cli', ['-s', socket, 'config', 'get', 'maxmemory-policy'], {
        env: { REDISCLI_AUTH: env.REDIS_PASSWORD },
        encoding: 'utf8',
      });
      expect(policy.stdout.split('\n')[1]).toBe('noeviction');
      // At most half its memory limit: an AOF rewrite's fork copies the pages written meanwhile,
      // and a Redis the kernel kills near its limit never answers "full" (docs/deploy.md).
      const maxmemory = spawnSync('/usr/bin/redis-cli', ['-s', socket, 'config', 'get', 'maxmemory'], {
        env: { REDISCLI_AUTH: env.REDIS_PASSWORD },
        encoding: 'utf8',
      });
      const limit = /^(\d+)Mi$/.exec(container!.resources.limits.memory)!;
      expect(Number(maxmemory.stdout.split('\n')[1]) * 2).toBeLessThanOrEqual(Number(limit[1]) * 2 ** 20);
    } finally {
      server.kill('SIGTERM');
    }
    const policy = fleet.find(({ object }) => object.kind === 'NetworkPolicy')!.object as unknown as {
      spec: { podSelector: unknown; ingress: Array<{ from: unknown[]; ports: unknown[] }> };
    };
    expect(policy.spec.podSelector).toEqual({ matchLabels: { 'app.kubernetes.io/name': 'blackbox-capture-redis' } });
    expect(policy.spec.ingress).toEqual([
      {
        from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'blackbox-capture-gateway' } } }],
        ports: [{ port: 6379 }],
      },
    ]);
  });
});

type RedisContainer = {
  command: string[];
  args: string[];
  env: unknown[];
  readinessProbe: { exec: { command: string[] } };
  resources: { limits: { memory: string } };
};

/** The manifests' objects as TypeScript typed by kubernetes-models: tsc refuses an unknown or mistyped field. */
function typedSource(list: K8sObject[]): string {
  const types: Record<string, [string, string]> = {
    Deployment: ['IDeployment', 'kubernetes-models/apps/v1/Deployment'],
    StatefulSet: ['IStatefulSet', 'kubernetes-models/apps/v1/StatefulSet'],
    Service: ['IService', 'kubernetes-models/v1/Service'],
    PersistentVolumeClaim: ['IPersistentVolumeClaim', 'kubernetes-models/v1/PersistentVolumeClaim'],
    NetworkPolicy: ['INetworkPolicy', 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy'],
  };
  const used = [...new Set(list.map((object) => object.kind))];
  return [
    ...used.map((kind) => `import type { ${types[kind]![0]} } from '${types[kind]![1]}';`),
    ...list.map((object, i) => `export const o${i}: ${types[object.kind]![0]} = ${JSON.stringify(object)};`),
  ].join('\n');
}

describe('the Kubernetes manifests', () => {
  const models: Record<string, new (data: never) => { validate(): void }> = {
    'v1/Service': core.Service,
    'v1/PersistentVolumeClaim': core.PersistentVolumeClaim,
    'apps/v1/Deployment': apps.Deployment,
    'apps/v1/StatefulSet': apps.StatefulSet,
    'networking.k8s.io/v1/NetworkPolicy': networking.NetworkPolicy,
  };
  const validate = (object: K8sObject) => {
    const Model = models[`${object.apiVersion}/${object.kind}`];
    if (!Model) throw new Error(`no model for ${object.apiVersion} ${object.kind}`);
    new Model(object as never).validate();
  };

  it("pass the Kubernetes schema's validators", () => {
    const all = objects();
    expect(all.map(({ object }) => object.kind)).toEqual([
      'PersistentVolumeClaim',
      'Deployment',
      'Service',
      'StatefulSet',
      'Service',
      'NetworkPolicy',
      'Deployment',
      'Service',
    ]);
    for (const { object } of all) expect(() => validate(object)).not.toThrow();
    const wrong = structuredClone(all[1]!.object) as unknown as { spec: { replicas: unknown } };
    wrong.spec.replicas = 'one';
    expect(() => validate(wrong as unknown as K8sObject)).toThrow(/replicas must be integer/);
  });

  it("pass the schema's types, which refuse an unknown field: tsc finds the broken copy's only", () => {
    mkdirSync(SCRATCH, { recursive: true });
    const all = objects().map(({ object }) => object);
    writeFileSync(join(SCRATCH, 'manifests.ts'), typedSource(all));
    const broken = structuredClone(all[1]!) as unknown as { spec: { template: { spec: Record<string, unknown> } } };
    broken.spec.template.spec.terminationGracePeriod = 60;
    writeFileSync(join(SCRATCH, 'broken.ts'), typedSource([broken as unknown as K8sObject]));
    const tsc = spawnSync(
      process.execPath,
      [
        join(ROOT, 'node_modules/typescript/bin/tsc'),
        '--noEmit',
        '--strict',
        '--skipLibCheck',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--target',
        'es2022',
        join(SCRATCH, 'manifests.ts'),
        join(SCRATCH, 'broken.ts'),
      ],
      { encoding: 'utf8' },
    );
    const errors = tsc.stdout.split('\n').filter((line) => /error TS/.test(line));
    expect(errors.filter((line) => !line.includes('broken.ts'))).toEqual([]);
    expect(errors.join('\n')).toMatch(/broken\.ts.*terminationGracePeriod.* does not exist in type 'IPodSpec'/);
  });
});

const systemdAnalyze = spawnSync('sh', ['-c', 'command -v systemd-analyze']).status === 0;
if (!systemdAnalyze && process.env.CI) throw new Error('systemd-analyze not found; .ci/run installs systemd');

describe.skipIf(!systemdAnalyze)(`the systemd unit${systemdAnalyze ? '' : ' (skipped: no systemd-analyze)'}`, () => {
  /** `systemd-analyze verify` of `unit` in a root of its own: the system's units, the package's command as installed. */
  function verify(unit: string) {
    const root = join(tmpdir(), `bbc-systemd-${process.pid}-${Math.random().toString(36).slice(2)}`);
    try {
      cpSync('/usr/lib/systemd/system', join(root, 'usr/lib/systemd/system'), { recursive: true });
      const command = join(root, 'opt/blackbox-capture/node_modules/.bin/blackbox-capture');
      mkdirSync(join(command, '..'), { recursive: true });
      writeFileSync(command, '#!/bin/sh\n', { mode: 0o755 });
      mkdirSync(join(root, 'etc/systemd/system'), { recursive: true });
      writeFileSync(join(root, 'etc/systemd/system/blackbox-capture.service'), unit);
      const result = spawnSync(
        'systemd-analyze',
        ['verify', `--root=${root}`, '/etc/systemd/system/blackbox-capture.service'],
        { encoding: 'utf8' },
      );
      return { status: result.status, output: result.stdout + result.stderr };
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }

  it('passes systemd-analyze verify with nothing to say', () => {
    expect(verify(read('deploy/blackbox-capture.service'))).toEqual({ status: 0, output: '' });
  });

  it('a unit with an unknown option or a missing command is reported: the check is not vacuous', () => {
    const unit = read('deploy/blackbox-capture.service');
    expect(verify(unit.replace('UMask=0077', 'UMask=0077\nProtectEverything=yes')).output).toMatch(
      /Unknown key 'ProtectEverything'/,
    );
    const missing = verify(unit.replace('/opt/blackbox-capture/', '/opt/elsewhere/'));
    expect(missing.status).not.toBe(0);
    expect(missing.output).toMatch(/is not executable/);
  });
});
