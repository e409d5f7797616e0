// Generated hostile input, over real sockets through the kit's Node adapter (toNodeHandler,
// src/server/adapter/node/handler.ts) against the emulator (fast-check): requests against the proxy, the
// endpoint, the callback receiver, the Node adapter and the emulator; answers against the
// proxy and the API client. Properties: the process goes on (an exception thrown out of an
// event callback fails this file as an unhandled error), every answer is a typed refusal or
// the right success, nothing reaches a host other than the collector, and unauthenticated
// requests leave the store as it was. Then the limits on what the emulator command reads
// (its port base, the values it prints) and on the addresses the doctor fetches.
// `npm test` runs a few hundred cases; `npm run fuzz` runs many more (FUZZ_RUNS).
import { createServer, request as httpRequest, type Server } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../../../src/emulator/index.js';
import { lineSafe, parsePortBase } from '../../../../src/emulator/cli-env.js';
import { nonPublicRange } from '../../../../src/doctor/addresses.js';
import {
  createCallbackHandler,
  createDeviceRiskClient,
  createDeviceRiskHandler,
  createFirstPartyProxy,
  createMemoryStore,
  createTokenSource,
  isDeviceRiskError,
  toNodeHandler,
  type FetchHandler,
  type Store,
} from '../../../../src/server/index.js';
import { checkoutFor, clientOn, handlerOn, SHOP, UA } from '../../../support/kit.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 60);
/** One generated case may take this long: a hang fails it, and fast-check shrinks it to the smallest that hangs. */
const RUN_TIMEOUT = 8000;
const CASE_TIMEOUT = 60_000 + RUNS * 200;

const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function listen(server: Server | ReturnType<typeof createTcpServer>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise((resolve) => {
        (server as Server).closeAllConnections?.();
        server.close(() => resolve());
      }),
  );
  return (server.address() as AddressInfo).port;
}

/** A handler on a real Node server (the kit's adapter). */
async function serve(handler: FetchHandler): Promise<number> {
  return listen(createServer(toNodeHandler(handler)));
}

/** Sends `text` as it is; resolves with what came back (possibly nothing) once the server closes or `ms` pass. */
function sendRaw(port: number, text: string | Uint8Array, ms = 2000): Promise<string> {
  return new Promise((resolve) => {
    let answer = '';
    const socket = connect(port, '127.0.0.1', () => socket.end(text));
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(done, ms);
    socket
      .on('data', (chunk) => (answer += chunk.toString('latin1')))
      .on('close', done)
      .on('error', done);
  });
}

/**
 * A request through node:http: the answer; undefined when node:http refused to send it (an
 * invalid method, path or header: the case is skipped) or the server closed the connection
 * before the answer ended (a body cut short is dropped, never passed on as whole). An answer
 * that does not end within the run's time limit fails the run.
 */
function send(
  port: number,
  init: { method: string; path: string; headers: Record<string, string>; body?: string },
): Promise<{ status: number; body: string; type: string } | undefined> {
  return new Promise((resolve) => {
    let req;
    try {
      req = httpRequest(
        { host: '127.0.0.1', port, method: init.method, path: init.path, headers: init.headers, agent: false },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c) => (body += c));
          res.on('end', () =>
            resolve({ status: res.statusCode!, body, type: String(res.headers['content-type'] ?? '') }),
          );
          res.on('close', () => resolve(undefined)); // after 'end', a no-op
        },
      );
    } catch {
      return resolve(undefined);
    }
    req.on('error', () => resolve(undefined));
    req.end(init.body);
  });
}

/** The heap's growth since the call, after a full collection (the unit project runs with --expose-gc). */
function heapFrom(): () => number {
  const collect = () => (globalThis as { gc?: () => void }).gc?.();
  collect();
  const before = process.memoryUsage().heapUsed;
  return () => {
    collect();
    return process.memoryUsage().heapUsed - before;
  };
}

/** Is the server still answering? */
async function alive(port: number): Promise<boolean> {
  return (await send(port, { method: 'GET', path: '/', headers: {} })) !== undefined;
}

const hostileChars = fc.constantFrom(
  '/',
  '.',
  '..',
  '%',
  '%2f',
  '%2e',
  '%00',
  '%25',
  ';',
  '\\',
  ':',
  '@',
  '?',
  '#',
  '//',
  'é',
  '\u2028',
  '*',
  '~',
  '&',
  '=',
  '+',
  ' ',
  'a',
  'Z',
  '0',
);
const hostilePath = fc.array(hostileChars, { maxLength: 12 }).map((parts) => parts.join(''));
const headerName = fc.constantFrom(
  'host',
  'origin',
  'content-type',
  'content-length',
  'cookie',
  'x-forwarded-for',
  'connection',
  'idempotency-key',
  'transfer-encoding',
  'referer',
  'x-real-ip',
  'accept-encoding',
  'te',
  'upgrade',
);
const headerValue = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom(
    SHOP,
    'application/json',
    'a b',
    '[::1]',
    'close, cookie',
    '0',
    '-1',
    '99999999999',
    '1.2.3.4.5',
    'gzip',
    'chunked',
    'k'.repeat(300),
  ),
);
// Framing headers (Content-Length, Transfer-Encoding) only in the raw-bytes case: through node:http a wrong one just stalls the exchange.
const headers = fc.dictionary(
  headerName.filter((name) => name !== 'content-length' && name !== 'transfer-encoding'),
  headerValue,
  { maxKeys: 6 },
);
const method = fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE');
const json = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v));
const body = fc.oneof(
  json,
  fc.string({ maxLength: 200 }),
  fc.constantFrom(
    '',
    '{',
    'null',
    '{"blackbox":null}',
    '{"outcome":{"outcome":"complete","scripts":[],"durationMs":1}}',
  ),
);

/** Node's own answer to a request its parser refused (before any handler): a bare 400. */
const parserRefusal = (answer: { status: number; body: string; type: string }) =>
  answer.status === 400 && answer.body === '' && answer.type === '';

/** An error answer of the kit: JSON `{ error: { code } }` with a status of 4xx or 5xx. */
function typedRefusal(answer: { status: number; body: string; type: string }): boolean {
  if (answer.status < 400 || answer.status > 599 || !/json/.test(answer.type)) return false;
  try {
    return typeof (JSON.parse(answer.body) as { error?: { code?: unknown } }).error?.code === 'string';
  } catch {
    return false;
  }
}

/** Generated requests to `path`: each answered `success`, a typed refusal or the parser's; a HEAD 400 or 405. */
function sendHostile(port: number, path: string, success: number): Promise<void> {
  return fc.assert(
    fc.asyncProperty(method, headers, body, async (m, h, b) => {
      const answer = await send(port, {
        method: m,
        path,
        headers: h,
        ...(m === 'GET' || m === 'HEAD' ? {} : { body: b }),
      });
      if (!answer) return;
      if (m === 'HEAD') {
        expect([400, 405]).toContain(answer.status); // a bad Host first, else the method
        return;
      }
      expect(
        answer.status === success || typedRefusal(answer) || parserRefusal(answer),
        `${m} ${JSON.stringify(h)} ${b} -> ${answer.status} ${answer.body}`,
      ).toBe(true);
    }),
    { numRuns: RUNS, timeout: RUN_TIMEOUT },
  );
}

describe('hostile requests', () => {
  let emulator: Emulator;
  beforeAll(async () => {
    emulator = await startEmulator({ accountRequestsPerSecond: 0 });
    closers.push(() => emulator.close());
  });

  it(
    "the proxy: a typed refusal or the collector's answer; nothing reaches another host, nothing leaves the base path",
    { timeout: CASE_TIMEOUT },
    async () => {
      const collectorPaths: string[] = [];
      const collectorPort = await listen(
        createServer((req, res) => {
          collectorPaths.push(req.url ?? '');
          res.writeHead(200, { 'content-type': 'text/javascript' }).end('void 0;');
        }),
      );
      let elsewhere = 0;
      const otherPort = await listen(
        createServer((_, res) => {
          elsewhere++;
          return res.end();
        }),
      );
      const port = await serve(
        createFirstPartyProxy({
          collectorUrl: `http://127.0.0.1:${collectorPort}/base/`,
          methods: ['GET', 'HEAD', 'POST'],
        }),
      );
      await fc.assert(
        fc.asyncProperty(method, hostilePath, headers, body, async (m, path, h, b) => {
          const target = `/iojs/${path}`.replace(/[#\s]/g, (c) => encodeURIComponent(c));
          // A Host naming the other server must not send anything there.
          const answer = await send(port, {
            method: m,
            path: target,
            headers: { ...h, ...(h.host === 'a' ? { host: `127.0.0.1:${otherPort}` } : {}) },
            ...(m === 'GET' || m === 'HEAD' ? {} : { body: b }),
          });
          if (!answer) return;
          // A HEAD answer has no body to read its code from.
          const ok =
            answer.status === 200 ||
            typedRefusal(answer) ||
            parserRefusal(answer) ||
            (m === 'HEAD' && answer.status >= 400);
          expect(ok, `${m} ${target} -> ${answer.status} ${answer.body.slice(0, 80)}`).toBe(true);
        }),
        { numRuns: RUNS, timeout: RUN_TIMEOUT },
      );
      expect(elsewhere).toBe(0);
      for (const path of collectorPaths) {
        expect(path.startsWith('/base/')).toBe(true);
        expect(decodeURIComponent(decodeURIComponent(path.split('?')[0]!)).split('/')).not.toContain('..');
      }
      expect(await alive(port)).toBe(true);
    },
  );

  it(
    'the endpoint: a typed refusal or 200/202; requests refused before the customer write nothing to the store',
    { timeout: CASE_TIMEOUT },
    async () => {
      const heapGrowth = heapFrom();
      const memory = createMemoryStore();
      let writes = 0;
      const store: Store = {
        ...memory,
        set: (...a) => {
          writes++;
          return memory.set(...a);
        },
        setIfAbsent: (...a) => {
          writes++;
          return memory.setIfAbsent(...a);
        },
        compareAndSet: (...a) => {
          writes++;
          return memory.compareAndSet(...a);
        },
      };
      const port = await serve(
        handlerOn(emulator, {
          client: { retrievalBaseUrl: emulator.retrievalUrl, maxAttempts: 1 },
          store,
          // Nobody is signed in: every request is refused here, after the body was read.
          resolveCustomer: () =>
            new Response('{"error":{"code":"signed_out"}}', {
              status: 401,
              headers: { 'content-type': 'application/json' },
            }),
        }),
      );
      await sendHostile(port, '/device-risk', 202);
      expect(writes).toBe(0);
      expect(emulator.inspect.requests('accountCreate')).toBe(0);
      expect(heapGrowth()).toBeLessThan(64 * 1024 * 1024); // memory stays bounded: nothing kept per request
      expect(await alive(port)).toBe(true);
    },
  );

  it(
    'the callback receiver: a typed refusal or 200; never a call for a malformed body',
    { timeout: CASE_TIMEOUT },
    async () => {
      let results = 0;
      const client = clientOn(emulator, { retrievalBaseUrl: emulator.retrievalUrl, maxAttempts: 1 });
      const handler = createCallbackHandler({ client, allowedSources: ['127.0.0.1'], onResult: () => void results++ });
      closers.push(async () => handler.close());
      const port = await serve(handler);
      await sendHostile(port, '/callback', 200);
      await handler.idle();
      expect(results).toBe(0); // no generated body names a real execution on the retrieval host
      expect(await alive(port)).toBe(true);
    },
  );

  it(
    'the Node adapter and the emulator: raw bytes, whatever they hold, never end the process',
    { timeout: CASE_TIMEOUT },
    async () => {
      const adapterPort = await serve(
        async (request) =>
          new Response(`${request.method} ${new URL(request.url).pathname} ${(await request.text()).length}`),
      );
      const emulatorPorts = [
        emulator.accountUrl,
        emulator.apiUrl,
        emulator.tokenUrl,
        emulator.retrievalUrl,
        emulator.collectorUrl,
        emulator.loaderUrl,
      ].map((url) => Number(new URL(url).port));
      const line = fc.tuple(
        fc.oneof(method, fc.string({ maxLength: 8 })),
        fc.oneof(
          hostilePath.map((p) => '/' + p),
          fc.string({ maxLength: 30 }),
        ),
        fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2', 'HTTP/9.9', ''),
      );
      const rawHeaders = fc.array(
        fc.tuple(
          fc.oneof(headerName, fc.string({ maxLength: 10 })),
          fc.oneof(headerValue, fc.string({ maxLength: 20 })),
        ),
        { maxLength: 6 },
      );
      await fc.assert(
        fc.asyncProperty(
          line,
          rawHeaders,
          fc.string({ maxLength: 100 }),
          fc.constantFrom(adapterPort, ...emulatorPorts),
          async ([m, path, version], h, b, port) => {
            const text = `${m} ${path} ${version}\r\n${h.map(([n, v]) => `${n}: ${v}`).join('\r\n')}\r\nconnection: close\r\n\r\n${b}`;
            const answer = await sendRaw(port, text, 1000);
            // Answered with HTTP, or closed by the parser: never a crash.
            if (answer) expect(answer.startsWith('HTTP/1.1 ')).toBe(true);
          },
        ),
        { numRuns: RUNS, timeout: RUN_TIMEOUT },
      );
      for (const port of [adapterPort, ...emulatorPorts]) expect(await alive(port)).toBe(true);
    },
  );
});

describe('hostile answers', () => {
  /** A TCP server answering each request with what `answer` returns for it, as raw bytes. */
  async function rawServer(answer: () => { head: string; body: string; split: boolean }): Promise<number> {
    const server = createTcpServer((socket) => {
      socket.on('error', () => {});
      socket.once('data', () => {
        const { head, body, split } = answer();
        if (split) {
          socket.write(head);
          setTimeout(() => socket.end(body), 5);
        } else socket.end(head + body);
      });
    });
    return listen(server);
  }

  const statusLine = fc.oneof(
    fc.integer({ min: 0, max: 1200 }).map((code) => `HTTP/1.1 ${code} X`),
    fc.constantFrom(
      'HTTP/1.1 200 O\x01K',
      'HTTP/1.1 200',
      'HTTP/1.0 204 No',
      'HTTP/1.1 101 Switching',
      'HTTP/1.1 999 X',
      'HTTP/2 200 OK',
      'garbage',
      '',
    ),
    fc
      .tuple(fc.integer({ min: 100, max: 999 }), fc.string({ maxLength: 20 }))
      .map(([code, reason]) => `HTTP/1.1 ${code} ${reason}`),
  );
  const answerHeaders = fc.array(
    fc.tuple(
      fc.constantFrom(
        'Content-Type',
        'Content-Length',
        'Transfer-Encoding',
        'Content-Encoding',
        'Set-Cookie',
        'Cache-Control',
        'Connection',
        'Location',
        'Retry-After',
        'X-Odd',
      ),
      fc.oneof(
        fc.string({ maxLength: 30 }),
        fc.constantFrom(
          'gzip',
          'br',
          'chunked',
          '5',
          '-1',
          '99999',
          'text/javascript',
          'application/json',
          'a=b; Path=/../..',
          '1e9',
          'Mon, 01 Jan 3000 00:00:00 GMT',
        ),
      ),
    ),
    { maxLength: 6 },
  );
  const answer = fc.record({
    status: statusLine,
    headers: answerHeaders,
    body: fc.oneof(fc.string({ maxLength: 200 }), json),
    split: fc.boolean(),
  });
  const toRaw = (a: { status: string; headers: Array<[string, string]>; body: string; split: boolean }) => ({
    head: `${a.status}\r\n${a.headers.map(([n, v]) => `${n}: ${v}`).join('\r\n')}\r\n\r\n`,
    body: a.body,
    split: a.split,
  });
  /** A raw server that answers as it was last told (a bare 200 at first): its port. */
  const scripted = async () => {
    let current = toRaw({ status: 'HTTP/1.1 200 OK', headers: [], body: '', split: false });
    const port = await rawServer(() => current);
    return { port, answerWith: (a: Parameters<typeof toRaw>[0]) => void (current = toRaw(a)) };
  };

  it(
    'the proxy: whatever the collector answers, the browser gets an answer or a closed connection, never a crash',
    { timeout: CASE_TIMEOUT },
    async () => {
      const { port: collectorPort, answerWith } = await scripted();
      const port = await serve(
        createFirstPartyProxy({ collectorUrl: `http://127.0.0.1:${collectorPort}/`, timeoutMs: 2000 }),
      );
      await fc.assert(
        fc.asyncProperty(answer, async (a) => {
          answerWith(a);
          const got = await send(port, { method: 'GET', path: '/iojs/general5/static_wdp.js', headers: {} });
          // The collector's own answer passed on, the proxy's typed refusal, or a connection closed.
          const sent = Number(/^HTTP\/1\.[01] (\d{3})\b/.exec(a.status)?.[1]);
          if (got)
            expect(got.status === sent || typedRefusal(got), `${JSON.stringify(a)} -> ${got.status} ${got.body}`).toBe(
              true,
            );
        }),
        { numRuns: RUNS, timeout: RUN_TIMEOUT },
      );
      expect(await alive(port)).toBe(true);
    },
  );

  it(
    'the API client: whatever the service answers, a typed DeviceRiskError or a transaction, never a crash',
    { timeout: CASE_TIMEOUT },
    async () => {
      const { port: apiPort, answerWith } = await scripted();
      const tokenPort = await rawServer(() => ({
        head: 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n',
        body: '{"access_token":"at","token_type":"Bearer","expires_in":3600}',
        split: false,
      }));
      const tokenSource = createTokenSource({
        clientId: 'id',
        clientSecret: 'secret',
        tokenUrl: `http://127.0.0.1:${tokenPort}/oauth2/token`,
        userAgent: UA,
        store: createMemoryStore(),
      });
      const client = createDeviceRiskClient({
        tokenSource,
        baseUrl: `http://127.0.0.1:${apiPort}`,
        retrievalBaseUrl: `http://127.0.0.1:${apiPort}`,
        userAgent: UA,
        maxAttempts: 1,
        timeoutMs: 2000,
        accountTimeoutMs: 2000,
      });
      await fc.assert(
        fc.asyncProperty(answer, async (a) => {
          answerWith(a);
          try {
            const tx = await client.createAccount({
              customerInternalReference: 'order-1',
              workflowDefinition: { key: 10020 },
            });
            expect(tx.workflowExecutionId).toEqual(expect.any(String));
          } catch (error) {
            expect(isDeviceRiskError(error), String(error)).toBe(true);
          }
        }),
        { numRuns: RUNS, timeout: RUN_TIMEOUT },
      );
    },
  );
});

describe('the limits on what a command reads and where the doctor goes', () => {
  it(
    'EMULATOR_PORT_BASE: accepted if and only if plain decimal digits naming 1 to 65530, as that number',
    { timeout: CASE_TIMEOUT },
    () => {
      const digits = fc.stringMatching(/^\d{1,7}$/);
      const written = fc.oneof(
        digits,
        fc.integer({ min: -10, max: 70_000 }).map(String),
        fc
          .tuple(digits, fc.constantFrom(' ', '+', '-', '0x', '\t', '\n', '.0', 'e0', 'e3', '_', '１'))
          .chain(([n, bit]) => fc.constantFrom(bit + n, n + bit, bit + n + bit)),
        fc.integer({ min: 1, max: 65_530 }).map((n) => n.toString(16)),
        fc.string(),
      );
      fc.assert(
        fc.property(written, (text) => {
          const parsed = parsePortBase(text);
          const valid = /^\d+$/.test(text) && Number(text) >= 1 && Number(text) <= 65_530;
          expect('base' in parsed, text).toBe(valid);
          if ('base' in parsed) expect(parsed.base).toBe(Number(text));
          else expect(parsed.error).toMatch(/^EMULATOR_PORT_BASE must /);
        }),
        { numRuns: RUNS * 20 },
      );
    },
  );

  it(
    'an --env value: accepted if and only if it holds no control character or line break',
    { timeout: CASE_TIMEOUT },
    () => {
      fc.assert(
        fc.property(
          // Code points up to the line separators, the control ranges often.
          fc
            .array(fc.oneof(fc.integer({ min: 0, max: 0xa0 }), fc.integer({ min: 0, max: 0x2030 })), { maxLength: 24 })
            .map((codes) => String.fromCodePoint(...codes)),
          (value) => {
            const breaks = [...value].some((c) => {
              const code = c.codePointAt(0)!;
              return code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029;
            });
            expect(lineSafe('X', value) !== undefined).toBe(breaks);
            if (breaks) expect(lineSafe('X', value)).not.toContain(value);
          },
        ),
        { numRuns: RUNS * 5 },
      );
    },
  );

  // An independent reading of the ranges: numbers and prefix masks, not the module's parser.
  const V4: Array<[number, number]> = [
    [0x00000000, 8],
    [0x0a000000, 8],
    [0x64400000, 10],
    [0x7f000000, 8],
    [0xa9fe0000, 16],
    [0xac100000, 12],
    [0xc0000000, 24],
    [0xc0a80000, 16],
    [0xc6120000, 15],
    [0xa83f8110, 32],
    [0xe0000000, 4],
    [0xf0000000, 4],
  ];
  const v4NonPublic = (bytes: number[]) => {
    const n = ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0;
    return V4.some(([first, length]) => n >>> (32 - length) === first >>> (32 - length));
  };
  const V6: Array<[bigint, number]> = [
    [0n, 128],
    [1n, 128],
    [0xfe80n << 112n, 10],
    [0xfec0n << 112n, 10],
    [0xfc00n << 112n, 7],
    [0xff00n << 112n, 8],
  ];
  const v6NonPublic = (groups: number[]) => {
    const n = groups.reduce((sum, group) => (sum << 16n) | BigInt(group), 0n);
    const low32 = Number(n & 0xffffffffn);
    const v4 = [low32 >>> 24, (low32 >>> 16) & 255, (low32 >>> 8) & 255, low32 & 255];
    if (n >> 32n === 0xffffn || (n >> 32n === 0n && n > 1n) || n >> 32n === 0x64ff9bn << 64n) return v4NonPublic(v4);
    return V6.some(([first, length]) => n >> BigInt(128 - length) === first >> BigInt(128 - length));
  };
  const byte = fc.integer({ min: 0, max: 255 });
  const group = fc.integer({ min: 0, max: 0xffff });
  // Addresses near the ranges' edges as well as anywhere.
  const ipv4 = fc.oneof(
    fc.tuple(byte, byte, byte, byte),
    fc.tuple(fc.constantFrom(0, 10, 100, 127, 168, 169, 172, 192, 198, 224, 239, 240, 255), byte, byte, byte),
  );
  const ipv6 = fc.oneof(
    fc.array(group, { minLength: 8, maxLength: 8 }),
    fc
      .tuple(fc.constantFrom(0, 0x64, 0xfc00, 0xfd00, 0xfe80, 0xfebf, 0xfec0, 0xff02, 0x2001), group)
      .chain(([first, second]) =>
        fc
          .array(fc.constantFrom(0, 0, 0, 1, 0xffff, 0xff9b), { minLength: 6, maxLength: 6 })
          .map((rest) => [first, second, ...rest]),
      ),
    fc
      .tuple(fc.constantFrom([0, 0, 0, 0, 0, 0xffff], [0, 0, 0, 0, 0, 0], [0x64, 0xff9b, 0, 0, 0, 0]), group, group)
      .map(([head, a, b]) => [...head, a, b]),
  );

  it(
    'IPv4: non-public as the ranges say, and the same in every IPv6 form that carries it',
    { timeout: CASE_TIMEOUT },
    () => {
      fc.assert(
        fc.property(ipv4, fc.boolean(), (bytes, upper) => {
          const dotted = bytes.join('.');
          const expected = v4NonPublic(bytes);
          expect(nonPublicRange(dotted) !== undefined, dotted).toBe(expected);
          const high = ((bytes[0]! << 8) | bytes[1]!).toString(16);
          const low = ((bytes[2]! << 8) | bytes[3]!).toString(16);
          for (const mapped of [
            `::ffff:${dotted}`,
            `::ffff:${high}:${low}`,
            `0:0:0:0:0:ffff:${dotted}`,
            `[::ffff:${dotted}]`,
          ]) {
            const form = upper ? mapped.toUpperCase() : mapped;
            expect(nonPublicRange(form) !== undefined, form).toBe(expected);
            // As a URL writes it: what the doctor reads from a page.
            const host = new URL(`http://[${mapped.replace(/^\[|\]$/g, '')}]/`).hostname;
            expect(nonPublicRange(host) !== undefined, host).toBe(expected);
          }
        }),
        { numRuns: RUNS * 20 },
      );
    },
  );

  it(
    'IPv6: non-public as the ranges say, written in full, compressed or as a URL writes it',
    { timeout: CASE_TIMEOUT },
    () => {
      fc.assert(
        fc.property(ipv6, (groups) => {
          const full = groups.map((g) => g.toString(16)).join(':');
          const expected = v6NonPublic(groups);
          expect(nonPublicRange(full) !== undefined, full).toBe(expected);
          const compressed = new URL(`http://[${full}]/`).hostname;
          expect(nonPublicRange(compressed) !== undefined, compressed).toBe(expected);
          expect(nonPublicRange(full.toUpperCase()) !== undefined).toBe(expected);
        }),
        { numRuns: RUNS * 20 },
      );
    },
  );
});

describe('generated traffic against the admission limits', () => {
  it('no source is ever admitted more than its burst plus the refill of the time elapsed', async () => {
    const { createLimiter } = await import('../../../../src/server/endpoint/admission.js');
    fc.assert(
      fc.property(
        fc.record({ burst: fc.integer({ min: 1, max: 20 }), perMinute: fc.integer({ min: 1, max: 600 }) }),
        fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c', 'd'), fc.integer({ min: 0, max: 30_000 })), {
          maxLength: 300,
        }),
        fc.integer({ min: 1, max: 4 }),
        (limit, steps, maxSources) => {
          let clock = 0;
          const limiter = createLimiter(limit, () => clock, maxSources);
          const admitted = new Map<string, number>();
          for (const [source, advance] of steps) {
            clock += advance;
            const wait = limiter.take(source);
            expect(Number.isInteger(wait) && wait >= 0).toBe(true);
            if (wait === 0) admitted.set(source, (admitted.get(source) ?? 0) + 1);
          }
          // A forgotten source comes back with a full bucket: each forgetting can add one burst.
          const forgettings = maxSources >= 4 ? 0 : steps.length;
          for (const count of admitted.values())
            expect(count).toBeLessThanOrEqual(
              limit.burst * (1 + forgettings) + (clock * limit.perMinute) / 60_000 + 1e-9,
            );
        },
      ),
      { numRuns: RUNS * 5 },
    );
  });

  it(
    'generated checkouts from a few addresses and customers: never more creates than the buckets allow, every refusal a typed 429 with Retry-After',
    async () => {
      const { stubClient } = await import('../../../support/stub-client.js');
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 3 })), {
            minLength: 1,
            maxLength: 40,
          }),
          async (posts) => {
            const { client, creates } = stubClient();
            const handler = createDeviceRiskHandler({
              answer: 'checked',
              client,
              allowedOrigins: [SHOP],
              workflowKey: 1,
              resolveCustomer: (request) => ({ customerInternalReference: request.headers.get('x-customer')! }),
              checkoutsPerAddress: { burst: 3, perMinute: 1 },
              checkoutsPerCustomer: { burst: 2, perMinute: 1 },
              onError: () => {},
            });
            let n = 0;
            for (const [address, customer] of posts) {
              const answer = await handler(
                checkoutFor(`fuzz-key-${++n}`, { headers: { 'x-customer': `c${customer}` } }),
                {
                  clientAddress: `192.0.2.${address}`,
                },
              );
              if (answer.status !== 200) {
                expect(answer.status).toBe(429);
                expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('too_many_checkouts');
                expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
              }
            }
            const addresses = new Set(posts.map(([a]) => a)).size;
            const customers = new Set(posts.map(([, c]) => c)).size;
            expect(creates()).toBeLessThanOrEqual(Math.min(3 * addresses, 2 * customers));
          },
        ),
        { numRuns: RUNS, timeout: RUN_TIMEOUT },
      );
    },
    CASE_TIMEOUT,
  );
});
