/**
 * The gateway's fronts of proxy/ (nginx/gateway.conf, caddy/gateway.caddy, apache/gateway.conf,
 * haproxy/gateway.cfg) run by their real servers on a given loopback port, in front of a
 * running gateway and a shop's back end, as docs/gateway.md#the-front lays them out. Each
 * recipe and the browser package's files are installed as a shop installs them: copied into
 * a folder every user can read (Apache's workers and nginx's run as another user and read
 * them at request time), the recipe included from there as shipped.
 */
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  APACHE,
  apacheConfig,
  apacheSaid,
  available,
  CADDY,
  checkedSpawn,
  HAPROXY,
  haproxyDefaults,
  recipe,
  runCaddy,
  started,
  type RunningFront,
} from './fronts.js';
// @ts-expect-error: a plain ES module script without types
import * as nginxHelper from './nginx.mjs';

const { NGINX, nginxConfig } = nginxHelper as {
  NGINX: string;
  nginxConfig(dir: string, http: string, head?: string): string;
};

const DIST = new URL('../../dist/', import.meta.url);
/** The browser package's files a checkout page loads: the UMD file and what it imports from beside itself. */
export const BROWSER_PACKAGE = [
  'blackbox-capture.umd.js',
  'browser-messages.js',
  'browser-unparsed.js',
  'browser-claim.js',
  'tcf.js',
] as const;

/** Where a front runs, and the two it routes to (origins). */
export interface FrontPlan {
  port: number;
  gateway: string;
  backend: string;
  /** Caddy's: the walkthrough's Caddyfile as docs/gateway.md prints it (its addresses are replaced). */
  caddyfile?: string;
}

/**
 * The walkthrough's Caddyfile with this run's addresses in place of its own (the front's port
 * 8080, the back end's 127.0.0.1:8000, the recipe where npm puts it): each must be there, so that
 * a changed walkthrough fails here rather than running something else.
 */
export function walkthroughCaddyfile(printed: string, listen: number, folder: string, backend: string) {
  let config = printed;
  for (const [from, to] of [
    ['http://:8080 ', `http://:${listen} `],
    ['import node_modules/blackbox-capture/proxy/caddy/gateway.caddy', `import ${folder}/gateway.caddy`],
    ['reverse_proxy 127.0.0.1:8000', `reverse_proxy ${new URL(backend).host}`],
  ] as const) {
    if (!config.includes(from)) throw new Error(`the walkthrough's Caddyfile has no "${from}"`);
    config = config.replace(from, to);
  }
  return config;
}

export interface GatewayFront {
  name: 'nginx' | 'caddy' | 'apache' | 'haproxy';
  /** The shipped recipe, relative to proxy/. */
  recipe: string;
  /** Whether this machine has the server (with CI set, a missing one fails the run). */
  available(): boolean;
  start(plan: FrontPlan): Promise<RunningFront>;
}

/** Started once the browser package answers through it (GET / is the back end's page). */
const READY = { path: '/blackbox-capture.umd.js', status: 200 };

/**
 * A folder of its own, readable by every user, holding the recipe and the browser package's
 * files (`blackbox-capture/`, as the recipes' comments name it) and the server's own config.
 */
function installed(name: string, file: string) {
  const dir = mkdtempSync(join(tmpdir(), `bbc-gateway-${name}-`));
  const folder = join(dir, 'blackbox-capture');
  mkdirSync(folder);
  for (const [from, to] of [
    [recipe(file), join(folder, file.split('/').pop()!)],
    ...BROWSER_PACKAGE.map((name) => [new URL(name, DIST).pathname, join(folder, name)]),
  ] as const) {
    copyFileSync(from, to);
    chmodSync(to, 0o644);
  }
  // mkdtemp's folder is the owner's alone: the workers (nobody) must reach the installed files.
  chmodSync(dir, 0o755);
  chmodSync(folder, 0o755);
  return { dir, folder };
}

const port = (origin: string) => new URL(origin).port;

/** The `use_backend` lines the HAProxy recipe's comment tells a shop to write in its frontend, as written there. */
export function haproxyRouting(): string[] {
  const lines = readFileSync(recipe('haproxy/gateway.cfg'), 'utf8')
    .split('\n')
    .filter((line) => /^#\s+use_backend /.test(line))
    .map((line) => line.replace(/^#\s+/, ''));
  if (lines.length !== 2) throw new Error(`haproxy/gateway.cfg shows ${lines.length} use_backend lines, not 2`);
  return lines;
}

export const GATEWAY_FRONTS: readonly GatewayFront[] = [
  {
    name: 'nginx',
    recipe: 'nginx/gateway.conf',
    available: () => available(NGINX, 'nginx-light'),
    async start({ port: listen, gateway, backend }) {
      const { dir, folder } = installed('nginx', 'nginx/gateway.conf');
      const config = join(dir, 'nginx.conf');
      writeFileSync(
        config,
        nginxConfig(
          dir,
          `  server {
    listen 127.0.0.1:${listen};
    set $bbc_gateway ${gateway};
    set $bbc_dist ${folder};
    include ${folder}/gateway.conf;
    # A shop's own regular-expression location, which must not take the vendor's scripts.
    location ~* \\.js$ { proxy_pass ${backend}; }
    location / { proxy_pass ${backend}; }
  }
`,
        ),
      );
      const args = ['-p', dir, '-c', config];
      const child = checkedSpawn(NGINX, ['-t', ...args], [...args, '-g', 'daemon off;']);
      const errorLog = join(dir, 'error.log');
      const said = () => (existsSync(errorLog) ? readFileSync(errorLog, 'utf8') : '');
      return started(child, listen, dir, said, READY);
    },
  },
  {
    name: 'caddy',
    recipe: 'caddy/gateway.caddy',
    available: () => available(CADDY, 'caddy'),
    async start({ port: listen, gateway, backend, caddyfile }) {
      if (!caddyfile) throw new Error("the caddy front runs the walkthrough's Caddyfile: pass it");
      const { dir, folder } = installed('caddy', 'caddy/gateway.caddy');
      const config = join(dir, 'Caddyfile');
      writeFileSync(config, walkthroughCaddyfile(caddyfile, listen, folder, backend));
      const child = runCaddy(dir, config, { BBC_GATEWAY: new URL(gateway).host, BBC_DIST: folder });
      return started(child, listen, dir, undefined, READY);
    },
  },
  {
    name: 'apache',
    recipe: 'apache/gateway.conf',
    available: () => available(APACHE, 'apache2'),
    async start({ port: listen, gateway, backend }) {
      const { dir, folder } = installed('apache', 'apache/gateway.conf');
      const config = join(dir, 'httpd.conf');
      const modules = ['mpm_event', 'authz_core', 'authz_host', 'headers', 'proxy', 'proxy_http', 'alias'];
      writeFileSync(
        config,
        apacheConfig(dir, listen, modules, [
          `Define BBC_GATEWAY ${gateway}`,
          `Define BBC_DIST ${folder}`,
          `Include ${folder}/gateway.conf`,
          `ProxyPass "/" "${backend}/"`,
        ]),
      );
      const child = checkedSpawn(APACHE, ['-t', '-f', config], ['-X', '-f', config]);
      return started(child, listen, dir, apacheSaid(dir), READY);
    },
  },
  {
    name: 'haproxy',
    recipe: 'haproxy/gateway.cfg',
    available: () => available(HAPROXY, 'haproxy'),
    async start({ port: listen, gateway, backend }) {
      const { dir, folder } = installed('haproxy', 'haproxy/gateway.cfg');
      const config = join(dir, 'haproxy.cfg');
      writeFileSync(
        config,
        `${haproxyDefaults(['timeout http-request 10s'])}frontend shop
    bind 127.0.0.1:${listen}
${haproxyRouting()
  .map((line) => `    ${line}\n`)
  .join('')}    default_backend shop
backend shop
    server shop 127.0.0.1:${port(backend)}
`,
      );
      const env = { ...process.env, BBC_GATEWAY_SERVER: new URL(gateway).host, BBC_DIST: folder };
      const files = ['-f', config, '-f', join(folder, 'gateway.cfg')];
      const child = checkedSpawn(HAPROXY, ['-c', ...files], ['-db', ...files], env);
      return started(child, listen, dir, undefined, READY);
    },
  },
];
