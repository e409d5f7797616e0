// The first-party reverse proxy, on a real Node server, in front of the emulator's collector
// and of a recording upstream.
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../src/emulator/index.js';
import { createFirstPartyProxy, toNodeHandler, type FirstPartyProxyOptions } from '../src/server/index.js';

const servers: Server[] = [];
let emulator: Emulator | undefined;
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  await emulator?.close();
  emulator = undefined;
});

async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function proxyTo(collectorUrl: string, extra: Partial<FirstPartyProxyOptions> = {}): Promise<string> {
  return serve(toNodeHandler(createFirstPartyProxy({ collectorUrl, ...extra })));
}

/** An upstream that records what it received and answers as told. */
async function recordingUpstream(answer: (res: import('node:http').ServerResponse, body: string) => void = (res) => res.end('ok')) {
  const seen: Array<{ url: string; method: string; headers: IncomingHttpHeaders; body: string }> = [];
  const url = await serve((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c)).on('end', () => {
      seen.push({ url: req.url!, method: req.method!, headers: req.headers, body });
      answer(res, body);
    });
  });
  return { url, seen };
}

/** A request with headers fetch refuses to send (Connection, TE). */
function rawRequest(origin: string, path: string, { headers }: { headers: Record<string, string> }): Promise<number> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    httpRequest({ hostname, port, path, method: 'GET', headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    }).on('error', reject).end();
  });
}

/** A raw request whose path is sent exactly as written (fetch would normalise it). */
function raw(origin: string, path: string): Promise<number> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    httpRequest({ hostname, port, path, method: 'GET' }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    }).on('error', reject).end();
  });
}

describe('createFirstPartyProxy', () => {
  it('strips the prefix and serves the collector scripts', async () => {
    emulator = await startEmulator();
    const site = await proxyTo(emulator.collectorUrl);
    const response = await fetch(`${site}/iojs/general5/SUB/static_wdp.js?loaderVer=5.2.2`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/javascript/);
    expect(await response.text()).toContain('emulated collection script: fp_static');
    expect(emulator.inspect.requests('collector')).toBe(1);
  });

  it('never lets the dynamic script be cached, and forwards the user agent and language', async () => {
    emulator = await startEmulator();
    const site = await proxyTo(emulator.collectorUrl);
    const response = await fetch(`${site}/iojs/general5/SUB/dyn_wdp.js`, { headers: { 'user-agent': 'Mozilla/5.0 Proxied', 'accept-language': 'fr-CH' } });
    expect(response.headers.get('cache-control')).toBe('no-store, private');
    expect(response.headers.get('cdn-cache-control')).toBe('no-store');
    const text = await response.text();
    expect(text).toContain('Mozilla/5.0 Proxied');
    expect(text).toContain('fr-CH');
  });

  it('forwards the documented request headers and X-Forwarded-*; drops hop-by-hop and others', async () => {
    const upstream = await recordingUpstream();
    const site = await proxyTo(upstream.url);
    await rawRequest(site, '/iojs/general5/x/static_wdp.js?a=1', {
      headers: {
        'user-agent': 'UA/1',
        'accept-language': 'de',
        referer: 'https://shop.example/checkout',
        cookie: 'sid=1',
        'x-forwarded-for': '203.0.113.7',
        authorization: 'Bearer should-not-pass',
        'x-private': 'no',
        connection: 'keep-alive, x-private',
        te: 'trailers',
      },
    });
    const { url, headers } = upstream.seen[0]!;
    expect(url).toBe('/general5/x/static_wdp.js?a=1');
    expect(headers).toMatchObject({ 'user-agent': 'UA/1', 'accept-language': 'de', referer: 'https://shop.example/checkout', cookie: 'sid=1' });
    expect(headers['x-forwarded-for']).toBe('203.0.113.7, 127.0.0.1');
    expect(headers['x-forwarded-host']).toBe(new URL(site).host);
    expect(headers['x-forwarded-proto']).toBe('http');
    expect(headers.authorization).toBeUndefined();
    expect(headers['x-private']).toBeUndefined();
    expect(headers.te).toBeUndefined();
  });

  it('passes back Set-Cookie, Content-Type, Cache-Control; no stale Content-Encoding or Content-Length', async () => {
    const upstream = await recordingUpstream((res) => {
      const body = gzipSync(Buffer.from('var decoded = true;'));
      res.writeHead(200, {
        'content-type': 'application/javascript',
        'cache-control': 'public, max-age=60',
        'content-encoding': 'gzip',
        'content-length': String(body.length),
        'set-cookie': ['a=1; Path=/', 'b=2; Path=/'],
        'keep-alive': 'timeout=99',
        'x-upstream-internal': 'secret',
      });
      res.end(body);
    });
    const site = await proxyTo(upstream.url);
    const response = await fetch(`${site}/iojs/general5/x/static_wdp.js`);
    expect(await response.text()).toBe('var decoded = true;');
    expect(response.headers.get('content-type')).toBe('application/javascript');
    expect(response.headers.get('cache-control')).toBe('public, max-age=60');
    expect(response.headers.getSetCookie()).toEqual(['a=1; Path=/', 'b=2; Path=/']);
    expect(response.headers.get('content-encoding')).toBeNull();
    expect(response.headers.get('keep-alive')).not.toBe('timeout=99'); // Node's own keep-alive header is fine
    expect(response.headers.get('x-upstream-internal')).toBeNull();
  });

  it('streams a POST body to the collector', async () => {
    const upstream = await recordingUpstream((res, body) => res.end(body.toUpperCase()));
    const site = await proxyTo(upstream.url);
    const response = await fetch(`${site}/iojs/collect`, { method: 'POST', body: 'payload', headers: { 'content-type': 'text/plain' } });
    expect(await response.text()).toBe('PAYLOAD');
    expect(upstream.seen[0]).toMatchObject({ method: 'POST', body: 'payload', url: '/collect' });
  });

  it('handles only its prefix', async () => {
    const upstream = await recordingUpstream();
    const site = await proxyTo(upstream.url);
    expect((await fetch(`${site}/other/general5/static_wdp.js`)).status).toBe(404);
    expect((await fetch(`${site}/iojsx/general5/static_wdp.js`)).status).toBe(404);
    expect(upstream.seen).toHaveLength(0);
    const proxy = createFirstPartyProxy({ collectorUrl: upstream.url, prefix: '/risk/iojs/' });
    expect(proxy.matches(new Request('https://s.example/risk/iojs/a.js'))).toBe(true);
    expect(proxy.matches(new Request('https://s.example/risk/iojsa.js'))).toBe(false);
  });

  it.each([
    '/iojs/../admin',
    '/iojs/%2e%2e/admin',
    '/iojs/..%2fadmin',
    '/iojs/general5/..%2f..%2fadmin',
    '/iojs/%2E%2E%2Fadmin',
    '/iojs/general5/%5c..%5cadmin',
    '/iojs/%zz',
  ])('refuses the path-traversal attempt %s without calling upstream', async (path) => {
    const upstream = await recordingUpstream();
    const site = await proxyTo(upstream.url);
    const status = await raw(site, path);
    expect([400, 404]).toContain(status);
    expect(upstream.seen).toHaveLength(0);
  });

  it('an upstream that does not answer in time gives 502, never a hanging request', async () => {
    const upstream = await serve(() => {}); // accepts, never answers
    const site = await proxyTo(upstream, { timeoutMs: 200 });
    const started = Date.now();
    const response = await fetch(`${site}/iojs/general5/x/dyn_wdp.js`);
    expect(response.status).toBe(502);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('an unreachable upstream gives 502', async () => {
    const dead = await serve(() => {});
    const { port } = new URL(dead);
    servers[0]!.closeAllConnections();
    await new Promise((r) => servers.shift()!.close(r));
    const site = await proxyTo(`http://127.0.0.1:${port}`);
    expect((await fetch(`${site}/iojs/general5/x/static_wdp.js`)).status).toBe(502);
  });

  it('refuses bad configuration', () => {
    expect(() => createFirstPartyProxy({ collectorUrl: 'http://first.example/' })).toThrow(/https/);
    expect(() => createFirstPartyProxy({ collectorUrl: 'https://first.example/', prefix: 'iojs' })).toThrow(/prefix/);
    expect(() => createFirstPartyProxy({ collectorUrl: 'https://first.example/', prefix: '/a/../b' })).toThrow(/prefix/);
  });
});
