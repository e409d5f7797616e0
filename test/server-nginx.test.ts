// The shipped nginx configuration, run by a real nginx in front of the emulator's collector.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../src/emulator/index.js';

const NGINX = process.env.NGINX_PATH ?? '/usr/sbin/nginx';
const available = existsSync(NGINX);
// CI installs nginx-light (.ci/run): there a missing nginx is a failure, not a skip.
if (!available && process.env.CI) throw new Error(`nginx not found at ${NGINX}; .ci/run installs nginx-light`);

const conf = (name: string) => readFileSync(new URL(`../src/server/nginx/${name}`, import.meta.url), 'utf8');

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

function raw(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    httpRequest({ hostname: '127.0.0.1', port, path }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    }).on('error', reject).end();
  });
}

describe.skipIf(!available)('nginx with the shipped configuration', () => {
  let emulator: Emulator;
  let nginx: ChildProcess;
  let origin: string;

  beforeAll(async () => {
    emulator = await startEmulator();
    const dir = mkdtempSync(join(tmpdir(), 'bbc-nginx-'));
    const port = await freePort();
    // The only change to the shipped files: the upstream is the emulator's collector.
    writeFileSync(join(dir, 'iojs-http.conf'), conf('iojs-http.conf'));
    writeFileSync(join(dir, 'iojs-location.conf'), conf('iojs-location.conf').replace('https://first.iovation.com/', `${emulator.collectorUrl}/`));
    writeFileSync(
      join(dir, 'nginx.conf'),
      `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  include ${dir}/iojs-http.conf;
  server {
    listen 127.0.0.1:${port};
    include ${dir}/iojs-location.conf;
    location / { return 404; }
  }
}
`,
    );
    const check = spawnSync(NGINX, ['-t', '-p', dir, '-c', join(dir, 'nginx.conf')], { encoding: 'utf8' });
    if (check.status !== 0) throw new Error(`nginx -t failed: ${check.stderr}`);
    nginx = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: 'ignore' });
    origin = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 100; i++) {
      if ((await fetch(`${origin}/`).then((r) => r.status, () => 0)) === 404) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('nginx did not start');
  });

  afterAll(async () => {
    nginx?.kill('SIGQUIT');
    await emulator?.close();
  });

  it('strips the prefix and serves the collector scripts', async () => {
    const before = emulator.inspect.requests('collector');
    const response = await fetch(`${origin}/iojs/general5/SUB/static_wdp.js?loaderVer=5.2.2`);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('emulated collection script: fp_static');
    expect(response.headers.get('cache-control')).toMatch(/max-age/);
    expect(emulator.inspect.requests('collector')).toBe(before + 1);
  });

  it('never lets the dynamic script be cached and forwards user agent and language', async () => {
    const response = await fetch(`${origin}/iojs/general5/SUB/dyn_wdp.js`, { headers: { 'user-agent': 'Mozilla/5.0 nginx-test', 'accept-language': 'it-CH' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store, private');
    expect(response.headers.get('cdn-cache-control')).toBe('no-store');
    const text = await response.text();
    expect(text).toContain('Mozilla/5.0 nginx-test');
    expect(text).toContain('it-CH');
  });

  it.each(['/iojs/../admin', '/iojs/%2e%2e/admin', '/iojs/..%2f..%2fadmin', '/iojs/general5/../../admin'])('does not reach the collector for %s', async (path) => {
    const before = emulator.inspect.requests('collector');
    expect([400, 404]).toContain(await raw(Number(new URL(origin).port), path));
    expect(emulator.inspect.requests('collector')).toBe(before);
  });
});
