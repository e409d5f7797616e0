// The proxy's Node upstream (node:http behind a fetch-like surface), against a real local
// server: what it sends, how it answers, decoding, aborts and connection reuse.
import { randomBytes } from 'node:crypto';
import { getEventListeners } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { headersOf, nodeUpstream } from '../../../../src/server/adapter/node/upstream.js';
import { standFor } from '../../../../src/server/net/direct-body.js';
import { takeNodeBody } from '../../../../src/server/adapter/node/body.js';
import { writeResponse } from '../../../../src/server/adapter/node/response.js';
import { closeServers, listening, serve } from '../../../support/http.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
  await closeServers();
});

interface Seen {
  method: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A local upstream answering with `answer`; records each request and each new connection. */
async function upstream(answer: (request: IncomingMessage, response: ServerResponse) => void) {
  const seen: Seen[] = [];
  let connections = 0;
  const server = createServer((request, response) => {
    let body = '';
    request
      .on('data', (chunk) => (body += chunk))
      .on('end', () => {
        seen.push({ method: request.method!, headers: request.headers, body });
        answer(request, response);
      });
  });
  server.on('connection', () => connections++);
  const origin = await listening(server);
  return { url: (path = '/x') => new URL(`${origin}${path}`), seen, connections: () => connections };
}

const init = (extra: Partial<Parameters<typeof nodeUpstream>[1]> = {}) => ({
  method: 'GET',
  headers: new Headers(),
  signal: new AbortController().signal,
  ...extra,
});

describe('nodeUpstream', () => {
  it('sends the headers given, asks for identity, and a body with its Content-Length', async () => {
    const server = await upstream((_, response) => response.end('ok'));
    const body = new TextEncoder().encode('{"a":"é"}');
    const response = await nodeUpstream(
      server.url(),
      init({ method: 'POST', headers: new Headers({ 'x-test': '1', 'accept-encoding': 'gzip, br' }), body }),
    );
    expect(await response.text()).toBe('ok');
    expect(server.seen[0]).toMatchObject({ method: 'POST', body: '{"a":"é"}' });
    expect(server.seen[0]!.headers).toMatchObject({
      'x-test': '1',
      'accept-encoding': 'identity',
      'content-length': String(body.byteLength),
    });
    expect(server.seen[0]!.headers['transfer-encoding']).toBeUndefined();
  });

  it('answers status, status text and every header, repeated ones too, and nothing else', async () => {
    const server = await upstream((_, response) => {
      response.writeHead(418, 'Short And Stout', [
        ['set-cookie', 'a=1'],
        ['set-cookie', 'b=2'],
        ['x-one', 'v'],
      ]);
      response.end('tea');
    });
    const response = await nodeUpstream(server.url(), init());
    expect([response.status, response.statusText]).toEqual([418, 'Short And Stout']);
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(response.headers.get('x-one')).toBe('v');
    expect([...response.headers.keys()].filter((k) => k === 'undefined')).toEqual([]);
    expect(await response.text()).toBe('tea');
  });

  it.each([
    ['HEAD', 'HEAD', 200],
    ['a 204', 'GET', 204],
    ['a 304', 'GET', 304],
  ])('%s has no body, and the connection is free again', async (_, method, status) => {
    const server = await upstream((_, response) => {
      response.writeHead(status, { 'content-length': '5' });
      response.end(method === 'HEAD' || status !== 200 ? undefined : 'hello');
    });
    const response = await nodeUpstream(server.url(), init({ method }));
    expect(response.status).toBe(status);
    expect(response.body).toBeNull();
    const again = await nodeUpstream(server.url(), init());
    expect(again.status).toBe(status);
    expect(server.connections()).toBe(1);
  });

  it.each([
    ['gzip', gzipSync],
    ['x-gzip', gzipSync],
    ['GZIP', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ])('a %s body is decoded, without its Content-Encoding and Content-Length', async (encoding, compress) => {
    const packed = compress(Buffer.from('console.log("first party")'));
    const server = await upstream((_, response) => {
      response.writeHead(200, {
        'content-encoding': encoding,
        'content-length': String(packed.length),
        'content-type': 'text/javascript',
      });
      response.end(packed);
    });
    const response = await nodeUpstream(server.url(), init());
    expect(await response.text()).toBe('console.log("first party")');
    expect(response.headers.get('content-encoding')).toBeNull();
    expect(response.headers.get('content-length')).toBeNull();
    expect(response.headers.get('content-type')).toBe('text/javascript');
  });

  it('an encoding it does not know is passed on as it came, with its headers', async () => {
    const server = await upstream((_, response) => {
      response.writeHead(200, { 'content-encoding': 'zstd', 'content-length': '4' });
      response.end('abcd');
    });
    const response = await nodeUpstream(server.url(), init());
    expect(response.headers.get('content-encoding')).toBe('zstd');
    expect(response.headers.get('content-length')).toBe('4');
    expect(await response.text()).toBe('abcd');
  });

  it('a body that says gzip and is not fails when read, instead of hanging', async () => {
    const server = await upstream((_, response) => {
      response.writeHead(200, { 'content-encoding': 'gzip' });
      response.end('not gzip at all');
    });
    const response = await nodeUpstream(server.url(), init());
    await expect(response.text()).rejects.toThrow();
  });

  it('a body that fails to decode before anyone reads it fails that body alone, not the process', async () => {
    const server = await upstream((_, response) => {
      response.writeHead(200, { 'content-encoding': 'gzip' });
      response.end(gzipSync('console.log(1)').subarray(0, 12)); // the stream ends inside the header
    });
    const response = await nodeUpstream(server.url(), init());
    // Only a 'close' listener: an 'error' the body emits with nobody listening would end the process.
    const { source } = takeNodeBody(response.body!)!;
    if (!source.destroyed) await new Promise((resolve) => source.once('close', resolve));
    expect(source.errored).toMatchObject({ code: 'Z_BUF_ERROR' });
  });

  it('a body that failed before the Node adapter took it: the connection is dropped, no hang', async () => {
    const server = await upstream((_, response) => {
      response.writeHead(200, { 'content-encoding': 'gzip' });
      response.end('not gzip at all');
    });
    const answer = await nodeUpstream(server.url(), init());
    const { source } = takeNodeBody(answer.body!)!;
    if (!source.destroyed) await new Promise((resolve) => source.once('close', resolve));
    // The adapter is handed a body whose Node stream has failed already.
    const failed = new ReadableStream();
    standFor(failed, { source, done: () => {} });
    const site = await serve((_, res) => void writeResponse(new Response(failed), res));
    await expect(fetch(site).then((r) => r.text())).rejects.toThrow();
  });

  it('a compressed body cut off by the upstream fails when read, instead of hanging', async () => {
    const packed = gzipSync(randomBytes(200_000)); // incompressible: the first 1000 bytes are a small part
    const server = await upstream((request, response) => {
      response.writeHead(200, { 'content-encoding': 'gzip', 'content-length': String(packed.length) });
      response.write(packed.subarray(0, 1000), () => setTimeout(() => request.socket.destroy(), 20));
    });
    const response = await nodeUpstream(server.url(), init());
    await expect(response.text()).rejects.toThrow();
  });

  it('an aborted signal rejects with its reason before anything is sent', async () => {
    const server = await upstream((_, response) => response.end());
    const reason = new Error('gone');
    await expect(nodeUpstream(server.url(), init({ signal: AbortSignal.abort(reason) }))).rejects.toBe(reason);
    expect(server.seen).toEqual([]);
  });

  it('an abort in flight ends the request with the reason, or an Error when the reason is none', async () => {
    const server = await upstream(() => {}); // never answers
    const controller = new AbortController();
    const reason = new Error('time limit');
    const pending = nodeUpstream(server.url(), init({ signal: controller.signal }));
    await new Promise((r) => setTimeout(r, 30));
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    const other = new AbortController();
    const second = nodeUpstream(server.url(), init({ signal: other.signal }));
    await new Promise((r) => setTimeout(r, 30));
    other.abort('a string');
    await expect(second).rejects.toThrow('aborted');
  });

  it('a finished request leaves no listener on a long-lived signal', async () => {
    const server = await upstream((_, response) => response.end('ok'));
    const controller = new AbortController();
    for (let i = 0; i < 3; i++)
      expect(await (await nodeUpstream(server.url(), init({ signal: controller.signal }))).text()).toBe('ok');
    await new Promise((r) => setTimeout(r, 20)); // 'close' comes after the body
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('an answer without a status text has an empty one', async () => {
    const server = await upstream((request, response) => {
      // A raw status line with no reason phrase.
      request.socket.end('HTTP/1.1 200\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok');
      void response;
    });
    const response = await nodeUpstream(server.url(), init());
    expect([response.status, response.statusText, await response.text()]).toEqual([200, '', 'ok']);
  });

  it('requests to one origin share a kept-alive connection', async () => {
    const server = await upstream((_, response) => response.end('ok'));
    for (let i = 0; i < 3; i++) expect(await (await nodeUpstream(server.url(`/x${i}`), init())).text()).toBe('ok');
    expect(server.connections()).toBe(1);
  });

  it('an https address is spoken to with TLS', async () => {
    const first = new Promise<number>((resolve) => {
      const tcp = createTcpServer((socket) =>
        socket.once('data', (data) => {
          resolve(data[0]!);
          socket.destroy();
        }),
      );
      tcp.listen(0, '127.0.0.1', () => {
        const { port } = tcp.address() as AddressInfo;
        // A request that fails before sending anything answers -1 (and fails the test at once).
        nodeUpstream(new URL(`https://127.0.0.1:${port}/`), init()).catch(() => resolve(-1));
      });
      closers.push(() => new Promise((r) => tcp.close(() => r())));
    });
    expect(await first).toBe(0x16); // a TLS handshake record
  });
});

describe('a kept-alive socket the collector closed as it was reused', () => {
  /** A collector that resets its first connection at that connection's second request (a keep-alive race), and answers every other. */
  async function racingCollector() {
    let connections = 0;
    const sockets = new Set<import('node:net').Socket>();
    const server = createTcpServer((socket) => {
      sockets.add(socket);
      const connection = ++connections;
      let requests = 0;
      socket.on('error', () => {});
      socket.on('data', () => {
        requests++;
        if (connection === 1 && requests === 2) return void socket.resetAndDestroy();
        socket.write(
          'HTTP/1.1 200 OK\r\nContent-Type: text/javascript\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok',
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(
      () =>
        new Promise((resolve) => {
          sockets.forEach((socket) => socket.destroy());
          return server.close(() => resolve());
        }),
    );
    const { port } = server.address() as AddressInfo;
    return { url: (path: string) => new URL(`http://127.0.0.1:${port}${path}`), connections: () => connections };
  }

  it('a GET is sent again once, on a new socket', async () => {
    const collector = await racingCollector();
    expect(await (await nodeUpstream(collector.url('/race-get/a'), init())).text()).toBe('ok');
    expect(await (await nodeUpstream(collector.url('/race-get/b'), init())).text()).toBe('ok');
    expect(collector.connections()).toBe(2);
  });

  it('a POST is not: the failure is the answer', async () => {
    const collector = await racingCollector();
    const body = new TextEncoder().encode('x');
    expect(await (await nodeUpstream(collector.url('/race-post/a'), init({ method: 'POST', body }))).text()).toBe('ok');
    await expect(nodeUpstream(collector.url('/race-post/b'), init({ method: 'POST', body }))).rejects.toMatchObject({
      code: 'ECONNRESET',
    });
    expect(collector.connections()).toBe(1);
  });
});

describe('the answer headers', () => {
  it('are taken as sent, from rawHeaders (case and repeats kept)', () => {
    const headers = headersOf({
      rawHeaders: ['Content-Type', 'text/javascript', 'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2'],
      headers: { 'content-type': 'ignored' },
    });
    expect([headers.get('content-type'), headers.getSetCookie()]).toEqual(['text/javascript', ['a=1', 'b=2']]);
  });

  it("are taken from the parsed headers where rawHeaders is empty (workerd's node:http)", () => {
    const headers = headersOf({
      rawHeaders: [],
      headers: {
        'content-type': 'text/javascript',
        'set-cookie': ['a=1', 'b=2'],
        'cache-control': 'max-age=60',
        age: undefined,
      },
    });
    expect([...headers]).toEqual([
      ['cache-control', 'max-age=60'],
      ['content-type', 'text/javascript'],
      ['set-cookie', 'a=1'],
      ['set-cookie', 'b=2'],
    ]);
  });
});
