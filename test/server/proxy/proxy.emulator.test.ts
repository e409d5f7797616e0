// The first-party reverse proxy, on a real Node server, in front of the emulator's collector
// and of a recording upstream.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { collectGarbage } from '../../support/gc.js';
import { startEmulator, type Emulator } from '../../../src/emulator/index.js';
import {
  collectorPath,
  createFirstPartyProxy,
  toNodeHandler,
  type FirstPartyProxyOptions,
} from '../../../src/server/index.js';
import { closeServers, rawRequest, serve, servers } from '../../support/http.js';

let emulator: Emulator | undefined;
afterEach(async () => {
  await closeServers();
  await emulator?.close();
  emulator = undefined;
});

async function proxyTo(collectorUrl: string, extra: Partial<FirstPartyProxyOptions> = {}): Promise<string> {
  return serve(toNodeHandler(createFirstPartyProxy({ collectorUrl, ...extra })));
}

/** An upstream that records what it received and answers as told. */
async function recordingUpstream(
  answer: (res: import('node:http').ServerResponse, body: string) => void = (res) => res.end('ok'),
) {
  const seen: Array<{ url: string; method: string; headers: IncomingHttpHeaders; body: string }> = [];
  const url = await serve((req, res) => {
    let body = '';
    req
      .on('data', (c) => (body += c))
      .on('end', () => {
        seen.push({ url: req.url!, method: req.method!, headers: req.headers, body });
        answer(res, body);
      });
  });
  return { url, seen };
}

/** A request with headers fetch refuses to send (Connection, TE). */
/** The status of a request sent exactly as written. */
const rawStatus = (origin: string, path: string, init: { headers: Record<string, string> }) =>
  rawRequest(origin, path, init).then((answer) => answer.status);

const raw = rawRequest;

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
    const response = await fetch(`${site}/iojs/general5/SUB/dyn_wdp.js`, {
      headers: { 'user-agent': 'Mozilla/5.0 Proxied', 'accept-language': 'fr-CH' },
    });
    expect(response.headers.get('cache-control')).toBe('no-store, private');
    expect(response.headers.get('cdn-cache-control')).toBe('no-store');
    const text = await response.text();
    expect(text).toContain('Mozilla/5.0 Proxied');
    expect(text).toContain('fr-CH');
  });

  it('forwards the documented request headers and X-Forwarded-*; drops hop-by-hop and others', async () => {
    const upstream = await recordingUpstream();
    const site = await proxyTo(upstream.url);
    await rawStatus(site, '/iojs/general5/x/static_wdp.js?a=1', {
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
    expect(headers).toMatchObject({
      'user-agent': 'UA/1',
      'accept-language': 'de',
      referer: 'https://shop.example/checkout',
    });
    expect(headers.cookie).toBeUndefined(); // the site's session cookie is not the vendor's
    expect(headers['x-forwarded-for']).toBe('127.0.0.1'); // the client's own chain is not trusted by default
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
        'set-cookie': ['a=1; Path=/', 'b=2; Path=/; Secure'],
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
    expect(response.headers.getSetCookie()).toEqual(['bbc_a=1; Path=/iojs', 'bbc_b=2; Path=/iojs; Secure']);
    expect(response.headers.get('content-encoding')).toBeNull();
    expect(response.headers.get('keep-alive')).not.toBe('timeout=99'); // Node's own keep-alive header is fine
    expect(response.headers.get('x-upstream-internal')).toBeNull();
  });

  it('on Node, calls the collector over kept-alive node:http sockets, asking for identity; a given fetch replaces it', async () => {
    const upstream = await recordingUpstream((res) => res.end('var x;'));
    let connections = 0;
    servers.at(-1)!.on('connection', () => connections++);
    const site = await proxyTo(upstream.url);
    for (let i = 0; i < 5; i++)
      expect(await (await fetch(`${site}/iojs/general5/x/static_wdp.js`)).text()).toBe('var x;');
    expect(connections).toBe(1);
    expect(upstream.seen[0]!.headers['accept-encoding']).toBe('identity');
    const calls: string[] = [];
    const viaFetch = await proxyTo(upstream.url, {
      fetch: (async (url: URL) => {
        calls.push(String(url));
        return new Response('var y;');
      }) as typeof fetch,
    });
    expect(await (await fetch(`${viaFetch}/iojs/general5/x/static_wdp.js`)).text()).toBe('var y;');
    expect(calls).toEqual([`${upstream.url}/general5/x/static_wdp.js`]);
  });

  it.each([
    ['br', (text: string) => brotliCompressSync(text)],
    ['deflate', (text: string) => deflateSync(text)],
  ])('decodes a %s body the collector compressed anyway', async (encoding, encode) => {
    const upstream = await recordingUpstream((res) => {
      res.writeHead(200, { 'content-type': 'application/javascript', 'content-encoding': encoding });
      res.end(encode('var decoded = 1;'));
    });
    const site = await proxyTo(upstream.url);
    const response = await fetch(`${site}/iojs/general5/x/static_wdp.js`);
    expect(await response.text()).toBe('var decoded = 1;');
    expect(response.headers.get('content-encoding')).toBeNull();
  });

  it('forwards a POST body to the collector when POST is enabled', async () => {
    const upstream = await recordingUpstream((res, body) => res.end(body.toUpperCase()));
    const site = await proxyTo(upstream.url, { methods: ['GET', 'HEAD', 'POST'] });
    const response = await fetch(`${site}/iojs/collect`, {
      method: 'POST',
      body: 'payload',
      headers: { 'content-type': 'text/plain' },
    });
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

  it('an upstream that does not answer in time gives 504, never a hanging request, even when garbage is collected meanwhile', async () => {
    const upstream = await serve(() => {}); // accepts, never answers
    const site = await proxyTo(upstream, { timeoutMs: 200 });
    // Nothing but the proxy holds the timer: collect garbage while the requests wait (Node 20 lost
    // AbortSignal.timeout() inside AbortSignal.any() this way, and the requests hung for ever).
    const collector = setInterval(() => collectGarbage(), 10);
    try {
      const answers = await Promise.all([1, 2, 3].map(() => raw(site, '/iojs/general5/x/dyn_wdp.js')));
      expect(answers.map((a) => a.status)).toEqual([504, 504, 504]);
      expect(JSON.parse(answers[0]!.body)).toEqual({ error: { code: 'collector_timeout' } });
    } finally {
      clearInterval(collector);
    }
  });

  it('an upstream body that stalls after its headers is cut at the time limit', async () => {
    const upstream = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      res.write('var partial = 1;'); // and nothing more
    });
    const site = await proxyTo(upstream, { timeoutMs: 300 });
    const response = await fetch(`${site}/iojs/general5/x/static_wdp.js`);
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
  });

  it('an unreachable upstream gives 502', async () => {
    // A collector that resets every connection: a port closed for the test could be taken by
    // another process on a busy machine before the proxy reaches it.
    const resetting = createTcpServer((socket) => socket.resetAndDestroy());
    await new Promise<void>((resolve) => resetting.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => resetting.close(() => resolve())));
    const site = await proxyTo(`http://127.0.0.1:${(resetting.address() as AddressInfo).port}`);
    const response = await fetch(`${site}/iojs/general5/x/static_wdp.js`);
    expect(response.status).toBe(502);
    expect(await response.json()).toEqual({ error: { code: 'collector_unreachable' } });
  });

  it('refuses bad configuration', () => {
    expect(() => createFirstPartyProxy({ collectorUrl: 'http://first.example/' })).toThrow(/https/);
    expect(() => createFirstPartyProxy({ collectorUrl: 'https://first.example/', prefix: 'iojs' })).toThrow(/prefix/);
    expect(() => createFirstPartyProxy({ collectorUrl: 'https://first.example/', prefix: '/a/../b' })).toThrow(
      /prefix/,
    );
    expect(() => createFirstPartyProxy({ collectorUrl: 'https://first.example/?a=1' })).toThrow(/query/);
    expect(() =>
      createFirstPartyProxy({ collectorUrl: 'https://first.example/', methods: ['DELETE' as 'GET'] }),
    ).toThrow(/methods/);
    expect(() => createFirstPartyProxy({ collectorUrl: 'https://first.example/', cookiePrefix: 'a b' })).toThrow(
      /cookie/,
    );
    expect(() => createFirstPartyProxy({ collectorUrl: 'https://first.example/', allowCookies: ['a;b'] })).toThrow(
      /cookie/,
    );
    expect(() => createFirstPartyProxy({ collectorUrl: 'https://first.example/', publicHost: 'a@b' })).toThrow(
      /publicHost/,
    );
  });
});

// Tried as an attacker would, against the proxy mounted as the README shows, with an internal
// server on the same machine that must never be reached.
describe('createFirstPartyProxy against attacks', () => {
  async function setupAttack(extra: Partial<FirstPartyProxyOptions> = {}) {
    const internal = await recordingUpstream((res) =>
      res.writeHead(200, { 'set-cookie': 'admin=1; Path=/', 'content-type': 'text/html' }).end('<h1>internal</h1>'),
    );
    const collector = await recordingUpstream();
    const site = await proxyTo(`${collector.url}/base/`, extra);
    return { internal, collector, site, internalHost: new URL(internal.url).host };
  }
  /** The same path with its telling characters percent-encoded once and twice. */
  const encodings = (path: string): Array<[string, string]> => {
    const once = path.replace(/[:/\\.]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
    return [
      ['raw', path],
      ['encoded', once],
      ['double-encoded', once.replace(/%/g, '%25')],
      ['triple-encoded', once.replace(/%/g, '%2525')],
    ];
  };
  const attacks = (host: string): Array<[string, string]> => [
    ['an absolute http URL', `http://${host}/admin`],
    ['an absolute URL in capitals', `HTTP://${host}/admin`],
    ['a scheme-relative URL', `//${host}/x`],
    ['a scheme-relative URL after three slashes', `///${host}/x`],
    ['backslashes', `\\\\${host}\\x`],
    ['a data: URL with a script', 'data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg=='],
    ['a javascript: URL', 'javascript:alert(1)'],
    ['a foreign host leaving the base path', '/evil.example/x'],
    ['dot segments', 'general5/../../admin'],
  ];

  it('refuses every absolute, scheme-relative, backslash, data: and dot-segment path, in raw, encoded and double-encoded forms, before any connection', async () => {
    const { internal, collector, site, internalHost } = await setupAttack();
    const outcomes: string[] = [];
    for (const [what, path] of attacks(internalHost)) {
      for (const [form, rest] of encodings(path)) {
        const { status, body } = await raw(site, `/iojs/${rest}`);
        // A path that Node's URL parser resolved out of the prefix (`..`) is not the proxy's: 404.
        outcomes.push(`${what} (${form}): ${status} ${status === 400 ? JSON.parse(body).error.code : ''}`);
      }
    }
    expect(internal.seen).toEqual([]);
    expect(collector.seen).toEqual([]);
    const notRefused = outcomes.filter((line) => !/: (400 bad_path|404 )/.test(line));
    expect(notRefused).toEqual([]);
    // Only the plain dot segments are resolved by the URL parser before the proxy sees them, out of the prefix.
    expect(outcomes.filter((line) => /: 404/.test(line))).toEqual(['dot segments (raw): 404 ']);
  });

  it.each(['%00', '%0a', '%0D%0A', '%7f', '%2500', 'a%zz', '%C0%AE%C0%AE/admin', '%e0%80%ae', '%f0%80%80%ae', 'a%3b'])(
    'refuses the control or malformed escape %s with 400 bad_path',
    async (rest) => {
      const { collector, site } = await setupAttack();
      const { status, body } = await raw(site, `/iojs/general5/${rest}`);
      expect([status, JSON.parse(body)]).toEqual([400, { error: { code: 'bad_path' } }]);
      expect(collector.seen).toEqual([]);
    },
  );

  it('forwards an ordinary path below the collector base path, with the subkey escapes as sent', async () => {
    const { collector, site } = await setupAttack();
    const { status } = await raw(
      site,
      '/iojs/general5/ab%2Bc%3D/static_wdp.js?loaderVer=5.2.2&tp_host=https%3A%2F%2Fx',
    );
    expect(status).toBe(200);
    expect(collector.seen.map((s) => s.url)).toEqual([
      '/base/general5/ab%2Bc%3D/static_wdp.js?loaderVer=5.2.2&tp_host=https%3A%2F%2Fx',
    ]);
  });

  it('refuses POST by default (405, with Allow), and a POST to a forged path is refused before its body is read', async () => {
    const { internal, collector, site, internalHost } = await setupAttack();
    const plain = await raw(site, '/iojs/collect', {
      method: 'POST',
      body: 'x',
      headers: { 'content-type': 'text/plain' },
    });
    expect([plain.status, plain.headers.allow]).toEqual([405, 'GET, HEAD']);
    const enabled = await proxyTo(collector.url, { methods: ['GET', 'HEAD', 'POST'] });
    const forged = await raw(enabled, `/iojs///${internalHost}/path`, {
      method: 'POST',
      body: 'secret=1',
      headers: { 'content-type': 'text/plain' },
    });
    expect(forged.status).toBe(400);
    expect(internal.seen).toEqual([]);
    expect(collector.seen).toEqual([]);
    void site;
  });

  it('caps a POST body: 413 past maxBodyBytes, by Content-Length or by counting', async () => {
    const { collector } = await setupAttack();
    const site = await proxyTo(collector.url, { methods: ['POST'], maxBodyBytes: 10 });
    expect((await raw(site, '/iojs/collect', { method: 'POST', body: '12345678901' })).status).toBe(413);
    const chunked = await new Promise<number>((resolve, reject) => {
      const { hostname, port } = new URL(site);
      const req = httpRequest(
        { hostname, port, path: '/iojs/collect', method: 'POST', headers: { 'transfer-encoding': 'chunked' } },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on('error', reject);
      req.write('123456');
      req.end('789012');
    });
    expect(chunked).toBe(413);
    expect((await raw(site, '/iojs/collect', { method: 'POST', body: '1234567890' })).status).toBe(200);
    expect(collector.seen.map((s) => s.body)).toEqual(['1234567890']);
  });

  it('forwards only the vendor cookies: those it set through the proxy (prefix removed) and the allow-listed names', async () => {
    const { collector } = await setupAttack();
    const site = await proxyTo(collector.url, { allowCookies: ['fpjs'] });
    await raw(site, '/iojs/general5/x/static_wdp.js', {
      headers: { cookie: 'session=s3cr3t; bbc_io=abc; csrf=t; fpjs=1; bbc_=empty' },
    });
    expect(collector.seen[0]!.headers.cookie).toBe('io=abc; fpjs=1');
    await raw(site, '/iojs/general5/x/static_wdp.js', { headers: { cookie: 'session=s3cr3t' } });
    expect(collector.seen[1]!.headers.cookie).toBeUndefined();
  });

  it('confines the collector cookies: its namespace, no foreign Domain, a Path under the prefix', async () => {
    const collector = await recordingUpstream((res) =>
      res
        .writeHead(200, {
          'set-cookie': [
            'io=1; Domain=.iovation.com; Path=/; HttpOnly; SameSite=Lax',
            'session=forged; Path=/',
            'deep=2; Path=/base/general5/',
            'outside=3; Path=/other',
            'up=4; Path=/base/../admin',
            '__Host-x=5; Path=/; Secure',
            'bad name=6',
            'fpjs=7; Path=/',
          ],
        })
        .end(),
    );
    const site = await proxyTo(`${collector.url}/base/`, { allowCookies: ['fpjs'] });
    const response = await fetch(`${site}/iojs/general5/x/static_wdp.js`);
    expect(response.headers.getSetCookie()).toEqual([
      'bbc_io=1; Path=/iojs; HttpOnly; SameSite=Lax',
      'bbc_session=forged; Path=/iojs',
      'bbc_deep=2; Path=/iojs/general5',
      'bbc_outside=3; Path=/iojs/other',
      'bbc_up=4; Path=/iojs',
      'bbc___Host-x=5; Path=/iojs; Secure',
      'fpjs=7; Path=/iojs',
    ]);
  });

  it.each([
    ['the peer address alone', {}, ['127.0.0.1', '127.0.0.1']],
    ['with trustProxy, appended to the chain', { trustProxy: true }, ['198.51.100.1, 127.0.0.1', '127.0.0.1']],
  ])('X-Forwarded-For: %s', async (_, options: Partial<FirstPartyProxyOptions>, sent) => {
    const { collector } = await setupAttack();
    const site = await proxyTo(collector.url, options);
    await raw(site, '/iojs/a.js', { headers: { 'x-forwarded-for': '198.51.100.1' } });
    await raw(site, '/iojs/a.js');
    expect(collector.seen.map((s) => s.headers['x-forwarded-for'])).toEqual(sent);
  });

  it('a bare Request without a client address sends no X-Forwarded-For it cannot vouch for', async () => {
    const { collector } = await setupAttack();
    const proxy = createFirstPartyProxy({ collectorUrl: collector.url });
    await proxy(new Request('https://shop.example/iojs/a.js', { headers: { 'x-forwarded-for': '198.51.100.1' } }));
    expect(collector.seen[0]!.headers['x-forwarded-for']).toBeUndefined();
    await proxy(new Request('https://shop.example/iojs/a.js'), { clientAddress: '192.0.2.9' });
    expect(collector.seen[1]!.headers['x-forwarded-for']).toBe('192.0.2.9');
  });

  it('X-Forwarded-Host: publicHost when configured, else the validated Host', async () => {
    const { collector } = await setupAttack();
    await raw(await proxyTo(collector.url, { publicHost: 'shop.example' }), '/iojs/a.js', {
      headers: { host: 'attacker.example' },
    });
    await raw(await proxyTo(collector.url), '/iojs/a.js', { headers: { host: 'shop.example:8443' } });
    expect(collector.seen.map((s) => s.headers['x-forwarded-host'])).toEqual(['shop.example', 'shop.example:8443']);
  });

  it.each(['a@b', 'a b', 'a/b', 'evil.example:80:80', 'a\\b'])(
    'a malformed Host (%j) is a 400 with a code, never a bare 500',
    async (host) => {
      const { collector, site } = await setupAttack();
      const { status, body } = await raw(site, '/iojs/a.js', { headers: { host } });
      expect(status).toBe(400);
      expect(JSON.parse(body).error.code).toBe('bad_host');
      expect(collector.seen).toEqual([]);
    },
  );

  it('every answer is sandboxed, so that a page opened from it runs nothing on the shop origin', async () => {
    const collector = await recordingUpstream((res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<script>alert(1)</script>'),
    );
    const site = await proxyTo(collector.url);
    const response = await fetch(`${site}/iojs/page.html`);
    expect(response.headers.get('content-security-policy')).toBe("sandbox; default-src 'none'");
  });
});

// What the proxy passes and what it answers itself, one case at a time.
describe('createFirstPartyProxy: headers, methods and edges', () => {
  /** A fetch that records what the proxy asks of it and answers as told. */
  const recordingFetch = (answer: () => Response = () => new Response('var x;')) => {
    const calls: Array<{ url: string; init: RequestInit }> = [];
    const fake = (async (url: URL, init: RequestInit) => {
      calls.push({ url: String(url), init });
      return answer();
    }) as typeof fetch;
    return { calls, fake };
  };

  it("drops the headers a Connection header names, both ways: the client's and the collector's", async () => {
    const collector = await recordingUpstream((res) =>
      res
        .writeHead(200, {
          connection: 'keep-alive, etag, set-cookie',
          'content-type': 'text/javascript',
          etag: '"hop"',
          'set-cookie': 'io=1; Path=/',
          'cache-control': 'max-age=60',
        })
        .end('var x;'),
    );
    const site = await proxyTo(collector.url, { trustProxy: true });
    const headers = {
      'user-agent': 'UA/1',
      referer: 'https://shop.example/',
      'accept-language': 'de',
      cookie: 'bbc_io=abc',
      'x-forwarded-for': '198.51.100.1',
    };
    const named = await raw(site, '/iojs/a.js', {
      headers: { ...headers, connection: 'keep-alive, Referer, accept-language, cookie, x-forwarded-for' },
    });
    await raw(site, '/iojs/a.js', { headers });
    const [withHops, without] = collector.seen.map((s) => s.headers);
    expect(withHops).toMatchObject({ 'user-agent': 'UA/1', 'x-forwarded-for': '127.0.0.1' });
    expect([withHops!.referer, withHops!['accept-language'], withHops!.cookie]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    // The same request without them listed: every one passes (so the test above can fail).
    expect(without).toMatchObject({
      referer: 'https://shop.example/',
      'accept-language': 'de',
      cookie: 'io=abc',
      'x-forwarded-for': '198.51.100.1, 127.0.0.1',
    });
    expect(named.status).toBe(200);
    expect(named.headers.etag).toBeUndefined();
    expect(named.headers['set-cookie']).toBeUndefined();
    expect(named.headers['cache-control']).toBe('max-age=60');
    expect(named.headers['content-type']).toBe('text/javascript');
  });

  it('passes no header the client or the collector did not send (no "null" values)', async () => {
    const collector = await recordingUpstream((res) =>
      res.writeHead(200, { 'content-type': 'text/javascript' }).end('var x;'),
    );
    const site = await proxyTo(collector.url);
    const answer = await raw(site, '/iojs/a.js', { headers: { 'user-agent': 'UA/1' } });
    const sent = collector.seen[0]!.headers;
    for (const name of ['referer', 'accept-language', 'if-none-match', 'if-modified-since', 'content-type', 'cookie'])
      expect(sent[name], name).toBeUndefined();
    for (const name of ['etag', 'last-modified', 'expires', 'vary', 'cache-control', 'set-cookie'])
      expect(answer.headers[name], name).toBeUndefined();
  });

  it('follows no redirect of the collector, on node:http and on a given fetch: the 3xx comes back without its Location', async () => {
    const internal = await recordingUpstream();
    const collector = await recordingUpstream((res) => res.writeHead(302, { location: `${internal.url}/admin` }).end());
    for (const extra of [{}, { fetch: globalThis.fetch }]) {
      const site = await proxyTo(collector.url, extra);
      const answer = await raw(site, '/iojs/a.js');
      expect([answer.status, answer.headers.location]).toEqual([302, undefined]);
    }
    expect(collector.seen).toHaveLength(2);
    expect(internal.seen).toEqual([]);
  });

  it('a global fetch replaced after the package loaded (a test double, instrumentation) is the one called', async () => {
    const { calls, fake } = recordingFetch();
    vi.stubGlobal('fetch', fake);
    try {
      const proxy = createFirstPartyProxy({ collectorUrl: 'https://first.example/base/' });
      expect(await (await proxy(new Request('https://shop.example/iojs/a.js'))).text()).toBe('var x;');
    } finally {
      vi.unstubAllGlobals();
    }
    expect(calls.map((c) => [c.url, c.init.redirect])).toEqual([['https://first.example/base/a.js', 'manual']]);
  });

  it('sends a GET without a body, and a POST with its bytes', async () => {
    const { calls, fake } = recordingFetch();
    const proxy = createFirstPartyProxy({
      collectorUrl: 'https://first.example/',
      methods: ['GET', 'POST'],
      fetch: fake,
    });
    await proxy(new Request('https://shop.example/iojs/a.js'));
    await proxy(new Request('https://shop.example/iojs/collect', { method: 'POST', body: 'abc' }));
    expect(
      calls.map((c) => [
        c.init.method,
        c.init.body === undefined ? undefined : new TextDecoder().decode(c.init.body as Uint8Array),
      ]),
    ).toEqual([
      ['GET', undefined],
      ['POST', 'abc'],
    ]);
  });

  it('its own answers are JSON with a code, never cached: 404 outside the prefix, 405 with Allow, 413', async () => {
    const { calls, fake } = recordingFetch();
    const proxy = createFirstPartyProxy({
      collectorUrl: 'https://first.example/',
      methods: ['GET', 'POST'],
      maxBodyBytes: 2,
      fetch: fake,
    });
    const answers = await Promise.all([
      proxy(new Request('https://shop.example/other/a.js')),
      proxy(new Request('https://shop.example/iojsa.js')),
      proxy(new Request('https://shop.example/iojs/a.js', { method: 'PUT', body: 'x' })),
      proxy(new Request('https://shop.example/iojs/collect', { method: 'POST', body: 'abc' })),
    ]);
    const seen = await Promise.all(
      answers.map(async (a) => [
        a.status,
        (await a.json()).error.code,
        a.headers.get('content-type'),
        a.headers.get('cache-control'),
        a.headers.get('allow'),
      ]),
    );
    expect(seen).toEqual([
      [404, 'not_found', 'application/json', 'no-store', null],
      [404, 'not_found', 'application/json', 'no-store', null],
      [405, 'method_not_allowed', 'application/json', 'no-store', 'GET, POST'],
      [413, 'body_too_large', 'application/json', 'no-store', null],
    ]);
    expect(calls).toEqual([]);
  });

  it('the prefix alone is the collector base path, for matches() and for the handler', async () => {
    const { calls, fake } = recordingFetch();
    const proxy = createFirstPartyProxy({ collectorUrl: 'https://first.example/base/', fetch: fake });
    expect(proxy.matches(new Request('https://shop.example/iojs'))).toBe(true);
    expect((await proxy(new Request('https://shop.example/iojs?x=1'))).status).toBe(200);
    expect(calls.map((c) => c.url)).toEqual(['https://first.example/base/?x=1']);
  });

  it('a collector address whose path lacks the final slash is a folder all the same', async () => {
    const collector = await recordingUpstream();
    const site = await proxyTo(`${collector.url}/base`);
    await raw(site, '/iojs/general5/a.js');
    expect(collector.seen.map((s) => s.url)).toEqual(['/base/general5/a.js']);
  });

  it('X-Forwarded-Host from a bare Request: its Host header when valid, else 400 bad_host; without one, the URL host', async () => {
    const { calls, fake } = recordingFetch();
    const proxy = createFirstPartyProxy({ collectorUrl: 'https://first.example/', fetch: fake });
    await proxy(new Request('https://shop.example/iojs/a.js'));
    await proxy(new Request('http://10.0.0.5:3000/iojs/a.js', { headers: { host: 'shop.example:8443' } }));
    const bad = await proxy(new Request('https://shop.example/iojs/a.js', { headers: { host: 'a b' } }));
    expect([bad.status, (await bad.json()).error.code]).toEqual([400, 'bad_host']);
    expect(calls.map((c) => new Headers(c.init.headers).get('x-forwarded-host'))).toEqual([
      'shop.example',
      'shop.example:8443',
    ]);
  });

  it('HEAD and 304 come back with their headers and no body', async () => {
    const collector = await recordingUpstream((res) => {
      const fresh = res.req.headers['if-none-match'] === '"v1"';
      res
        .writeHead(fresh ? 304 : 200, { etag: '"v1"', 'content-type': 'text/javascript' })
        .end(fresh || res.req.method === 'HEAD' ? undefined : 'var x;');
    });
    const site = await proxyTo(collector.url);
    const head = await fetch(`${site}/iojs/a.js`, { method: 'HEAD' });
    expect([head.status, head.headers.get('etag'), head.headers.get('content-type'), await head.text()]).toEqual([
      200,
      '"v1"',
      'text/javascript',
      '',
    ]);
    const notModified = await fetch(`${site}/iojs/a.js`, { headers: { 'if-none-match': '"v1"' } });
    expect([notModified.status, notModified.headers.get('etag'), await notModified.text()]).toEqual([304, '"v1"', '']);
    expect(collector.seen.map((s) => [s.method, s.headers['if-none-match']])).toEqual([
      ['HEAD', undefined],
      ['GET', '"v1"'],
    ]);
    const bare = createFirstPartyProxy({
      collectorUrl: 'https://first.example/',
      fetch: async () => new Response(null, { status: 204 }),
    });
    const empty = await bare(new Request('https://shop.example/iojs/a.js'));
    expect([empty.status, empty.body]).toEqual([204, null]);
    // A given fetch that hands a body to a HEAD anyway: the answer to a HEAD still has none.
    const talkative = createFirstPartyProxy({
      collectorUrl: 'https://first.example/',
      fetch: async () => new Response('var x;'),
    });
    expect((await talkative(new Request('https://shop.example/iojs/a.js', { method: 'HEAD' }))).body).toBeNull();
  });

  it('marks no-store every path naming dyn_wdp, in any case or escape; any other keeps the collector caching', async () => {
    const collector = await recordingUpstream((res) => res.writeHead(200, { 'cache-control': 'max-age=60' }).end());
    const site = await proxyTo(collector.url);
    expect((await raw(site, '/iojs/general5/x/static_wdp.js')).headers['cache-control']).toBe('max-age=60');
    expect((await raw(site, '/iojs/general5/x/dyn_wdpx.js')).headers['cache-control']).toBe('no-store, private');
    expect((await raw(site, '/iojs/general5/x/Dyn%5Fwdp.js')).headers['cache-control']).toBe('no-store, private');
    expect((await raw(site, '/iojs/general5/x/dyn_wdp.js')).headers['cache-control']).toBe('no-store, private');
  });

  it('collector cookies: spaces trimmed, a line without "=" dropped, a relative or odd Path confined to the prefix', async () => {
    const collector = await recordingUpstream((res) =>
      res
        .writeHead(200, {
          'set-cookie': ['novalue', ' c = 3; Path= /base/general5', 'x=1; Path=x/y', 'p=1; Path=/base/a%20b', 'q=1'],
        })
        .end(),
    );
    const site = await proxyTo(`${collector.url}/base/`);
    const response = await fetch(`${site}/iojs/a.js`);
    expect(response.headers.getSetCookie()).toEqual([
      'bbc_c=3; Path=/iojs/general5',
      'bbc_x=1; Path=/iojs',
      'bbc_p=1; Path=/iojs',
      'bbc_q=1; Path=/iojs',
    ]);
  });
});

describe('collectorPath', () => {
  it.each([
    ['general5/SUB/static_wdp.js', true],
    ['general5/a%2Bb%3D/dyn_wdp.js', true],
    ['latest/logo.js', true],
    ['resources/static/x.png', true],
    ['', true],
    ['http://127.0.0.1/admin', false],
    ['/127.0.0.1/x', false],
    ['a//b', false],
    ['a\\b', false],
    ['data:text/html,x', false],
    ['a/../b', false],
    ['a/./b', false],
    ['a/%2e%2e/b', false],
    ['a/%252e%252e/b', false],
    ['a%2fb', false],
    ['a%255cb', false],
    ['http%3A//x', false],
    ['http%253A//x', false],
    ['a%25252e', false],
    ['a%0ab', false],
    ['a b', false],
    ['a%', false],
  ])('%j -> %s', (rest, accepted) => {
    expect(collectorPath(rest) !== undefined).toBe(accepted);
  });
});

describe('createFirstPartyProxy configuration', () => {
  it.each(['iojs', 'x/iojs', '/io js', '/iojs?x', '/iojs#x', '/a/../b', '/a/./b', '/..', '/'])(
    'refuses the prefix %j',
    (prefix) => {
      expect(() => createFirstPartyProxy({ prefix, collectorUrl: 'https://first.example/' })).toThrow(
        expect.objectContaining({ code: 'invalid_configuration' }),
      );
    },
  );

  it.each([
    ['/iojs//', '/iojs'],
    ['/iojs/', '/iojs'],
    ['/a.b/c-d_e~', '/a.b/c-d_e~'],
  ])('takes the prefix %j as %j', (prefix, path) => {
    const proxy = createFirstPartyProxy({ prefix, collectorUrl: 'https://first.example/' });
    expect(proxy.matches(new Request(`https://shop.example${path}/general5/static_wdp.js`))).toBe(true);
    expect(proxy.matches(new Request(`https://shop.example${path}x/general5/static_wdp.js`))).toBe(false);
  });

  it('a valid publicHost is accepted; none is fine', () => {
    expect(() =>
      createFirstPartyProxy({ collectorUrl: 'https://first.example/', publicHost: 'shop.example:8443' }),
    ).not.toThrow();
    expect(() => createFirstPartyProxy({ collectorUrl: 'https://first.example/' })).not.toThrow();
    expect(() =>
      createFirstPartyProxy({ collectorUrl: 'https://first.example/', publicHost: 'shop.example/x' }),
    ).toThrow(expect.objectContaining({ code: 'invalid_configuration' }));
  });
});
