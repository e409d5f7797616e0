// The Node adapter's parts on fake Node objects: what writeResponse writes, and how
// toRequest reads a request's method, scheme and a body a parser already read.
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { toRequest } from '../../../../src/server/adapter/node/request.js';
import { writeResponse } from '../../../../src/server/adapter/node/response.js';

/** A ServerResponse that records what is written to it. */
function fakeResponse() {
  const written: { status?: number; headers?: Record<string, unknown>; chunks: string[]; ended: boolean } = {
    chunks: [],
    ended: false,
  };
  const res = Object.assign(new EventEmitter(), {
    writableFinished: false,
    headersSent: false,
    writeHead(status: number, _text: string, headers: Record<string, unknown>) {
      written.status = status;
      written.headers = headers;
      return res;
    },
    write(chunk: Uint8Array) {
      written.chunks.push(new TextDecoder().decode(chunk));
      return true;
    },
    end() {
      written.ended = true;
    },
    destroy() {},
  });
  return { res: res as unknown as ServerResponse, written };
}

/** An IncomingMessage as a parser left it. */
function fakeRequest(fields: Record<string, unknown>): IncomingMessage {
  return Object.assign(new EventEmitter(), {
    method: 'POST',
    url: '/x',
    headers: { host: 'shop.test' },
    rawHeaders: ['Host', 'shop.test'],
    socket: {},
    readableEnded: true,
    ...fields,
  }) as unknown as IncomingMessage;
}

describe('writeResponse', () => {
  it('writes each Set-Cookie as its own line, the other headers as they are, and the body', async () => {
    const { res, written } = fakeResponse();
    const headers = new Headers({ 'content-type': 'text/plain', 'x-one': '1' });
    headers.append('set-cookie', 'a=1; Path=/iojs');
    headers.append('set-cookie', 'b=2; Path=/iojs');
    await writeResponse(new Response('body', { status: 201, headers }), res);
    expect(written.status).toBe(201);
    expect(written.headers).toEqual({
      'content-type': 'text/plain',
      'x-one': '1',
      'set-cookie': ['a=1; Path=/iojs', 'b=2; Path=/iojs'],
    });
    expect(written.chunks.join('')).toBe('body');
    expect(written.ended).toBe(true);
  });

  it('no Set-Cookie header at all when the answer has none', async () => {
    const { res, written } = fakeResponse();
    await writeResponse(new Response('x', { headers: { 'content-type': 'text/plain' } }), res);
    expect(written.headers).not.toHaveProperty('set-cookie');
  });

  it('HEAD: the headers and no body; GET by default writes it', async () => {
    const head = fakeResponse();
    await writeResponse(new Response('not sent'), head.res, 'HEAD');
    expect(head.written.chunks).toEqual([]);
    expect(head.written.ended).toBe(true);
    const get = fakeResponse();
    await writeResponse(new Response('sent'), get.res);
    expect(get.written.chunks.join('')).toBe('sent');
  });
});

describe('toRequest', () => {
  it('https for an encrypted socket, http otherwise', () => {
    const { res } = fakeResponse();
    expect(toRequest(fakeRequest({ method: 'GET', socket: { encrypted: true } }), res).url).toBe('https://shop.test/x');
    expect(toRequest(fakeRequest({ method: 'GET' }), res).url).toBe('http://shop.test/x');
  });

  it('refuses CONNECT, TRACE and TRACK only, as whole method names', () => {
    const { res } = fakeResponse();
    for (const method of ['CONNECT', 'trace', 'TRACK'])
      expect(() => toRequest(fakeRequest({ method }), res)).toThrow(expect.objectContaining({ status: 405 }));
    for (const method of ['XTRACE', 'TRACEX', 'PATCH'])
      expect(toRequest(fakeRequest({ method, body: 'x', _body: true }), res).method).toBe(method);
  });

  it('a body a parser read: bytes as they were, a form re-encoded, JSON re-serialised', async () => {
    const { res } = fakeResponse();
    const read = (body: unknown, type: string) =>
      toRequest(fakeRequest({ body, _body: true, headers: { host: 'shop.test', 'content-type': type } }), res).text();
    expect(await read(new TextEncoder().encode('raw bytes'), 'application/octet-stream')).toBe('raw bytes');
    expect(await read({ a: '1', b: 'x y' }, 'application/x-www-form-urlencoded; charset=utf-8')).toBe('a=1&b=x+y');
    expect(await read({ blackbox: '0400+' }, 'application/json')).toBe('{"blackbox":"0400+"}');
    // A form type that is not at the start, and an object of another type, cannot be rebuilt.
    for (const type of ['text/x-www-form-urlencoded', 'text/plain'])
      expect(() =>
        toRequest(
          fakeRequest({ body: { a: '1' }, _body: true, headers: { host: 'shop.test', 'content-type': type } }),
          res,
        ),
      ).toThrow(expect.objectContaining({ code: 'body_already_read' }));
    // Nothing usable left by the parser: refused, not sent empty.
    expect(() =>
      toRequest(
        fakeRequest({ body: 42, _body: true, headers: { host: 'shop.test', 'content-type': 'application/json' } }),
        res,
      ),
    ).toThrow(expect.objectContaining({ code: 'body_already_read' }));
  });
});
