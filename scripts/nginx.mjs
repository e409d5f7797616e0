// Runs Debian's nginx with the shipped configuration (src/server/proxy/nginx/) in front of a
// collector, for the nginx test and the proxy benchmark. The only change to the shipped
// files: the upstream is `collectorUrl` instead of the vendor's first-party host.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './processes.mjs';

export const NGINX = process.env.NGINX_PATH ?? '/usr/sbin/nginx';
export const nginxAvailable = () => existsSync(NGINX);

/** Starts nginx; resolves with its origin and a stop function once it answers. Throws when it cannot. */
export async function startNginx(collectorUrl, { page, dist } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'bbc-nginx-'));
  const port = await freePort();
  const shipped = (name) => readFileSync(new URL(`../src/server/proxy/nginx/${name}`, import.meta.url), 'utf8');
  writeFileSync(join(dir, 'iojs-http.conf'), shipped('iojs-http.conf'));
  writeFileSync(
    join(dir, 'iojs-location.conf'),
    shipped('iojs-location.conf').replace('https://first.iovation.com/', `${collectorUrl}/`),
  );
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  include ${dir}/iojs-http.conf;
  server {
    listen 127.0.0.1:${port};
    include ${dir}/iojs-location.conf;
${page === undefined ? '' : `    location = /checkout { default_type text/html; return 200 '${page.replace(/[\\']/g, '\\$&')}'; }\n`}${dist === undefined ? '' : `    location /dist/ { alias ${dist}/; types { text/javascript js; } }\n`}    location / { return 404; }
  }
}
`,
  );
  // An optional checkout page at /checkout (the doctor's tests of the shipped configuration), inline,
  // and the package's built files under /dist/ (diagnose() in the page).
  const args = ['-p', dir, '-c', join(dir, 'nginx.conf')];
  const check = spawnSync(NGINX, ['-t', ...args], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`nginx -t failed: ${check.stderr}`);
  const child = spawn(NGINX, [...args, '-g', 'daemon off;'], { stdio: 'ignore' });
  const origin = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    if (
      (await fetch(`${origin}/`).then(
        (r) => r.status,
        () => 0,
      )) === 404
    )
      return { origin, port, stop: () => child.kill('SIGQUIT') };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  child.kill('SIGKILL');
  throw new Error('nginx did not start');
}
