// The shipped nginx configuration, run by a real nginx in front of the emulator's collector.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../src/emulator/index.js';
// @ts-expect-error: a plain ES module script without types
import { NGINX, nginxAvailable, startNginx } from '../scripts/nginx.mjs';

const available = (nginxAvailable as () => boolean)();
// CI installs nginx-light (.ci/run): there a missing nginx is a failure, not a skip.
if (!available && process.env.CI) throw new Error(`nginx not found at ${NGINX as string}; .ci/run installs nginx-light`);

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
  let nginx: { origin: string; port: number; stop(): void };
  let origin: string;

  beforeAll(async () => {
    emulator = await startEmulator();
    nginx = await (startNginx as (url: string) => Promise<typeof nginx>)(emulator.collectorUrl);
    origin = nginx.origin;
  });

  afterAll(async () => {
    nginx?.stop();
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
    expect([400, 404]).toContain(await raw(nginx.port, path));
    expect(emulator.inspect.requests('collector')).toBe(before);
  });
});
