// toRequest, the Node adapter's half that builds the web Request, on Node request objects
// made by hand: each request-target form, the scheme, the Host, forbidden methods, the
// body as a web stream (read and cancelled), and the signal.
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { BadRequestError, bodyLeft, toRequest, webRequest } from '../../../../src/server/adapter/node/request.js';
import { writeResponse } from '../../../../src/server/adapter/node/response.js';

function nodeRequest(
  parts: { method?: string; url?: string; host?: string; encrypted?: boolean; body?: string[] } = {},
) {
  const chunks = (parts.body ?? []).map((text) => Buffer.from(text));
  let returned = false;
  const req = {
    method: parts.method ?? 'GET',
    url: parts.url ?? '/',
    headers: parts.host === undefined ? {} : { host: parts.host },
    rawHeaders: parts.host === undefined ? ['x-a', 'A'] : ['Host', parts.host, 'x-a', 'A'],
    socket: { encrypted: parts.encrypted },
    readableEnded: false,
    [Symbol.asyncIterator]() {
      let index = 0;
      return {
        next: async () =>
          index < chunks.length ? { done: false, value: chunks[index++] } : { done: true, value: undefined },
        return: async () => {
          returned = true;
          return { done: true, value: undefined };
        },
      };
    },
  };
  const res = Object.assign(new EventEmitter(), { writableFinished: false });
  return {
    req: req as unknown as IncomingMessage,
    res: res as unknown as ServerResponse & EventEmitter & { writableFinished: boolean },
    returned: () => returned,
  };
}

const refusal = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return error instanceof BadRequestError ? [error.code, error.status] : error;
  }
  return 'no error';
};

describe('toRequest', () => {
  it('an origin-form target on the Host; https on an encrypted socket; localhost without a Host', () => {
    expect(toRequest(nodeRequest({ url: '/a?b=1', host: 'shop.example:8443' }).req, nodeRequest().res).url).toBe(
      'http://shop.example:8443/a?b=1',
    );
    expect(toRequest(nodeRequest({ host: 'shop.example', encrypted: true }).req, nodeRequest().res).url).toBe(
      'https://shop.example/',
    );
    expect(toRequest(nodeRequest({ url: '/x' }).req, nodeRequest().res).url).toBe('http://localhost/x');
  });

  it('an absolute-form target keeps only its path and query, on this Host', () => {
    const { req, res } = nodeRequest({ url: 'http://other.example/p?q=2#f', host: 'shop.example' });
    expect(toRequest(req, res).url).toBe('http://shop.example/p?q=2');
  });

  it('a target that is neither a path nor a URL is 400 bad_request_target; a bad Host 400 bad_host', () => {
    expect(refusal(() => toRequest(nodeRequest({ url: '*', host: 'a.example' }).req, nodeRequest().res))).toEqual([
      'bad_request_target',
      400,
    ]);
    expect(refusal(() => toRequest(nodeRequest({ host: 'a b' }).req, nodeRequest().res))).toEqual(['bad_host', 400]);
  });

  it.each(['CONNECT', 'TRACE', 'track'])('%s is 405 method_not_allowed', (method) => {
    expect(refusal(() => toRequest(nodeRequest({ method, host: 'a.example' }).req, nodeRequest().res))).toEqual([
      'method_not_allowed',
      405,
    ]);
  });

  it('the headers pass as sent, and nothing else', () => {
    const { headers } = toRequest(nodeRequest({ host: 'a.example' }).req, nodeRequest().res);
    expect([...headers]).toEqual([
      ['host', 'a.example'],
      ['x-a', 'A'],
    ]);
  });

  it('a method that only contains a forbidden one is served; the refusal is a BadRequestError by name', () => {
    for (const method of ['XTRACE', 'CONNECTX'])
      expect(toRequest(nodeRequest({ method, host: 'a.example' }).req, nodeRequest().res).method).toBe(method);
    try {
      toRequest(nodeRequest({ method: 'TRACE' }).req, nodeRequest().res);
    } catch (error) {
      expect((error as Error).name).toBe('BadRequestError');
    }
    expect.assertions(3);
  });

  it('a body streams chunk by chunk; GET and HEAD carry none', async () => {
    const post = nodeRequest({ method: 'POST', host: 'a.example', body: ['ab', 'cd'] });
    expect(await toRequest(post.req, post.res).text()).toBe('abcd');
    expect(toRequest(nodeRequest({ method: 'HEAD', host: 'a.example' }).req, nodeRequest().res).body).toBeNull();
  });

  it("a body the handler cancels leaves the Node request's rest to the adapter (bodyLeft), read on from where it was", async () => {
    const post = nodeRequest({ method: 'POST', host: 'a.example', body: ['ab', 'cd'] });
    const request = toRequest(post.req, post.res);
    expect(bodyLeft(request)).toBeUndefined();
    const reader = request.body!.getReader();
    expect(Buffer.from((await reader.read()).value!).toString()).toBe('ab');
    await reader.cancel();
    expect(post.returned()).toBe(false);
    expect(Buffer.from((await bodyLeft(request)!.next()).value!).toString()).toBe('cd');
  });

  it("a body cancelled under webRequest without keepLeft (Fastify's) ends the Node request's iteration", async () => {
    const post = nodeRequest({ method: 'POST', host: 'a.example', body: ['ab', 'cd'] });
    const request = webRequest(post.req, post.res, { body: undefined, parserRan: false });
    await request.body!.cancel();
    expect(post.returned()).toBe(true);
    expect(bodyLeft(request)).toBeUndefined();
  });

  it('the signal aborts when the response closes unfinished, not when it closes finished', () => {
    const gone = nodeRequest({ host: 'a.example' });
    const request = toRequest(gone.req, gone.res);
    gone.res.emit('close');
    expect(request.signal.aborted).toBe(true);
    const done = nodeRequest({ host: 'a.example' });
    const finished = toRequest(done.req, done.res);
    done.res.writableFinished = true;
    done.res.emit('close');
    expect(finished.signal.aborted).toBe(false);
  });
});

describe('writeResponse', () => {
  /** A Node response that records what it was told; write() answers `accept` in turn. */
  function nodeResponse(accept: boolean[] = []) {
    const told: string[] = [];
    const res = Object.assign(new EventEmitter(), {
      writeHead: (status: number) => void told.push(`head ${status}`),
      write: (chunk: Uint8Array) => {
        told.push(`write ${Buffer.from(chunk).toString()}`);
        return accept.shift() ?? true;
      },
      end: () => void told.push('end'),
      destroy: () => void told.push('destroy'),
    });
    return { res: res as unknown as ServerResponse & EventEmitter, told };
  }

  it('a HEAD answer writes no body, and its body is cancelled', async () => {
    let cancelled = false;
    const body = new ReadableStream({ cancel: () => void (cancelled = true) });
    const { res, told } = nodeResponse();
    await writeResponse(new Response(body, { status: 200 }), res, 'HEAD');
    expect([told, cancelled]).toEqual([['head 200', 'end'], true]);
  });

  it('waits for drain when the socket says it is full, then goes on', async () => {
    const { res, told } = nodeResponse([false]);
    const body = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('a'));
        controller.enqueue(new TextEncoder().encode('b'));
        controller.close();
      },
    });
    const written = writeResponse(new Response(body), res);
    // Until the drain, nothing more is written, however long it takes.
    await expect.poll(() => told).toEqual(['head 200', 'write a']);
    await Promise.resolve();
    expect(told).toEqual(['head 200', 'write a']);
    res.emit('drain');
    await written;
    expect(told).toEqual(['head 200', 'write a', 'write b', 'end']);
  });
});
