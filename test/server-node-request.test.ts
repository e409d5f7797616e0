// toRequest, the Node adapter's half that builds the web Request, on Node request objects
// made by hand: each request-target form, the scheme, the Host, forbidden methods, the
// body as a web stream (read and cancelled), and the signal.
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { BadRequestError, toRequest } from '../src/server/index.js';

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

  it('the headers pass as sent', () => {
    expect(toRequest(nodeRequest({ host: 'a.example' }).req, nodeRequest().res).headers.get('x-a')).toBe('A');
  });

  it('a body streams chunk by chunk; GET and HEAD carry none', async () => {
    const post = nodeRequest({ method: 'POST', host: 'a.example', body: ['ab', 'cd'] });
    expect(await toRequest(post.req, post.res).text()).toBe('abcd');
    expect(toRequest(nodeRequest({ method: 'HEAD', host: 'a.example' }).req, nodeRequest().res).body).toBeNull();
  });

  it("a body the handler cancels ends the Node request's iteration", async () => {
    const post = nodeRequest({ method: 'POST', host: 'a.example', body: ['ab', 'cd'] });
    await toRequest(post.req, post.res).body!.cancel();
    expect(post.returned()).toBe(true);
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
