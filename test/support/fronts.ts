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

/** Caddy with proxy/caddy/iojs.caddy imported as shipped; the upstream is its BBC_UPSTREAM. */
export async function startCaddy(collectorUrl: string): Promise<RunningFront> {
  const dir = mkdtempSync(join(tmpdir(), 'bbc-caddy-'));
  const port = await freePort();
  const config = join(dir, 'Caddyfile');
  writeFileSync(
    config,
    `{
\tadmin off
\tauto_https off
}
http://:${port} {
\tbind 127.0.0.1
\timport ${recipe('caddy/iojs.caddy')}
\trespond 404
}
`,
  );
  const env = { ...process.env, BBC_UPSTREAM: new URL(collectorUrl).origin, HOME: dir, XDG_DATA_HOME: dir };
  const child = spawn(CADDY, ['run', '--adapter', 'caddyfile', '--config', config], { env });
  return started(child, port as number, dir);
}

/**
 * Apache httpd in the foreground (one process, -X) with proxy/apache/iojs.conf included as
 * shipped, iojs.lua beside it. The two files are installed as a shop installs them, into a
 * folder Apache's workers can read: mod_lua reads iojs.lua in the worker, as `User`, at each
 * request, so a recipe left in a checkout only its owner can read answers 500 (docs/proxy.md,
 * "Apache httpd"). `recipes`: the folder the files are copied from (default proxy/).
 */
export async function startApache(collectorUrl: string, recipes = join(ROOT, 'proxy')): Promise<RunningFront> {
  const dir = mkdtempSync(join(tmpdir(), 'bbc-apache-'));
  const installed = join(dir, 'blackbox-capture');
  mkdirSync(installed);
  for (const file of ['iojs.conf', 'iojs.lua']) {
    copyFileSync(join(recipes, 'apache', file), join(installed, file));
    chmodSync(join(installed, file), 0o644);
  }
  // mkdtemp's folder is the owner's alone: the workers (nobody) must reach the installed files.
  chmodSync(dir, 0o755);
  chmodSync(installed, 0o755);
  const port = await freePort();
  const modules = '/usr/lib/apache2/modules';
  const errorLog = join(dir, 'error.log');
  const config = join(dir, 'httpd.conf');
  const load = (name: string, file = `mod_${name}.so`) => `LoadModule ${name}_module ${modules}/${file}`;
  writeFileSync(
    config,
    `${load('mpm_event')}
${load('authz_core')}
${load('authz_host')}
${load('headers')}
${load('proxy')}
${load('proxy_http')}
${load('alias')}
${load('lua')}
${process.getuid?.() === 0 ? 'User nobody\nGroup nogroup\n' : ''}ServerName 127.0.0.1
Listen 127.0.0.1:${port}
PidFile ${dir}/httpd.pid
DefaultRuntimeDir ${dir}
ErrorLog ${errorLog}
LogLevel warn
Mutex file:${dir}
<VirtualHost 127.0.0.1:${port}>
    Define BBC_UPSTREAM ${new URL(collectorUrl).origin}
    Define BBC_LUA ${join(installed, 'iojs.lua')}
    Include ${join(installed, 'iojs.conf')}
    RedirectMatch 404 "^/(?!iojs/)"
</VirtualHost>
`,
  );
  const check = spawnSync(APACHE, ['-t', '-f', config], { encoding: 'utf8', timeout: 30_000 });
  if (check.status !== 0) throw new Error(`apache2 -t failed: ${check.stderr}`);
  const child = spawn(APACHE, ['-X', '-f', config]);
  return started(child, port as number, dir, () => (existsSync(errorLog) ? readFileSync(errorLog, 'utf8') : ''));
}

/** HAProxy with proxy/haproxy/iojs.cfg loaded as shipped; the collector is in its environment. */
export async function startHaproxy(collectorUrl: string): Promise<RunningFront> {
  const dir = mkdtempSync(join(tmpdir(), 'bbc-haproxy-'));
  const port = await freePort();
  const config = join(dir, 'haproxy.cfg');
  writeFileSync(
    config,
    `global
    log stderr format raw local0 warning
defaults
    mode http
    timeout client 10s
    timeout connect 5s
    timeout server 10s
frontend shop
    bind 127.0.0.1:${port}
    use_backend bbc_collector if { path_beg /iojs/ }
    http-request return status 404 unless { path_beg /iojs/ }
`,
  );
  const { host } = new URL(collectorUrl);
  const env = { ...process.env, BBC_COLLECTOR_HOST: host, BBC_COLLECTOR_SERVER: host };
  const check = spawnSync(HAPROXY, ['-c', '-f', config, '-f', recipe('haproxy/iojs.cfg')], {
    encoding: 'utf8',
    timeout: 30_000,
    env,
  });
  if (check.status !== 0) throw new Error(`haproxy -c failed: ${check.stdout}${check.stderr}`);
  const child = spawn(HAPROXY, ['-db', '-f', config, '-f', recipe('haproxy/iojs.cfg')], { env });
  return started(child, port as number, dir);
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
