// The shipped nginx configuration, run by a real nginx in front of the emulator's collector.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
// @ts-expect-error: a plain ES module script without types
import { NGINX, NGINX_JS_MODULE, nginxAvailable, startNginx } from '../support/nginx.mjs';
import { rawRequest } from '../support/http.js';
import { frontConformance, hostileTargets } from '../support/front-conformance.js';

const available = (nginxAvailable as () => boolean)();
// CI installs nginx-light and its njs module (.ci/run): there a missing one is a failure, not a skip.
if (!available && process.env.CI)
  throw new Error(
    `nginx or njs not found at ${NGINX as string}, ${NGINX_JS_MODULE as string}; .ci/run installs nginx-light, libnginx-mod-http-js`,
  );

/** The status of a request sent exactly as written to the test's nginx. */
const raw = (port: number, path: string, init?: Parameters<typeof rawRequest>[2]) =>
  rawRequest(`http://127.0.0.1:${port}`, path, init).then((answer) => answer.status);
const rawAnswer = (port: number, path: string, init?: Parameters<typeof rawRequest>[2]) =>
  rawRequest(`http://127.0.0.1:${port}`, path, init);

type RunningNginx = { origin: string; stop(): void };
if (available)
  frontConformance(
    'nginx with proxy/nginx/*.conf',
    async (collectorUrl) => {
      const nginx = await (startNginx as (url: string) => Promise<RunningNginx>)(collectorUrl);
      return { origin: nginx.origin, stop: async () => nginx.stop() };
    },
    { vendorCookies: 'dropped', hostilePaths: 'refused' },
  );

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
    const response = await fetch(`${origin}/iojs/general5/SUB/dyn_wdp.js`, {
      headers: { 'user-agent': 'Mozilla/5.0 nginx-test', 'accept-language': 'it-CH' },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store, private');
    expect(response.headers.get('cdn-cache-control')).toBe('no-store');
    const text = await response.text();
    expect(text).toContain('Mozilla/5.0 nginx-test');
    expect(text).toContain('it-CH');
  });

  it.each(['/iojs/../admin', '/iojs/%2e%2e/admin', '/iojs/..%2f..%2fadmin', '/iojs/general5/../../admin'])(
    'does not reach the collector for %s',
    async (path) => {
      const before = emulator.inspect.requests('collector');
      expect([400, 404]).toContain(await raw(nginx.port, path));
      expect(emulator.inspect.requests('collector')).toBe(before);
    },
  );
});

// The attacks of the proxy tests, against nginx with the shipped files: nginx answers some of them
// itself and forwards others; whatever it forwards must reach only the collector, under its root.
describe.skipIf(!available)('nginx with the shipped configuration, against attacks', () => {
  let nginx: { origin: string; port: number; stop(): void };
  const servers: Server[] = [];
  const seen: Record<'internal' | 'collector', Array<{ url: string; method: string; headers: IncomingHttpHeaders }>> = {
    internal: [],
    collector: [],
  };
  let internalHost: string;

  async function recording(name: 'internal' | 'collector'): Promise<string> {
    const server = createServer((req, res) => {
      req.resume();
      seen[name].push({ url: req.url!, method: req.method!, headers: req.headers });
      res
        .writeHead(200, { 'content-type': 'text/html', 'set-cookie': ['session=forged; Path=/; Domain=.example'] })
        .end('<script>alert(1)</script>');
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  beforeAll(async () => {
    internalHost = new URL(await recording('internal')).host;
    nginx = await (startNginx as (url: string) => Promise<typeof nginx>)(await recording('collector'));
  });
  afterAll(async () => {
    nginx?.stop();
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('reaches nothing but the collector, and only under its root, for every attack path in every encoding', async () => {
    const paths = hostileTargets(internalHost);
    const results: string[] = [];
    for (const path of paths) {
      const once = path.replace(/[:/\\.]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
      for (const [form, rest] of [
        ['raw', path],
        ['encoded', once],
        ['double-encoded', once.replace(/%/g, '%25')],
      ]) {
        const answer = await rawAnswer(nginx.port, `/iojs/${rest}`);
        results.push(`${path} ${form}: ${answer.status}`);
        // Whatever nginx answers, it is never a page that runs on the shop's origin.
        if (answer.status === 200)
          expect(answer.headers['content-security-policy']).toBe("sandbox; default-src 'none'");
      }
    }
    expect(seen.internal).toEqual([]);
    for (const { url } of seen.collector) {
      expect(url.startsWith('/')).toBe(true);
      expect(url.startsWith('//')).toBe(false);
      expect(new URL(url, 'https://first.example').host).toBe('first.example');
    }
    // The plain schemes and backslashes are refused by nginx itself.
    expect(
      results.filter(
        (r) => r.startsWith(`http://${internalHost}/admin raw`) || (r.startsWith('data:') && r.includes(' raw')),
      ),
    ).toEqual([
      `http://${internalHost}/admin raw: 400`,
      'data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg== raw: 400',
    ]);
  });

  it('forwards GET only: POST and other methods are refused', async () => {
    const before = seen.collector.length;
    expect(await raw(nginx.port, '/iojs/collect', { method: 'POST', body: 'x' })).toBe(403);
    expect(await raw(nginx.port, '/iojs/collect', { method: 'DELETE' })).toBe(403);
    expect(seen.collector.length).toBe(before);
  });

  it('forwards no cookie either way, replaces a forged X-Forwarded-For, and drops Authorization', async () => {
    const answer = await rawAnswer(nginx.port, '/iojs/general5/x/static_wdp.js', {
      headers: { cookie: 'session=s3cr3t', 'x-forwarded-for': '198.51.100.1', authorization: 'Bearer x' },
    });
    expect(answer.headers['set-cookie']).toBeUndefined();
    const last = seen.collector.at(-1)!;
    expect(last.headers.cookie).toBeUndefined();
    expect(last.headers.authorization).toBeUndefined();
    expect(last.headers['x-forwarded-for']).toBe('127.0.0.1');
  });

  it('a malformed Host is refused by nginx with 400', async () => {
    expect(await raw(nginx.port, '/iojs/a.js', { headers: { host: 'a b' } })).toBe(400);
  });
});
