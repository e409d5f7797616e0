// The first-party fronts of proxy/ run by their real servers (Debian's caddy, apache2 and
// haproxy) on a free loopback port, in front of a given collector, for the conformance suite.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './processes.mjs';

export interface RunningFront {
  origin: string;
  stop(): Promise<void>;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** A shipped recipe's path. */
export const recipe = (path: string) => join(ROOT, 'proxy', path);

export const CADDY = process.env.CADDY_PATH ?? '/usr/bin/caddy';
export const APACHE = process.env.APACHE_PATH ?? '/usr/sbin/apache2';
export const HAPROXY = process.env.HAPROXY_PATH ?? '/usr/sbin/haproxy';
/** Whether `binary` exists; with CI set a missing one fails the run, as nginx does. */
export function available(binary: string, debianPackage: string): boolean {
  if (existsSync(binary)) return true;
  if (process.env.CI) throw new Error(`${binary} not found; .ci/run installs ${debianPackage}`);
  return false;
}

/**
 * Spawns a server and resolves once GET `ready.path` answers `ready.status` (by default GET /
 * answering 404: each test configuration of the iojs recipes answers 404 outside the prefix);
 * rejects with what the server said if it exits or stays silent for 10 s.
 */
export async function started(
  child: ChildProcess,
  port: number,
  dir: string,
  said: () => string = () => '',
  ready = { path: '/', status: 404 },
): Promise<RunningFront> {
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const stuck = setTimeout(() => child.kill('SIGKILL'), 5000);
      child.kill('SIGTERM');
      await exited;
      clearTimeout(stuck);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const origin = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const status = await fetch(origin + ready.path, { signal: AbortSignal.timeout(2000) }).then(
      (response) => response.status,
      () => 0,
    );
    if (status === ready.status) return { origin, stop };
    if (child.exitCode !== null || child.signalCode !== null || i === 200) {
      await stop();
      throw new Error(`the front did not start on port ${port}: ${output}${said()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A front's folder of its own (removed when it stops) and a free loopback port. */
async function place(name: string): Promise<{ dir: string; port: number }> {
  return { dir: mkdtempSync(join(tmpdir(), `bbc-${name}-`)), port: (await freePort()) as number };
}

/**
 * The server's own check of its configuration (`apache2 -t`, `haproxy -c`, `nginx -t`: `check`
 * its arguments), then the server (`run`); throws what the check said when it refuses.
 */
export function checkedSpawn(binary: string, check: string[], run: string[], env?: NodeJS.ProcessEnv): ChildProcess {
  const checked = spawnSync(binary, check, { encoding: 'utf8', timeout: 30_000, env });
  if (checked.status !== 0) throw new Error(`${binary} ${check[0]} failed: ${checked.stdout}${checked.stderr}`);
  return spawn(binary, run, { env });
}

/** Caddy on `config` (a Caddyfile), its state in `dir`, with `env` over this process's environment. */
export function runCaddy(dir: string, config: string, env: Record<string, string> = {}): ChildProcess {
  return spawn(CADDY, ['run', '--adapter', 'caddyfile', '--config', config], {
    env: { ...process.env, HOME: dir, XDG_DATA_HOME: dir, ...env },
  });
}

/** A Caddyfile serving `site` (directives, one a line) on 127.0.0.1:`port`, without its admin API or HTTPS. */
export const caddyfile = (port: number | string, site: string[]) =>
  `{\n\tadmin off\n\tauto_https off\n}\nhttp://:${port} {\n\tbind 127.0.0.1\n${site.map((line) => `\t${line}\n`).join('')}}\n`;

/**
 * An httpd.conf for Apache in the foreground in `dir` on 127.0.0.1:`port` (as `nobody` when
 * started as root), loading `modules`, with `virtualHost` (lines) as its one virtual host.
 */
export function apacheConfig(dir: string, port: number | string, modules: string[], virtualHost: string[]): string {
  const load = (name: string) => `LoadModule ${name}_module /usr/lib/apache2/modules/mod_${name}.so\n`;
  return `${modules.map(load).join('')}${process.getuid?.() === 0 ? 'User nobody\nGroup nogroup\n' : ''}ServerName 127.0.0.1
Listen 127.0.0.1:${port}
PidFile ${dir}/httpd.pid
DefaultRuntimeDir ${dir}
ErrorLog ${dir}/error.log
LogLevel warn
Mutex file:${dir}
<VirtualHost 127.0.0.1:${port}>
${virtualHost.map((line) => `    ${line}\n`).join('')}</VirtualHost>
`;
}

/** What Apache wrote in `dir`'s error log (apacheConfig's), for a start that failed. */
export const apacheSaid = (dir: string) => () =>
  existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : '';

/** HAProxy's global and defaults sections for a test: HTTP, warnings on stderr, 10 s client and server timeouts. */
export const haproxyDefaults = (timeouts: string[] = []) =>
  `global
    log stderr format raw local0 warning
defaults
    mode http
    timeout client 10s
${timeouts.map((line) => `    ${line}\n`).join('')}    timeout connect 5s
    timeout server 10s
`;

/** Caddy with proxy/caddy/iojs.caddy imported as shipped; the upstream is its BBC_UPSTREAM. */
export async function startCaddy(collectorUrl: string): Promise<RunningFront> {
  const { dir, port } = await place('caddy');
  const config = join(dir, 'Caddyfile');
  writeFileSync(config, caddyfile(port, [`import ${recipe('caddy/iojs.caddy')}`, 'respond 404']));
  return started(runCaddy(dir, config, { BBC_UPSTREAM: new URL(collectorUrl).origin }), port, dir);
}

/**
 * Apache httpd in the foreground (one process, -X) with proxy/apache/iojs.conf included as
 * shipped, iojs.lua beside it. The two files are installed as a shop installs them, into a
 * folder Apache's workers can read: mod_lua reads iojs.lua in the worker, as `User`, at each
 * request, so a recipe left in a checkout only its owner can read answers 500 (docs/proxy.md,
 * "Apache httpd"). `recipes`: the folder the files are copied from (default proxy/).
 */
export async function startApache(collectorUrl: string, recipes = join(ROOT, 'proxy')): Promise<RunningFront> {
  const { dir, port } = await place('apache');
  const installed = join(dir, 'blackbox-capture');
  mkdirSync(installed);
  for (const file of ['iojs.conf', 'iojs.lua']) {
    copyFileSync(join(recipes, 'apache', file), join(installed, file));
    chmodSync(join(installed, file), 0o644);
  }
  // mkdtemp's folder is the owner's alone: the workers (nobody) must reach the installed files.
  chmodSync(dir, 0o755);
  chmodSync(installed, 0o755);
  const config = join(dir, 'httpd.conf');
  const modules = ['mpm_event', 'authz_core', 'authz_host', 'headers', 'proxy', 'proxy_http', 'alias', 'lua'];
  writeFileSync(
    config,
    apacheConfig(dir, port, modules, [
      `Define BBC_UPSTREAM ${new URL(collectorUrl).origin}`,
      `Define BBC_LUA ${join(installed, 'iojs.lua')}`,
      `Include ${join(installed, 'iojs.conf')}`,
      'RedirectMatch 404 "^/(?!iojs/)"',
    ]),
  );
  const child = checkedSpawn(APACHE, ['-t', '-f', config], ['-X', '-f', config]);
  return started(child, port, dir, apacheSaid(dir));
}

/** HAProxy with proxy/haproxy/iojs.cfg loaded as shipped; the collector is in its environment. */
export async function startHaproxy(collectorUrl: string): Promise<RunningFront> {
  const { dir, port } = await place('haproxy');
  const config = join(dir, 'haproxy.cfg');
  writeFileSync(
    config,
    `${haproxyDefaults()}frontend shop
    bind 127.0.0.1:${port}
    use_backend bbc_collector if { path_beg /iojs/ }
    http-request return status 404 unless { path_beg /iojs/ }
`,
  );
  const { host } = new URL(collectorUrl);
  const env = { ...process.env, BBC_COLLECTOR_HOST: host, BBC_COLLECTOR_SERVER: host };
  const files = ['-f', config, '-f', recipe('haproxy/iojs.cfg')];
  return started(checkedSpawn(HAPROXY, ['-c', ...files], ['-db', ...files], env), port, dir);
}

/** A Node server on a free loopback port for `handle`, as a running front. */
export async function listening(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  also: () => Promise<void> = async () => {},
): Promise<RunningFront> {
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stop: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await also();
    },
  };
}

/**
 * A stand-in for the platform's own edge in front of a front (Vercel's; your load balancer
 * self-hosted): the request goes on as sent, its path untouched, with `x-real-ip` overwritten
 * with the connection's peer, as Vercel does; the answer comes back as it came, header lines
 * and all. Stopping it stops the front behind.
 */
export function behindEdge(front: RunningFront): Promise<RunningFront> {
  const target = new URL(front.origin);
  return listening(
    (req, res) => {
      const headers = { ...req.headers, 'x-real-ip': req.socket.remoteAddress };
      const forwarded = httpRequest(
        { hostname: target.hostname, port: target.port, path: req.url, method: req.method, headers },
        (answer) => {
          res.writeHead(answer.statusCode!, answer.rawHeaders);
          answer.pipe(res);
        },
      );
      forwarded.on('error', () => res.destroy());
      req.pipe(forwarded);
    },
    () => front.stop(),
  );
}
