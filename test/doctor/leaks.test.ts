// The doctor on a leaky front (src/doctor/leaks.ts): a plain Node proxy that forwards
// everything, as a bare Next.js rewrites() does, and passes the vendor's Set-Cookie as it
// is, fails with each leak named; the kit's own proxy passes. The shipped nginx
// configuration: test/doctor/leaks.nginx.test.ts.
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { runDoctor, type DoctorReport, type Finding } from '../../src/doctor/doctor.js';
import { checkForwarded, cookieScope } from '../../src/doctor/leaks.js';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { collectorPath, createFirstPartyProxy, toNodeHandler } from '../../src/server/index.js';
import { FORWARDING_CHECKS } from '../support/doctor-checks.js';
import { closeServers, serve } from '../support/http.js';

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator();
});
afterAll(async () => emulator.close());
afterEach(closeServers);

type Leak = 'cookie' | 'authorization' | 'address' | 'host' | 'set-cookie' | 'post' | 'paths';
const EVERY_LEAK: readonly Leak[] = ['cookie', 'authorization', 'address', 'host', 'set-cookie', 'post', 'paths'];

/** The four leak checks, each failed: what a front that leaks everything gets. */
const EVERY_LEAK_FAILS = [
  ['leak_cookies', 'fail'],
  ['leak_auth', 'fail'],
  ['leak_address', 'fail'],
  ['leak_host', 'fail'],
];

const PAGE = () => `<!doctype html><html><body><script src="${emulator.loaderUrl}"></script></body></html>`;

/**
 * A front that forwards /iojs/<rest> to `collectorUrl`/<rest> with every header the client
 * sent, as a bare rewrite does, except the leaks not in `leaks`, which it closes as the kit does.
 */
async function leakyFront(leaks: readonly Leak[] = EVERY_LEAK, collectorUrl = emulator.collectorUrl): Promise<string> {
  const upstream = new URL(collectorUrl);
  return serve((req, res) => {
    if (req.url === '/checkout') return void res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE());
    if (!req.url?.startsWith('/iojs/')) return void res.writeHead(404).end();
    if (!leaks.includes('post') && req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405).end();
    if (!leaks.includes('paths') && collectorPath(req.url.slice('/iojs/'.length).split('?')[0]!) === undefined)
      return void res.writeHead(400).end();
    const headers: IncomingHttpHeaders = { ...req.headers };
    if (!leaks.includes('cookie')) delete headers.cookie;
    if (!leaks.includes('authorization')) delete headers.authorization;
    if (!leaks.includes('address')) headers['x-forwarded-for'] = req.socket.remoteAddress;
    if (!leaks.includes('host')) headers.host = upstream.host;
    const forwarded = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url.slice('/iojs'.length),
        method: req.method,
        headers,
      },
      (answer) => {
        const back = { ...answer.headers };
        const cookies = answer.headers['set-cookie'];
        if (!leaks.includes('set-cookie') && cookies)
          back['set-cookie'] = cookies.map((line) => `bbc_${line}`.replace(/Path=\/(;|$)/, 'Path=/iojs$1'));
        res.writeHead(answer.statusCode ?? 502, back);
        answer.pipe(res);
      },
    );
    forwarded.on('error', () => res.writeHead(502).end());
    req.pipe(forwarded);
  });
}

/** The kit's proxy in front of the collector, on the full path. */
async function kitFront(trustProxy = false): Promise<string> {
  const iojs = toNodeHandler(
    createFirstPartyProxy({ prefix: '/iojs', collectorUrl: emulator.collectorUrl, trustProxy }),
  );
  return serve((req, res) => {
    if (req.url === '/checkout') return void res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE());
    iojs(req, res);
  });
}

/** A front before the kit's own: `post` answers every POST itself; the rest is forwarded as it came. */
async function beforeTheKit(post: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const kit = new URL(await kitFront());
  return serve((req, res) => {
    if (req.method === 'POST') return post(req, res);
    const forwarded = httpRequest(
      { host: kit.hostname, port: kit.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    req.pipe(forwarded);
  });
}

const check = (origin: string, options: Parameters<typeof runDoctor>[1] = {}) =>
  runDoctor(`${origin}/checkout`, { thirdPartyHost: emulator.thirdPartyUrl, ...options });
const finding = (report: DoctorReport, id: Finding['id']) => report.findings.find((f) => f.id === id);
const notPassed = (report: DoctorReport) =>
  report.findings.filter((f) => f.status !== 'pass').map((f) => [f.id, f.status] as const);

describe('a front that forwards everything, as a bare rewrite does', () => {
  it('fails with each leak named and its fix, given the emulator’s collector', async () => {
    const report = await check(await leakyFront(), { collectorUrl: emulator.collectorUrl });
    expect(notPassed(report)).toEqual([
      ['set_cookie', 'fail'],
      ['leak_cookies', 'fail'],
      ['leak_auth', 'fail'],
      ['leak_address', 'fail'],
      ['leak_host', 'fail'],
      ['refuses_post', 'fail'],
      ['refuses_hostile_paths', 'fail'],
    ]);
    expect(finding(report, 'refuses_post')!.message).toBe(
      'the front forwards what it must refuse: a POST (/iojs/general5/static_wdp.js) reached the collector',
    );
    expect(finding(report, 'refuses_hostile_paths')!.message).toBe(
      'the front forwards what it must refuse: a path with a scheme (/iojs/http://collector.invalid/admin) reached the collector; dot segments with encoded slashes (/iojs/..%2f..%2fadmin) reached the collector',
    );
    expect(finding(report, 'refuses_post')!.fix).toContain('405');
    expect(finding(report, 'refuses_hostile_paths')!.fix).toContain('refuse a path with a scheme');
    expect(finding(report, 'set_cookie')!.message).toMatch(/fpc: not in the bbc_ namespace, Path=\/, outside \/iojs/);
    expect(finding(report, 'leak_cookies')!.message).toBe("the shop's session cookie reached the vendor's collector");
    expect(finding(report, 'leak_address')!.message).toContain('198.51.100.66');
    for (const id of ['set_cookie', ...FORWARDING_CHECKS] as const)
      expect(finding(report, id)!.fix, id).toContain(
        'route handler (app/iojs/[...path]/route.ts) instead of rewrites()',
      );
    expect(finding(report, 'leak_cookies')!.fix).toContain('drop the rest');
    expect(finding(report, 'leak_auth')!.fix).toContain('drop Authorization');
    expect(finding(report, 'leak_address')!.fix).toContain('from the peer address');
    expect(finding(report, 'leak_host')!.fix).toContain("collector's own host");
    expect(report.ok).toBe(false);
  });

  it.each([
    ['cookie', 'leak_cookies'],
    ['authorization', 'leak_auth'],
    ['address', 'leak_address'],
    ['host', 'leak_host'],
    ['set-cookie', 'set_cookie'],
    ['post', 'refuses_post'],
    ['paths', 'refuses_hostile_paths'],
  ] as const)('a front that leaks only its %s fails %s alone', async (leak, id) => {
    const report = await check(await leakyFront([leak]), { collectorUrl: emulator.collectorUrl });
    expect(notPassed(report)).toEqual([[id, 'fail']]);
  });

  it('without the collector, it still fails the vendor cookie set on the whole site', async () => {
    const report = await check(await leakyFront());
    expect(notPassed(report)).toEqual([['set_cookie', 'fail']]);
    expect(report.findings.filter((f) => /^(leak|refuses)_/.test(f.id))).toEqual([]);
  });
});

describe("the kit's proxy", () => {
  it('passes every check, the leak checks included', async () => {
    const report = await check(await kitFront(), { collectorUrl: emulator.collectorUrl });
    expect(notPassed(report)).toEqual([]);
    expect(finding(report, 'refuses_post')!.message).toBe('the front refuses a POST');
    expect(finding(report, 'refuses_hostile_paths')!.message).toBe(
      'the front refuses paths with a scheme and dot segments with encoded slashes',
    );
    expect(report.findings.map((f) => f.id)).toEqual(expect.arrayContaining(['set_cookie', ...FORWARDING_CHECKS]));
    expect(report.ok).toBe(true);
  });

  it('with trustProxy facing the client directly, the claimed address reaches the collector: leak_address fails', async () => {
    const report = await check(await kitFront(true), { collectorUrl: emulator.collectorUrl });
    expect(notPassed(report)).toEqual([['leak_address', 'fail']]);
    expect(finding(report, 'leak_address')!.message).toBe(
      'the collector got the address the client claimed (X-Forwarded-For: 198.51.100.66, 127.0.0.1)',
    );
    expect(finding(report, 'leak_address')!.fix).toContain('without trustProxy');
  });
});

describe('the refusal probes (checks/refusals.ts)', () => {
  it('with a collector that cannot say (not the emulator), a probe answered 2xx fails as forwarded', async () => {
    // A collector answering every request, the inspection path too, with a script.
    const anything = await serve(
      (_req, res) => void res.writeHead(200, { 'content-type': 'application/javascript' }).end('/* any */'),
    );
    const report = await check(await leakyFront(EVERY_LEAK, anything), { collectorUrl: anything });
    expect(finding(report, 'refuses_post')).toMatchObject({
      status: 'fail',
      message: expect.stringMatching(
        /a POST \(\/iojs\/general5\/static_wdp\.js\) was answered with a 2xx, as if forwarded/,
      ),
    });
    expect(finding(report, 'refuses_hostile_paths')!.status).toBe('fail');
  });

  it('a probe the front answers itself, with no body, passes: the collector never saw it', async () => {
    const posted: string[] = [];
    const front = await beforeTheKit((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        posted.push(body);
        res.writeHead(204).end();
      });
    });
    const report = await check(front, { collectorUrl: emulator.collectorUrl });
    expect(finding(report, 'refuses_post')).toMatchObject({ status: 'pass', message: 'the front refuses a POST' });
    expect(posted).toEqual(['bbc-doctor']);
  });

  it('a probe the front drops the connection on is a warning: not checked', async () => {
    const front = await beforeTheKit((req) => void req.socket.destroy());
    const report = await check(front, { collectorUrl: emulator.collectorUrl });
    expect(finding(report, 'refuses_post')).toMatchObject({
      status: 'warn',
      message: expect.stringContaining('a POST could not be sent'),
    });
    expect(finding(report, 'refuses_hostile_paths')!.status).toBe('pass');
  });
});

describe('when the leak check cannot run, it says so: a warning', () => {
  it('a collector without the inspection path (not the emulator)', async () => {
    const plain = await serve((_req, res) => void res.writeHead(404, { 'content-type': 'text/plain' }).end('no'));
    const report = await check(await kitFront(), { collectorUrl: plain });
    expect(finding(report, 'leak_check')).toMatchObject({
      status: 'warn',
      message: expect.stringContaining('answered 404 to the inspection request'),
      fix: expect.stringContaining("the emulator's collector"),
    });
    expect(report.findings.filter((f) => f.id.startsWith('leak_') && f.id !== 'leak_check')).toEqual([]);
    // The kit refuses every probe with a 4xx: passed, though the collector cannot say.
    expect(notPassed(report).filter(([id]) => id.startsWith('refuses_'))).toEqual([]);
  });

  it('a collector the front does not forward to: the marked request never reached it', async () => {
    const other = await startEmulator();
    try {
      const report = await check(await leakyFront(EVERY_LEAK, other.collectorUrl), {
        collectorUrl: emulator.collectorUrl,
      });
      expect(finding(report, 'leak_check')).toMatchObject({
        status: 'warn',
        message: expect.stringContaining('never reached this collector'),
      });
    } finally {
      await other.close();
    }
  });

  it.each([
    ['no JSON', 'not json'],
    ['JSON without headers', '{"marker":"x"}'],
    ['null headers', '{"headers":null}'],
    ['null', 'null'],
  ])('a collector whose inspection answer is %s', async (_, body) => {
    const odd = await serve((_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end(body));
    const report = await check(await kitFront(), { collectorUrl: odd });
    expect(finding(report, 'leak_check')).toMatchObject({
      status: 'warn',
      message: expect.stringContaining('the collector could not be asked'),
    });
  });

  it('headers held as lists or numbers are read: a list with none of the markers passes', async () => {
    const odd = await serve(
      (_req, res) =>
        void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end('{"headers":{"cookie":["session=x"],"x-forwarded-for":7}}'),
    );
    const report = await check(await kitFront(), { collectorUrl: odd });
    expect(notPassed(report)).toEqual([]);
  });

  it('headers held as lists carrying the markers fail, as the same text would: a collector serving what a leaky front sent', async () => {
    // The answer a collector keeping each header line gives (Node's headersDistinct), for what reached the emulator.
    const lines = await serve((req, res) => {
      const marker = new URL(req.url!, 'http://x').searchParams.get('marker')!;
      void fetch(`${emulator.collectorUrl}/__bbc/last-request?marker=${marker}`)
        .then((answer) => answer.json() as Promise<{ headers: Record<string, string> }>)
        .then(({ headers }) => {
          const distinct = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]]));
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ marker, headers: distinct }));
        });
    });
    const front = await leakyFront(EVERY_LEAK);
    const report = await check(front, { collectorUrl: emulator.collectorUrl });
    const listed = await check(front, { collectorUrl: lines });
    const leaks = (of: DoctorReport) => of.findings.filter((f) => /^leak_/.test(f.id)).map((f) => [f.id, f.status]);
    expect(leaks(listed)).toEqual(leaks(report));
    expect(leaks(listed)).toEqual(EVERY_LEAK_FAILS);
  });

  it("a page on the collector's own host: the Host cannot be told apart, a warning", async () => {
    const findings: Array<[string, string]> = [];
    const get = async (url: string | URL) =>
      String(url).includes('/__bbc/last-request')
        ? new Response(JSON.stringify({ headers: { host: 'shop.example' } }))
        : new Response('');
    await checkForwarded(get, (id, status) => void findings.push([id, status]), {
      page: new URL('https://shop.example/checkout'),
      prefix: '/iojs',
      version: 'general5',
      collectorUrl: 'https://shop.example/collector/',
      cookiePrefix: 'bbc_',
    });
    expect(findings).toContainEqual(['leak_host', 'warn']);
    expect(findings.filter(([, status]) => status !== 'pass')).toEqual([['leak_host', 'warn']]);
  });

  it("a long X-Forwarded-For is cut in the message: a collector's answer is not echoed whole", async () => {
    const messages: string[] = [];
    const chain = `198.51.100.66, ${'10.0.0.1, '.repeat(500)}10.0.0.2`;
    const get = async (url: string | URL) =>
      String(url).includes('/__bbc/last-request')
        ? new Response(JSON.stringify({ headers: { 'x-forwarded-for': chain } }))
        : new Response('');
    await checkForwarded(get, (id, _, message) => void (id === 'leak_address' && messages.push(message)), {
      page: new URL('https://shop.example/checkout'),
      prefix: '/iojs',
      version: 'general5',
      collectorUrl: 'https://collector.example/',
      cookiePrefix: 'bbc_',
    });
    expect(messages).toEqual([
      `the collector got the address the client claimed (X-Forwarded-For: ${chain.slice(0, 200)})`,
    ]);
  });

  it('a collector that cannot be reached', async () => {
    const report = await check(await kitFront(), { collectorUrl: 'http://127.0.0.1:9', timeoutMs: 2000 });
    expect(finding(report, 'leak_check')).toMatchObject({
      status: 'warn',
      message: expect.stringContaining('the collector could not be asked'),
    });
  });
});

describe('cookieScope: the vendor cookies that came back through the front', () => {
  const scope = (...lines: string[]) =>
    cookieScope(lines, { prefix: '/iojs', cookiePrefix: 'bbc_', requestPath: '/iojs/general5/dyn_wdp.js' });

  it.each([
    'bbc_fpc=1; Path=/iojs; SameSite=Lax',
    'bbc_fpc=1; Path=/iojs/general5',
    'bbc_fpc=1; path=/iojs',
    // No Path: the browser scopes it to the request's directory, /iojs/general5.
    'bbc_fpc=1; Max-Age=60',
  ])('%s passes', (line) => {
    expect(scope(line)).toBeUndefined();
  });

  it.each([
    ['fpc=1; Path=/iojs', 'fpc: not in the bbc_ namespace'],
    ['bbc_=1; Path=/iojs', 'bbc_: not in the bbc_ namespace'],
    ['bbc_fpc=1; Path=/', 'bbc_fpc: Path=/, outside /iojs'],
    ['bbc_fpc=1; Path=/iojsx', 'bbc_fpc: Path=/iojsx, outside /iojs'],
    ['bbc_fpc=1; Path=elsewhere', 'bbc_fpc: Path=/, outside /iojs'],
    ['bbc_fpc=1; Path=/iojs; Domain=shop.example', 'bbc_fpc: Domain=shop.example, every subdomain'],
  ])('%s fails: %s', (line, problem) => {
    expect(scope(line)?.message).toContain(problem);
  });

  it('a cookie without a Path set on a path outside the prefix fails', () => {
    expect(
      cookieScope(['bbc_fpc=1'], { prefix: '/iojs', cookiePrefix: 'bbc_', requestPath: '/dyn_wdp.js' })?.message,
    ).toContain('Path=/, outside /iojs');
  });

  it('names every cookie that is wrong, and the fix', () => {
    const found = scope('bbc_ok=1; Path=/iojs', 'fpc=2; Path=/', 'bbc_x=3; Path=/');
    expect(found?.message).toBe(
      "the front sets the vendor's cookie on the shop's site: fpc: not in the bbc_ namespace, Path=/, outside /iojs; bbc_x: Path=/, outside /iojs",
    );
    expect(found?.fix).toContain('rename each vendor cookie to bbc_<name> with Path=/iojs and no Domain');
  });
});

// checkForwarded against a fake front and collector: what it sends and what it concludes.
describe('checkForwarded against a fake front and collector', () => {
  type Found = { id: string; status: string; message: string; fix?: string };
  /** Runs the check; `front` answers the marked request, `collector` the inspection (given its marker). */
  async function run(front: () => Promise<Response>, collector: (marker: string) => Promise<Response>) {
    const findings: Found[] = [];
    const marked: URL[] = [];
    const get = async (url: string | URL) => {
      if (String(url).includes('/__bbc/last-request')) return collector(new URL(url).searchParams.get('marker')!);
      marked.push(new URL(url));
      return front();
    };
    await checkForwarded(get, (id, status, message, fix) => void findings.push({ id, status, message, fix }), {
      page: new URL('https://shop.example/checkout'),
      prefix: '/iojs',
      version: 'general5',
      collectorUrl: 'https://collector.example/',
      cookiePrefix: 'bbc_',
    });
    return { findings, marked };
  }
  /** The doctor's leak check where the front answers every marked request, empty, and the collector as `collector` says. */
  const behindAFront = (collector: (marker: string) => Promise<Response>) =>
    run(async () => new Response(''), collector);
  const headers = (values: Record<string, string>) => async () => Response.json({ headers: values });
  const check = (findings: Found[]) => findings.find((f) => f.id === 'leak_check');

  it('the marker is 24 hex digits of random bytes, each byte two of them', async () => {
    vi.spyOn(crypto, 'getRandomValues').mockImplementation((array) => array);
    try {
      const { marked } = await behindAFront(headers({}));
      expect(marked.map((url) => url.searchParams.get('bbc-doctor'))).toEqual([`bbc-doctor-${'00'.repeat(12)}`]);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('a front that answers with no body is still checked', async () => {
    const { findings } = await run(async () => new Response(null, { status: 204 }), headers({}));
    expect(check(findings)).toBeUndefined();
    expect(findings.map((f) => [f.id, f.status])).toEqual([
      ['leak_cookies', 'pass'],
      ['leak_auth', 'pass'],
      ['leak_address', 'pass'],
      ['leak_host', 'pass'],
    ]);
  });

  it('a marked request that fails: a warning that says why', async () => {
    const { findings } = await run(() => Promise.reject(new Error('refused')), headers({}));
    expect(findings).toEqual([
      {
        id: 'leak_check',
        status: 'warn',
        message: 'what the front forwards was not checked: the marked request failed (refused)',
        fix: 'check that the front answers',
      },
    ]);
  });

  it('"not_seen" counts only in a 404: another status is the collector answering it', async () => {
    const { findings } = await behindAFront(async () =>
      Response.json({ error: { code: 'not_seen' } }, { status: 500 }),
    );
    expect(check(findings)?.message).toContain('the collector answered 500 to the inspection request');
    const notSeen = await behindAFront(async () => Response.json({ error: { code: 'not_seen' } }, { status: 404 }));
    expect(check(notSeen.findings)?.fix).toBe(
      "give --collector-url the collector the front forwards to (the emulator's)",
    );
  });

  it('an answer of null names no headers: said so, with the fix', async () => {
    const { findings } = await behindAFront(async () => new Response('null'));
    expect(check(findings)).toEqual({
      id: 'leak_check',
      status: 'warn',
      message:
        'what the front forwards was not checked: the collector could not be asked (its answer names no headers)',
      fix: 'check --collector-url',
    });
  });

  /** The markers' headers as a leaky front forwards them, shaped by `shape` (a header name and its text). */
  const leaked = (shape: (name: string, value: string) => [string, unknown]) => async (marker: string) =>
    Response.json({
      headers: Object.fromEntries(
        [
          ['cookie', `session=${marker}-session; bbc_fpc=${marker}-vendor`],
          ['authorization', `Bearer ${marker}-token`],
          ['x-forwarded-for', '198.51.100.66'],
          ['host', 'shop.example'],
        ].map(([name, value]) => shape(name!, value!)),
      ),
    });
  const statuses = (findings: Found[]) => findings.map((f) => [f.id, f.status]);

  it.each([
    ['as text', (name: string, value: string) => [name, value] as [string, unknown]],
    ['as a list of one line', (name: string, value: string) => [name, [value]] as [string, unknown]],
    ['as a list of several lines', (name: string, value: string) => [name, ['1', value, 2]] as [string, unknown]],
    ['under names in any case', (name: string, value: string) => [name.toUpperCase(), value] as [string, unknown]],
  ])('every leak fails with the headers held %s', async (_, shape) => {
    const { findings } = await behindAFront(leaked(shape));
    expect(statuses(findings)).toEqual(EVERY_LEAK_FAILS);
  });

  it('the lines of a header held twice, under two cases of its name, are all read', async () => {
    const { findings } = await behindAFront(async (marker) =>
      Response.json({ headers: { Cookie: 'bbc_fpc=v', cookie: [`session=${marker}-session`], Authorization: 7 } }),
    );
    expect(statuses(findings)).toEqual([
      ['leak_cookies', 'fail'],
      ['leak_auth', 'pass'],
      ['leak_address', 'pass'],
      ['leak_host', 'pass'],
    ]);
  });

  it.each([
    ['an object', { value: 'x' }],
    ['a list holding an object', ['a=1', { value: 'x' }]],
    ['a list of lists', [['a=1']]],
    ['true', true],
    ['null', null],
  ])('a header held as %s cannot be read: its check says it could not decide, never passes', async (_, value) => {
    const { findings } = await behindAFront(leaked((name) => [name, value]));
    expect(statuses(findings)).toEqual([
      ['leak_cookies', 'warn'],
      ['leak_auth', 'warn'],
      ['leak_address', 'warn'],
      ['leak_host', 'warn'],
    ]);
    expect(findings[0]).toEqual({
      id: 'leak_cookies',
      status: 'warn',
      message:
        "not checked: the collector's answer holds cookie in a shape the doctor cannot read (not text, a number or a list of them)",
      fix: "give --collector-url the emulator's collector (blackbox-capture-emulator), whose answer the doctor reads",
    });
  });

  it('one header that cannot be read leaves only its own check undecided', async () => {
    const { findings } = await behindAFront(
      leaked((name, value) => [name, name === 'authorization' ? { value } : value]),
    );
    expect(statuses(findings)).toEqual([
      ['leak_cookies', 'fail'],
      ['leak_auth', 'warn'],
      ['leak_address', 'fail'],
      ['leak_host', 'fail'],
    ]);
  });

  it('headers held as a list, not by name, name no headers: not checked', async () => {
    const { findings } = await behindAFront(async (marker) =>
      Response.json({ headers: [`cookie: session=${marker}-session`] }),
    );
    expect(findings).toEqual([
      {
        id: 'leak_check',
        status: 'warn',
        message:
          'what the front forwards was not checked: the collector could not be asked (its answer names no headers)',
        fix: 'check --collector-url',
      },
    ]);
  });

  it('the claimed address in any line of the chain fails, and the message shows the lines joined', async () => {
    const { findings } = await behindAFront(async () =>
      Response.json({ headers: { 'x-forwarded-for': ['10.0.0.1', '10.0.0.2, 198.51.100.66'] } }),
    );
    expect(findings.find((f) => f.id === 'leak_address')).toMatchObject({
      status: 'fail',
      message: 'the collector got the address the client claimed (X-Forwarded-For: 10.0.0.1, 10.0.0.2, 198.51.100.66)',
    });
  });

  it('the claimed address anywhere in the chain, spaces around it, fails', async () => {
    const { findings } = await behindAFront(headers({ 'x-forwarded-for': '10.0.0.1, 198.51.100.66' }));
    expect(findings.find((f) => f.id === 'leak_address')?.status).toBe('fail');
  });
});

describe('cookieScope: how a Set-Cookie line is read', () => {
  const scope = (line: string) =>
    cookieScope([line], { prefix: '/iojs', cookiePrefix: 'bbc_', requestPath: '/iojs/general5/dyn_wdp.js' })?.message;

  it('names and values are trimmed, as a browser reads them', () => {
    expect(scope('bbc_fpc=1; Path= /iojs')).toBeUndefined();
    expect(scope('bbc_ =1; Path=/iojs')).toBe(
      "the front sets the vendor's cookie on the shop's site: bbc_: not in the bbc_ namespace",
    );
    expect(scope(' fpc ; Path=/iojs')).toBe(
      "the front sets the vendor's cookie on the shop's site: fpc: not in the bbc_ namespace",
    );
  });

  it('a bare Domain attribute is still a Domain: it fails', () => {
    expect(scope('bbc_fpc=1; Path=/iojs; Domain')).toBe(
      "the front sets the vendor's cookie on the shop's site: bbc_fpc: Domain=, every subdomain",
    );
  });
});
