// Runs Debian's nginx with the shipped configuration (proxy/nginx/) in front of a collector,
// for the nginx test and the proxy benchmark. The shipped files are included as they are; the
// upstream is their parameter, `set $bbc_upstream <collectorUrl's origin>;`.
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './processes.mjs';

export const NGINX = process.env.NGINX_PATH ?? '/usr/sbin/nginx';
/** nginx's JavaScript module (njs), which the recipe's answer allow-list runs in (proxy/nginx/iojs.js). */
export const NGINX_JS_MODULE = process.env.NGINX_JS_MODULE_PATH ?? '/usr/lib/nginx/modules/ngx_http_js_module.so';
export const nginxAvailable = () => existsSync(NGINX) && existsSync(NGINX_JS_MODULE);

/** An error of this helper, with a stable `code` the tests can switch on. */
const failure = (code, message) => Object.assign(new Error(message), { code });

/**
 * nginx's workers run as the caller. Started as root, nginx would switch them to `nobody`,
 * which cannot read a checkout in a folder only its owner may enter (as `mktemp -d` and many
 * home folders are), nor this helper's own 0700 folder; without root it cannot switch, and
 * the directive is left out. The workers then read exactly what the tests can: nothing is
 * copied, and no system account has to exist.
 */
export function workerUser() {
  if (process.getuid?.() !== 0) return '';
  const { username } = userInfo();
  const gid = String(process.getgid());
  const group = readFileSync('/etc/group', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[2] === gid)?.[0];
  return `user ${username}${group ? ` ${group}` : ''};\n`;
}

/**
 * An nginx.conf for an nginx a test runs in `dir`: its pid, temporary files and error log
 * (`error.log`) there, its workers as workerUser() says; `head` before the main context's
 * lines (load_module), `http` (lines) inside its http block.
 */
export function nginxConfig(dir, http, head = '') {
  return `${head}${workerUser()}worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
${http}}
`;
}

/** A file of `dist` to fetch once nginx runs, proving it can serve the folder. Throws when the folder cannot be read. */
function probeFile(dist) {
  let found;
  try {
    found = readdirSync(dist)
      .sort()
      .filter((name) => /^[\w.-]+$/.test(name))
      .map((name) => ({ name, stat: statSync(join(dist, name), { throwIfNoEntry: false }) }))
      .find(({ stat }) => stat?.isFile());
  } catch (error) {
    throw failure('NGINX_CANNOT_SERVE', `nginx cannot serve ${dist}: ${error.message}`);
  }
  if (found === undefined) throw failure('NGINX_CANNOT_SERVE', `nginx cannot serve ${dist}: it holds no file`);
  return { name: found.name, size: found.stat.size };
}

/** The status of GET `url` (0 when nothing answers within 2 s), and the body's length. */
async function get(url) {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return { status: response.status, length: (await response.arrayBuffer()).byteLength };
  } catch {
    return { status: 0, length: 0 };
  }
}

/**
 * Starts nginx; resolves with its origin and a stop function once it answers (and serves a
 * file of `dist`, when given). Rejects at once with the reason when it cannot: an Error whose
 * `code` is NGINX_DID_NOT_START (refused configuration, exited, never answered) or
 * NGINX_CANNOT_SERVE (`dist` unreadable, or a file of it not served), its message ending with
 * nginx's error.log.
 */
export async function startNginx(collectorUrl, { page, dist } = {}) {
  const probe = dist === undefined ? undefined : probeFile(dist);
  const dir = mkdtempSync(join(tmpdir(), 'bbc-nginx-'));
  const port = await freePort();
  const shipped = (name) => readFileSync(new URL(`../../proxy/nginx/${name}`, import.meta.url), 'utf8');
  // Copied, not included from the checkout: the workers may not be able to enter it (see workerUser).
  writeFileSync(join(dir, 'iojs-http.conf'), shipped('iojs-http.conf'));
  writeFileSync(join(dir, 'iojs-location.conf'), shipped('iojs-location.conf'));
  // Where iojs-http.conf imports it from: blackbox-capture/, beside nginx.conf.
  mkdirSync(join(dir, 'blackbox-capture'));
  writeFileSync(join(dir, 'blackbox-capture', 'iojs.js'), shipped('iojs.js'));
  const upstream = new URL(collectorUrl).origin;
  const errorLog = join(dir, 'error.log');
  writeFileSync(
    join(dir, 'nginx.conf'),
    nginxConfig(
      dir,
      `  include ${dir}/iojs-http.conf;
  server {
    listen 127.0.0.1:${port};
    set $bbc_upstream ${upstream};
    include ${dir}/iojs-location.conf;
${page === undefined ? '' : `    location = /checkout { default_type text/html; return 200 '${page.replace(/[\\']/g, '\\$&')}'; }\n`}${dist === undefined ? '' : `    location /dist/ { alias ${dist}/; types { text/javascript js; } }\n`}    location / { return 404; }
  }
`,
      `load_module ${NGINX_JS_MODULE};\n`,
    ),
  );
  // An optional checkout page at /checkout (the doctor's tests of the shipped configuration), inline,
  // and the package's built files under /dist/ (diagnose() in the page).
  const args = ['-p', dir, '-c', join(dir, 'nginx.conf')];
  const check = spawnSync(NGINX, ['-t', ...args], { encoding: 'utf8', timeout: 30_000 });
  if (check.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw failure('NGINX_DID_NOT_START', `nginx -t failed: ${check.stderr || check.error}`);
  }
  const child = spawn(NGINX, [...args, '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  /** What nginx said: its error.log and its standard error, for the thrown error. */
  const said = () => {
    const log = existsSync(errorLog) ? readFileSync(errorLog, 'utf8') : '';
    return `${log}${stderr}`.trim() || '(nothing in error.log)';
  };
  const fail = async (code, message) => {
    // SIGTERM: the master stops its workers before it exits (SIGKILL would orphan them).
    const stuck = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.kill('SIGTERM');
    await exited;
    clearTimeout(stuck);
    const reason = said();
    rmSync(dir, { recursive: true, force: true });
    throw failure(code, `${message}; nginx said: ${reason}`);
  };
  const origin = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if ((await get(`${origin}/`)).status === 404) break;
    if (child.exitCode !== null || child.signalCode !== null)
      return fail('NGINX_DID_NOT_START', `nginx exited (${child.exitCode ?? child.signalCode})`);
    if (i === 100) return fail('NGINX_DID_NOT_START', `nginx did not answer on port ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // Answering is not serving: workers that cannot read `dist` answer 403 or 404, and a page
  // importing from it would wait for a module that never comes until its test times out.
  if (probe !== undefined) {
    const answer = await get(`${origin}/dist/${probe.name}`);
    if (answer.status !== 200 || answer.length !== probe.size)
      return fail(
        'NGINX_CANNOT_SERVE',
        `nginx cannot serve ${dist}: GET /dist/${probe.name} answered ${answer.status} with ${answer.length} of its ${probe.size} bytes`,
      );
  }
  // Its folder goes once it has stopped (a test that stops it and exits at once leaves it).
  void exited.then(() => rmSync(dir, { recursive: true, force: true }));
  return { origin, port, stop: () => child.kill('SIGQUIT') };
}
