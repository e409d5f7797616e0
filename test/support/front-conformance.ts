// One conformance suite for every first-party front (docs/proxy.md, "The contract of a
// first-party front"): the kit's proxy and each recipe of proxy/ run in its real server. A
// header-logging stand-in sits in front of the emulator's collector and records what reached
// the vendor; an "internal" server records what a forged path would reach instead.
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { FORWARDING_CHECKS } from './doctor-checks.js';
import { freePort } from './processes.mjs';
import { rawRequest, type RawAnswer } from './http.js';
import { runDoctor } from '../../src/doctor/doctor.js';
import type { RunningFront } from './fronts.js';
import { bytesDecoded, DYNAMIC_SCRIPT } from '../../src/server/proxy/contract.js';
import {
  CLIENT_SET_HEADERS,
  COLLECTOR_MAY_SEE,
  DOT_SEGMENT_PATHS,
  DYNAMIC_SCRIPT_VARIANTS,
  HOSTILE_ANSWER_HEADERS,
  HOSTILE_CSP,
  INVENTED_ANSWER_HEADERS,
  INVENTED_REQUEST_HEADERS,
  REFUSED_PATHS,
  SHOPPER_MAY_SEE,
  UNKNOWN_HEADER,
} from './front-contract.js';

export interface FrontExpectations {
  /**
   * The vendor's cookies. `namespaced`: the browser's `bbc_fpc` goes to the collector as
   * `fpc`, and the collector's `fpc` comes back as `bbc_fpc` with `Path=/iojs` (the kit's
   * proxy). `dropped`: no cookie crosses either way (servers that cannot rename a cookie).
   */
  vendorCookies: 'namespaced' | 'dropped';
  /**
   * `refused`: every hostile path, in every encoding, is answered by the front itself and
   * nothing reaches the collector. `contained`: the front normalises some of them and forwards
   * the result, which reaches only the collector, under its root (Next.js, whose own redirect
   * and URL parser run first).
   */
  hostilePaths: 'refused' | 'contained';
  /**
   * `redirected`: a path with `//` or a backslash is answered with a 308 to the same path on
   * this origin with the slashes merged (Next.js does it before any route runs); the
   * redirect's target is then refused as any hostile path is. Default: refused at once.
   */
  repeatedSlashes?: 'redirected';
  /**
   * `framework-500`: a broken escape (`%zz`) is answered 500 by the framework before the
   * front's code runs (Next.js); the collector is still never asked. Default: a 4xx.
   */
  brokenEscapes?: 'framework-500';
  /** Headers the platform itself adds to every answer (Next.js), beside the contract's. */
  platformAnswerHeaders?: readonly string[];
}

export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

const CSP = "sandbox; default-src 'none'";
const STALL = '/general5/stall/static_wdp.js';

/** A server on 127.0.0.1 recording each request; `answer` handles it after the record. */
async function recorder(
  answer: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ origin: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers });
    answer(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

/** Every value of a header in an answer, in the order sent (Node joins some repeated ones). */
const values = (answer: RawAnswer, name: string): string[] => {
  const value = answer.headers[name];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
};

/**
 * Paths that would take a front elsewhere than the collector, or outside its root, were it to
 * pass them on as a target (`internalHost`: a server the front must never reach).
 */
export const hostileTargets = (internalHost: string): string[] => [
  `http://${internalHost}/admin`,
  `HTTP://${internalHost}/admin`,
  `//${internalHost}/x`,
  `///${internalHost}/x`,
  `\\\\${internalHost}\\x`,
  'data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==',
  '/evil.example/x',
  'general5/../../admin',
];

/**
 * The suite, for the front `start` runs in front of a collector URL. Cases that differ
 * between fronts read `expectations`; every other case holds for all of them.
 */
export function frontConformance(
  name: string,
  start: (collectorUrl: string) => Promise<RunningFront>,
  expectations: FrontExpectations,
): void {
  describe(`${name}: the first-party front contract`, () => {
    let emulator: Emulator;
    let front: RunningFront;
    let collector: Awaited<ReturnType<typeof recorder>>;
    let internal: Awaited<ReturnType<typeof recorder>>;
    const send = (path: string, init?: Parameters<typeof rawRequest>[2]) =>
      rawRequest(front.origin, path, { ...init, headers: { host: 'shop.test', ...init?.headers } });
    /**
     * The answer, after the framework's own redirect where the front has one (Next.js: a 308
     * to the same path on this origin, slashes merged, a trailing one dropped, an absolute form
     * made a path), which is then held to the contract as any request is.
     */
    const sendFollowed = async (path: string) => {
      const answer = await send(path);
      if (expectations.repeatedSlashes !== 'redirected' || answer.status !== 308) return answer;
      // On this origin only (the Host sent), as a path without a repeated slash or a backslash.
      const location = String(answer.headers.location ?? '');
      const target = new URL(location, 'http://shop.test');
      const followed = target.host === 'shop.test' && !/\/\/|\\/.test(target.pathname);
      return followed ? send(target.pathname + target.search) : answer;
    };

    beforeAll(async () => {
      emulator = await startEmulator();
      const upstream = new URL(emulator.collectorUrl);
      // The stand-in: records, then passes the request on to the emulator's collector as it came.
      collector = await recorder((req, res) => {
        if (req.url === STALL) return; // never answers: the front's own time limit must end it
        // A hostile collector: every header the contract keeps from the shopper, on a 200 or a 302.
        const hostile = /\/hostile\/(\d+)\//.exec(req.url!);
        if (hostile) {
          res.writeHead(Number(hostile[1]), {
            ...HOSTILE_ANSWER_HEADERS,
            ...INVENTED_ANSWER_HEADERS,
            'content-security-policy': HOSTILE_CSP,
            [UNKNOWN_HEADER[0]]: UNKNOWN_HEADER[1],
            'content-type': 'application/javascript',
          });
          return void res.end('/* hostile */');
        }
        // The dynamic script under any spelling, with a year of caching: the front's rule must win.
        const dynamic = DYNAMIC_SCRIPT.test(bytesDecoded(req.url!.split('?')[0]!));
        const forwarded = httpRequest(
          { hostname: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers },
          (answer) => {
            // A hop-by-hop header of the collector's own connection, which no front may pass on.
            // And on the dynamic script a second cookie, with a Domain and a Path of its own.
            const cookies = answer.headers['set-cookie'] ?? [];
            if (cookies.length) cookies.push('fpd=2; Domain=.shop.test; path=/; HttpOnly');
            res.writeHead(answer.statusCode!, {
              ...answer.headers,
              ...(cookies.length ? { 'set-cookie': cookies } : {}),
              ...(dynamic ? { 'cache-control': 'public, max-age=31536000, immutable' } : {}),
              'proxy-authenticate': 'Basic realm="vendor"',
            });
            answer.pipe(res);
          },
        );
        forwarded.on('error', () => res.destroy());
        req.pipe(forwarded);
      });
      internal = await recorder((_req, res) =>
        res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>admin</h1>'),
      );
      front = await start(collector.origin);
    }, 60_000);

    afterAll(async () => {
      await front?.stop();
      for (const server of [collector?.server, internal?.server]) {
        server?.closeAllConnections();
        await new Promise((resolve) => server?.close(resolve));
      }
      await emulator?.close();
    });

    it('forwards the path under the prefix, stripped of it, with its query', async () => {
      const answer = await send('/iojs/general5/SUB/static_wdp.js?loaderVer=5.2.2');
      expect(answer.status).toBe(200);
      expect(answer.body).toContain('emulated collection script: fp_static');
      expect(collector.seen.at(-1)!.url).toBe('/general5/SUB/static_wdp.js?loaderVer=5.2.2');
      expect(answer.headers['cache-control']).toMatch(/max-age/);
      expect(answer.headers['content-security-policy']).toBe(CSP);
    });

    it("passes on none of the collector's hop-by-hop headers", async () => {
      const answer = await send('/iojs/general5/SUB/static_wdp.js');
      expect(answer.status).toBe(200);
      expect(answer.headers['proxy-authenticate']).toBeUndefined();
    });

    it('never lets the dynamic script be cached (one Cache-Control), and forwards user agent and language', async () => {
      const answer = await send('/iojs/general5/SUB/dyn_wdp.js', {
        headers: { 'user-agent': 'Mozilla/5.0 conformance', 'accept-language': 'it-CH' },
      });
      expect(answer.status).toBe(200);
      // Node joins repeated Cache-Control lines with ", ": a second one would show here.
      expect(answer.headers['cache-control']).toBe('no-store, private');
      expect(answer.headers['cdn-cache-control']).toBe('no-store');
      expect(answer.body).toContain('Mozilla/5.0 conformance');
      expect(answer.body).toContain('it-CH');
    });

    it("sends neither the shop's cookies nor its credentials; the vendor's cookie only in its namespace", async () => {
      await send('/iojs/general5/SUB/static_wdp.js', {
        headers: {
          cookie: 'session=s3cr3t; csrf=t0ken; bbc_fpc=vendor-token',
          authorization: 'Bearer shop-secret',
          'proxy-authorization': 'Basic c2hvcDpzZWNyZXQ=',
        },
      });
      const { headers } = collector.seen.at(-1)!;
      expect(headers.authorization).toBeUndefined();
      expect(headers['proxy-authorization']).toBeUndefined();
      expect(headers.cookie).toBe(expectations.vendorCookies === 'namespaced' ? 'fpc=vendor-token' : undefined);
      expect(JSON.stringify(headers)).not.toMatch(/s3cr3t|t0ken|shop-secret/);
    });

    it.each([
      ['a=1; bbc_fpc=v; b=2', 'fpc=v'],
      ['bbc_fpc=v;session=x', 'fpc=v'],
      ['bbc_a=1; x=2; bbc_b=3', 'a=1; b=3'],
      [`${Array.from({ length: 12 }, (_, i) => `shop${i}=s3cr3t`).join('; ')}; bbc_fpc=v`, 'fpc=v or none'],
      // A cookie without "=" is a nameless cookie to a browser, whatever its value: the shop's.
      ['sessionsecret123; bbc_fpc=v', 'fpc=v'],
      ['bbc_fpc=v; sessionsecret123', 'fpc=v'],
      ['bbc_sessionsecret; bbc_fpc=v', 'fpc=v'],
      ['bbc_sessionsecret', undefined],
    ])('out of Cookie: %s, sends only the vendor’s, unprefixed', async (cookie, sent) => {
      await send('/iojs/general5/SUB/static_wdp.js', { headers: { cookie } });
      const received = collector.seen.at(-1)!.headers.cookie;
      if (expectations.vendorCookies === 'dropped') expect(received).toBeUndefined();
      // A front may fail closed (send none) on more cookies than it can sort; never leak one.
      else if (sent === 'fpc=v or none') expect([undefined, 'fpc=v']).toContain(received);
      else expect(received).toBe(sent);
    });

    // HTTP/2 may split the cookies into several fields (RFC 9113 8.2.3), and a client may send
    // two Cookie lines: a front that joins them must still judge each cookie on its own.
    it.each([
      [['session=s3cr3t', 'bbc_fpc=v']],
      [['bbc_fpc=v', 'session=s3cr3t; csrf=t0ken']],
      [['bbc_fpc=v', 'sessionsecret123']],
      [['bbc_a=1; session=s3cr3t', 'csrf=t0ken; bbc_b=2']],
    ])('out of several Cookie lines %j, sends only the vendor’s, or none', async (lines) => {
      await send('/iojs/general5/SUB/static_wdp.js', { headers: { cookie: lines } });
      const received = collector.seen.at(-1)!.headers.cookie;
      expect(JSON.stringify(received ?? '')).not.toMatch(/s3cr3t|t0ken|sessionsecret/);
      const vendors = lines
        .join('; ')
        .match(/bbc_\w+=\w+/g)!
        .map((pair) => pair.slice('bbc_'.length));
      if (expectations.vendorCookies === 'dropped') expect(received).toBeUndefined();
      // Each vendor cookie, in the order sent (Node joins the collector's Cookie lines with "; "); or none (failing closed).
      else if (received !== undefined) expect(received).toBe(vendors.join('; '));
    });

    it("sends no Cookie header at all when the browser has only the shop's cookies", async () => {
      await send('/iojs/general5/SUB/static_wdp.js', { headers: { cookie: 'session=s3cr3t; bbc_=empty-name' } });
      expect(collector.seen.at(-1)!.headers.cookie).toBeUndefined();
    });

    it("takes the client's address from the peer, never from its own X-Forwarded-For", async () => {
      await send('/iojs/general5/SUB/static_wdp.js', { headers: { 'x-forwarded-for': '6.6.6.6' } });
      expect(collector.seen.at(-1)!.headers['x-forwarded-for']).toBe('127.0.0.1');
    });

    it("sends the collector's Host, not the shop's", async () => {
      await send('/iojs/general5/SUB/static_wdp.js');
      expect(collector.seen.at(-1)!.headers.host).toBe(new URL(collector.origin).host);
    });

    it("returns the vendor's cookie in its namespace under the prefix, or none", async () => {
      const cookies = values(await send('/iojs/general5/SUB/dyn_wdp.js'), 'set-cookie');
      if (expectations.vendorCookies === 'dropped') expect(cookies).toEqual([]);
      else {
        expect(cookies).toHaveLength(2);
        expect(cookies[0]).toMatch(/^bbc_fpc=[^;]+; Path=\/iojs(;|$)/);
        expect(cookies[1]).toMatch(/^bbc_fpd=2; Path=\/iojs; HttpOnly$/);
        for (const cookie of cookies) {
          expect(cookie).not.toMatch(/domain=/i);
          expect(cookie.match(/path=/gi)).toHaveLength(1);
        }
      }
    });

    it.each(['POST', 'PUT', 'DELETE'])('refuses %s and reaches nothing', async (method) => {
      const before = collector.seen.length;
      const answer = await send('/iojs/general5/SUB/static_wdp.js', {
        method,
        ...(method === 'DELETE' ? {} : { body: 'x' }),
      });
      expect([403, 405]).toContain(answer.status);
      expect(collector.seen.length).toBe(before);
    });

    it.each([
      '/iojs/../admin',
      '/iojs/%2e%2e/admin',
      '/iojs/%2E%2E/admin',
      '/iojs/..%2f..%2fadmin',
      '/iojs/general5/../../admin',
      '/iojs/general5/%2e%2e/%2e%2e/admin',
      '/iojsx/general5/SUB/static_wdp.js',
    ])('does not forward %s, outside the prefix', async (path) => {
      const before = collector.seen.length;
      const answer = await send(path);
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(answer.status).toBeLessThan(500);
      expect(collector.seen.length).toBe(before);
    });

    it('reaches nothing but the collector, under its root, for hostile paths in every encoding', async () => {
      const internalHost = new URL(internal.origin).host;
      const before = collector.seen.length;
      const attacks = [
        ...hostileTargets(internalHost),
        'general5/..;/..;/admin',
        'general5/%00%0d%0aX-Injected:%20yes/x',
      ];
      const plainRefused: string[] = [];
      for (const attack of attacks) {
        const once = attack.replace(/[:/\\.;]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
        for (const [form, rest] of [
          ['raw', attack],
          ['encoded', once],
          ['double-encoded', once.replace(/%/g, '%25')],
        ] as const) {
          const reached = collector.seen.length;
          const answer = await send(`/iojs/${rest}`);
          if (answer.status === 200) expect(answer.headers['content-security-policy'], `${form} ${attack}`).toBe(CSP);
          // Refused by the front itself: a 4xx (or the redirect above, to a path of this
          // origin without the repeated slashes), and the collector never asked.
          const location = String(answer.headers.location ?? '');
          const redirected =
            expectations.repeatedSlashes === 'redirected' &&
            answer.status === 308 &&
            /^\/(?![/\\])/.test(location) &&
            !/\/\/|\\/.test(location.split('?')[0]!);
          const final = redirected ? await send(location) : answer;
          const refused = final.status >= 400 && final.status < 500 && collector.seen.length === reached;
          if (form === 'raw' && /^(http|data):/i.test(attack) && refused) plainRefused.push(attack);
        }
      }
      expect(internal.seen).toEqual([]);
      // A scheme as sent is refused by every front, whatever it does with the encoded forms.
      expect(plainRefused).toEqual(attacks.filter((attack) => /^(http|data):/i.test(attack)));
      const forwarded = collector.seen.slice(before).map(({ url }) => url);
      if (expectations.hostilePaths === 'refused') expect(forwarded).toEqual([]);
      for (const url of forwarded) {
        expect(url).toMatch(/^\/(?!\/)/);
        expect(new URL(url, 'https://first.example').host).toBe('first.example');
      }
    });

    it.each(REFUSED_PATHS)('refuses %s itself: the collector is never asked', async (path) => {
      const before = collector.seen.length;
      const answer = await sendFollowed(path);
      const broken = /%([^0-9a-f]|.[^0-9a-f]|.?$)/i.test(path);
      if (broken && expectations.brokenEscapes === 'framework-500') expect(answer.status).toBe(500);
      else {
        expect(answer.status).toBeGreaterThanOrEqual(400);
        expect(answer.status).toBeLessThan(500);
      }
      expect(collector.seen.slice(before).map(({ url }) => url)).toEqual([]);
    });

    it.each(DOT_SEGMENT_PATHS)('sends no dot segment of %s on: refused, or resolved first', async (path) => {
      const before = collector.seen.length;
      const answer = await sendFollowed(path);
      const forwarded = collector.seen.slice(before).map(({ url }) => url);
      // WHATWG URL parsing reads %2e as a dot: the path a browser would have asked for.
      const resolved = new URL(path, 'http://shop.test').pathname;
      if (forwarded.length === 0 || !resolved.startsWith('/iojs/')) {
        expect(forwarded).toEqual([]);
        expect(answer.status).toBeGreaterThanOrEqual(400);
      } else expect(forwarded).toEqual([resolved.slice('/iojs'.length)]);
    });

    it.each(DYNAMIC_SCRIPT_VARIANTS)('never lets %s be cached: no-store, or refused', async (path) => {
      const before = collector.seen.length;
      const answer = await sendFollowed(path);
      if (collector.seen.length === before) expect(answer.status).toBeGreaterThanOrEqual(400);
      else expect(answer.headers['cache-control'], `status ${answer.status}`).toBe('no-store, private');
    });

    it("drops every address header the client wrote; the collector gets the front's one way", async () => {
      await send('/iojs/general5/SUB/static_wdp.js', {
        headers: { ...CLIENT_SET_HEADERS, [UNKNOWN_HEADER[0]]: UNKNOWN_HEADER[1], 'x-forwarded-for': '6.6.6.6' },
      });
      const { headers } = collector.seen.at(-1)!;
      expect(Object.keys(CLIENT_SET_HEADERS).filter((name) => name in headers)).toEqual([]);
      expect(JSON.stringify(headers)).not.toMatch(/6\.6\.6|6666|spoofed|\/admin/);
      expect(headers['x-forwarded-for']).toBe('127.0.0.1');
      expect(Object.keys(headers).filter((name) => !COLLECTOR_MAY_SEE.has(name))).toEqual([]);
    });

    // An allow-list, not a deny-list (issue 57): a header nobody named is dropped too.
    it.each(Object.entries(INVENTED_REQUEST_HEADERS))(
      'sends no %s a client invents to the vendor',
      async (name, value) => {
        await send('/iojs/general5/SUB/static_wdp.js', { headers: { [name]: value } });
        const { headers } = collector.seen.at(-1)!;
        expect(headers[name]).toBeUndefined();
        expect(Object.keys(headers).filter((seen) => !COLLECTOR_MAY_SEE.has(seen))).toEqual([]);
      },
    );

    it.each([200, 302])("passes none of a hostile collector's headers to the shopper (a %i)", async (status) => {
      const answer = await send(`/iojs/general5/hostile/${status}/static_wdp.js`);
      expect(Object.keys(HOSTILE_ANSWER_HEADERS).filter((name) => name in answer.headers)).toEqual([]);
      expect(answer.headers['content-security-policy']).toBe(CSP);
      expect(JSON.stringify(answer.headers)).not.toMatch(/evil\.example/);
      const allowed = new Set([...SHOPPER_MAY_SEE, ...(expectations.platformAnswerHeaders ?? [])]);
      expect(Object.keys(answer.headers).filter((name) => !allowed.has(name))).toEqual([]);
    });

    // An allow-list, not a deny-list (issue 57): a header the collector invents tomorrow stays back.
    it.each(
      Object.keys(INVENTED_ANSWER_HEADERS).flatMap((name) => [200, 302].map((status) => [name, status] as const)),
    )('passes no %s a collector invents to the shopper (a %i)', async (name, status) => {
      const answer = await send(`/iojs/general5/hostile/${status}/static_wdp.js`);
      expect(answer.headers[name]).toBeUndefined();
    });

    it("never opens the emulator's inspection path to a shopper: the front's address header closes it", async () => {
      // Held (issue 57): the doctor's view of what arrived is for this machine only.
      const answer = await send('/iojs/__bbc/last-request?marker=conformance');
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(answer.status).toBeLessThan(500);
      expect(answer.body).not.toMatch(/"headers"/);
    });

    it('passes the doctor: nothing leaks, and a POST and hostile paths are refused', async () => {
      // The doctor's marked requests go through the front and the stand-in to the emulator's
      // collector, which it then asks directly what arrived (src/doctor/leaks.ts, checks/refusals.ts).
      const report = await runDoctor(`${front.origin}/checkout`, { collectorUrl: emulator.collectorUrl });
      const ofTheFront = report.findings.filter((f) => /^(leak_|refuses_|set_cookie|dyn_)/.test(f.id));
      expect(ofTheFront.filter((f) => f.status === 'fail')).toEqual([]);
      expect(ofTheFront.filter((f) => f.status === 'pass').map((f) => f.id)).toEqual(
        expect.arrayContaining(['dyn_script', 'dyn_not_cached', ...FORWARDING_CHECKS]),
      );
    });

    it('answers a 5xx at once when the collector is down', async () => {
      const down = await start(`http://127.0.0.1:${(await freePort()) as number}`);
      try {
        const began = Date.now();
        const { status } = await rawRequest(down.origin, '/iojs/general5/SUB/static_wdp.js');
        expect([502, 503, 504]).toContain(status);
        // HAProxy tries a refused connection 3 times, a second apart.
        expect(Date.now() - began).toBeLessThan(8000);
      } finally {
        await down.stop();
      }
    }, 60_000);

    it('answers a 5xx within its time limit when the collector stalls', async () => {
      const began = Date.now();
      const answer = await send(`/iojs${STALL}`);
      expect([502, 504]).toContain(answer.status);
      // Each front's limit is 10 s; a front without one would wait for the test's own.
      expect(Date.now() - began).toBeLessThan(20_000);
    }, 60_000);
  });
}
