// toFastifyHandler: fetch-style handlers as Fastify 5 route handlers, over loopback sockets.
import { EventEmitter } from 'node:events';
import { IncomingMessage, type ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { Readable, Writable } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { readLimited } from '../../../../src/server/net/http.js';
import type { FastifyReplyLike, FastifyRequestLike } from '../../../../src/server/adapter/node/fastify.js';
import {
  createFirstPartyProxy,
  toFastifyHandler,
  toNodeHandler,
  type FetchHandler,
} from '../../../../src/server/index.js';
import { standFor } from '../../../../src/server/net/direct-body.js';
import { closeServers, postAs, rawRequest, serve } from '../../../support/http.js';

const apps: FastifyInstance[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const app of apps.splice(0)) await app.close();
  await closeServers();
});

/** A Fastify app on 127.0.0.1, set up by `routes`; its origin. */
async function fastify(routes: (app: FastifyInstance) => void, options: FastifyServerOptions = {}): Promise<string> {
  // Every connection closed with the app, kept-alive ones of the test's own fetch included.
  const app = Fastify({ forceCloseConnections: true, ...options });
  apps.push(app);
  routes(app);
  return app.listen({ port: 0, host: '127.0.0.1' });
}

/** A Fastify logger writing JSON lines into an array. */
function logLines(): { lines: Array<Record<string, unknown>>; options: FastifyServerOptions } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { lines, options: { logger: { level: 'info', stream } } };
}

/** Echoes what the handler saw. */
const echo: FetchHandler = async (request, context) =>
  Response.json({
    method: request.method,
    path: new URL(request.url).pathname + new URL(request.url).search,
    contentType: request.headers.get('content-type'),
    text: await request.text(),
    clientAddress: context?.clientAddress,
  });

describe('toFastifyHandler', () => {
  it('passes a body Fastify parsed, the address from the socket; writes status, headers, cookies', async () => {
    const seen: unknown[] = [];
    const origin = await fastify(
      (app) =>
        app.post(
          '/p',
          toFastifyHandler(async (request, context) => {
            seen.push([request.method, new URL(request.url).search, await request.json(), context?.clientAddress]);
            const headers = new Headers({ 'content-type': 'text/plain', 'x-b': 'B' });
            headers.append('set-cookie', 'a=1');
            headers.append('set-cookie', 'b=2');
            return new Response('hello', { status: 201, headers });
          }),
        ),
      { trustProxy: true },
    );
    const answer = await fetch(`${origin}/p?q=1`, {
      method: 'POST',
      // Fastify's trustProxy would read this as the client: the adapter does not.
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.7' },
      body: JSON.stringify({ blackbox: 'x' }),
    });
    expect([answer.status, await answer.text(), answer.headers.get('x-b')]).toEqual([201, 'hello', 'B']);
    expect(answer.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(seen).toEqual([['POST', '?q=1', { blackbox: 'x' }, '127.0.0.1']]);
  });

  it('text Fastify parsed reaches the handler as sent', async () => {
    const origin = await fastify((app) => app.post('/p', toFastifyHandler(echo)));
    const answer = await postAs(`${origin}/p`, 'text/plain', 'a b');
    expect(await answer.json()).toMatchObject({ text: 'a b', contentType: 'text/plain' });
  });

  it('a scope whose parser passes the stream on: the body streams, under the handler limit', async () => {
    const origin = await fastify((app) => {
      void app.register(async (scope) => {
        scope.removeAllContentTypeParsers();
        scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
        scope.post(
          '/capped',
          toFastifyHandler(async (request) => {
            const text = await readLimited(request, 8);
            return Response.json({ text: text ?? null });
          }),
        );
        scope.post('/p', toFastifyHandler(echo));
      });
    });
    const small = await fetch(`${origin}/capped`, { method: 'POST', body: 'abc' });
    expect(await small.json()).toEqual({ text: 'abc' });
    // No Content-Length: the limit is counted as the stream is read.
    const big = await fetch(`${origin}/capped`, {
      method: 'POST',
      body: new ReadableStream({
        pull(controller) {
          controller.enqueue(new TextEncoder().encode('0123456789'));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(await big.json()).toEqual({ text: null });
    const form = await postAs(`${origin}/p`, 'application/x-www-form-urlencoded', 'a=1&b=2');
    expect(await form.json()).toMatchObject({ text: 'a=1&b=2', contentType: 'application/x-www-form-urlencoded' });
  });

  it('a body read and not left (a parser that keeps nothing): 400 body_already_read, logged at error', async () => {
    const { lines, options } = logLines();
    const origin = await fastify((app) => {
      app.addContentTypeParser('application/octet-stream', (_request, payload, done) => {
        payload.resume();
        payload.on('end', () => done(null));
      });
      app.post('/p', toFastifyHandler(echo));
    }, options);
    const answer = await postAs(`${origin}/p`, 'application/octet-stream', 'x');
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('body_already_read');
    expect(lines.filter((line) => line.code === 'body_already_read')).toEqual([
      expect.objectContaining({
        level: 50,
        url: '/p',
        method: 'POST',
        msg: expect.stringMatching(/before this handler/),
      }),
    ]);
  });

  it('without a Fastify logger, body_already_read goes to the console', async () => {
    const console_ = vi.spyOn(console, 'error').mockImplementation(() => {});
    const origin = await fastify((app) => {
      app.addContentTypeParser('application/octet-stream', (_request, payload, done) => {
        payload.resume();
        payload.on('end', () => done(null));
      });
      app.post('/p', toFastifyHandler(echo));
    });
    const answer = await postAs(`${origin}/p`, 'application/octet-stream', 'x');
    expect(answer.status).toBe(400);
    expect(console_.mock.calls).toEqual([[expect.stringMatching(/before this handler.*\(body_already_read\)$/)]]);
  });

  it('the wiring through toNodeHandler (reply.hijack()) answers body_already_read and logs it, naming toFastifyHandler', async () => {
    const console_ = vi.spyOn(console, 'error').mockImplementation(() => {});
    const origin = await fastify((app) =>
      app.post('/p', (request, reply) => {
        reply.hijack();
        toNodeHandler(echo)(request.raw, reply.raw);
      }),
    );
    const answer = await postAs(`${origin}/p`, 'application/json', '{"a":1}');
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('body_already_read');
    expect(console_.mock.calls).toEqual([[expect.stringMatching(/toFastifyHandler.*\(body_already_read\)$/)]]);
  });

  it('a client fault (a bad Host) is answered 400 bad_host and logged at info, not error', async () => {
    const { lines, options } = logLines();
    const origin = await fastify((app) => app.get('/p', toFastifyHandler(echo)), options);
    const answer = await rawRequest(origin, '/p', { headers: { host: 'a_b' } });
    expect([answer.status, JSON.parse(answer.body).error.code]).toEqual([400, 'bad_host']);
    expect(lines.filter((line) => line.code === 'bad_host').map((line) => line.level)).toEqual([30]);
  });

  it('clientAddress: the address the integrator names (request.ip behind its own proxy)', async () => {
    const origin = await fastify(
      (app) => app.get('/p', toFastifyHandler(echo, { clientAddress: (request) => request.ip })),
      { trustProxy: '127.0.0.1' },
    );
    const answer = await fetch(`${origin}/p`, { headers: { 'x-forwarded-for': '::ffff:203.0.113.5' } });
    expect(((await answer.json()) as { clientAddress: string }).clientAddress).toBe('203.0.113.5');
  });

  it('streams an answer, and HEAD (Fastify runs the GET handler) sends no body', async () => {
    let cancelled = false;
    const origin = await fastify((app) =>
      app.get(
        '/s',
        toFastifyHandler(() => {
          let part = 0;
          return new Response(
            new ReadableStream({
              async pull(controller) {
                if (part === 3) return controller.close();
                controller.enqueue(new TextEncoder().encode(String(part++)));
                await new Promise((resolve) => setTimeout(resolve, 5));
              },
              cancel() {
                cancelled = true;
              },
            }),
            { headers: { 'content-type': 'text/plain', 'content-length': '3' } },
          );
        }),
      ),
    );
    expect(await (await fetch(`${origin}/s`)).text()).toBe('012');
    const head = await rawRequest(origin, '/s', { method: 'HEAD' });
    expect([head.status, head.body, head.headers['content-length']]).toEqual([200, '', '3']);
    expect(cancelled).toBe(true);
  });

  it("the proxy on Node's upstream path: a large answer streamed whole, a POST's body as sent, the socket's address", async () => {
    const seen: unknown[] = [];
    const script = 'x'.repeat(1 << 20);
    const upstream = await serve((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        seen.push([req.method, req.url, req.headers['x-forwarded-for'], body]);
        res.writeHead(200, { 'content-type': 'text/javascript' });
        res.end(req.method === 'GET' ? script : 'ok');
      });
    });
    const iojs = createFirstPartyProxy({ collectorUrl: `${upstream}/`, methods: ['GET', 'HEAD', 'POST'] });
    const origin = await fastify((app) => {
      void app.register(async (proxy) => {
        proxy.removeAllContentTypeParsers();
        proxy.addContentTypeParser('*', (_request, _body, done) => done(null));
        proxy.route({ method: ['GET', 'POST'], url: '/iojs/*', handler: toFastifyHandler(iojs) });
      });
    });
    const spoof = { 'x-forwarded-for': '198.51.100.7' };
    const answer = await fetch(`${origin}/iojs/general5/a.js`, { headers: spoof });
    expect([answer.status, (await answer.text()).length]).toEqual([200, script.length]);
    const posted = await fetch(`${origin}/iojs/general5/r`, {
      method: 'POST',
      headers: { ...spoof, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a=1&b=%20',
    });
    expect([posted.status, await posted.text()]).toEqual([200, 'ok']);
    expect(seen).toEqual([
      ['GET', '/general5/a.js', '127.0.0.1', ''],
      ['POST', '/general5/r', '127.0.0.1', 'a=1&b=%20'],
    ]);
  });
});

// The adapter against fakes of Fastify's request and reply: what it hands each, exactly.
describe('toFastifyHandler against a fake request and reply', () => {
  /** A Node request as Fastify gives it: `body` its parsed body; the stream carries `streamed`. */
  function fakeRequest(
    init: { method?: string; rawHeaders?: string[]; body?: unknown; streamed?: string } = {},
    log: FastifyRequestLike['log'] = { level: 'info', info: vi.fn(), error: vi.fn() },
  ): FastifyRequestLike {
    const raw = new IncomingMessage(new Socket());
    raw.method = init.method ?? 'POST';
    raw.url = '/p';
    raw.rawHeaders = init.rawHeaders ?? ['host', 'shop.example', 'content-type', 'application/json'];
    for (let i = 0; i < raw.rawHeaders.length; i += 2)
      raw.headers[raw.rawHeaders[i]!.toLowerCase()] = raw.rawHeaders[i + 1];
    raw.push(init.streamed ?? null);
    if (init.streamed !== undefined) raw.push(null);
    return { raw, body: init.body, log };
  }

  /** A reply that records what the adapter gives it. */
  function fakeReply() {
    const calls = {
      code: [] as number[],
      headers: [] as Array<Record<string, string | string[]>>,
      send: [] as unknown[][],
    };
    const raw = new EventEmitter() as unknown as ServerResponse;
    const reply: FastifyReplyLike = {
      raw,
      code: (status) => void calls.code.push(status),
      headers: (values) => void calls.headers.push(values),
      send: (...payload: unknown[]) => void calls.send.push(payload),
    };
    return { reply, calls, raw };
  }

  it('a body Fastify parsed is the body, whatever the stream still holds', async () => {
    const { reply } = fakeReply();
    const seen: string[] = [];
    await toFastifyHandler(async (request) => {
      seen.push(await request.text());
      return new Response(null, { status: 204 });
    })(fakeRequest({ body: { a: 1 }, streamed: 'the stream' }), reply);
    expect(seen).toEqual(['{"a":1}']);
  });

  it('a refusal is JSON, not stored; a failure that is no refusal is thrown on', async () => {
    const { reply, calls } = fakeReply();
    await toFastifyHandler(echo)(fakeRequest({ rawHeaders: ['host', 'a_b'] }), reply);
    expect(calls.code).toEqual([400]);
    expect(calls.headers).toEqual([{ 'content-type': 'application/json', 'cache-control': 'no-store' }]);
    // A header name Headers refuses: a TypeError, not a 400 of the adapter's.
    await expect(
      toFastifyHandler(echo)(fakeRequest({ rawHeaders: ['host', 'shop.example', 'bad name', 'x'] }), fakeReply().reply),
    ).rejects.toThrow(TypeError);
  });

  it.each([
    ['names no level', undefined],
    ['is silent', 'silent'],
  ])('a set-up fault with a logger that %s goes to the console, not to that logger', async (_, level) => {
    const console_ = vi.spyOn(console, 'error').mockImplementation(() => {});
    const log = { ...(level === undefined ? {} : { level }), info: vi.fn(), error: vi.fn() };
    const { reply, calls } = fakeReply();
    // Read and left nothing: the stream has ended, no parser body.
    const request = fakeRequest({ streamed: '' }, log);
    request.raw.resume();
    await new Promise((resolve) => request.raw.once('end', resolve));
    await toFastifyHandler(echo)(request, reply);
    expect(calls.code).toEqual([400]);
    expect(log.error).not.toHaveBeenCalled();
    expect(console_.mock.calls).toEqual([[expect.stringMatching(/\(body_already_read\)$/)]]);
  });

  it('no address named: the handler is given none', async () => {
    const contexts: unknown[] = [];
    await toFastifyHandler(
      (_request, context) => {
        contexts.push(context);
        return new Response(null, { status: 204 });
      },
      { clientAddress: () => undefined },
    )(fakeRequest({ method: 'GET' }), fakeReply().reply);
    expect(contexts).toEqual([{}]);
  });

  it('headers as Fastify takes them: no Set-Cookie when none; no body sent when there is none', async () => {
    const { reply, calls } = fakeReply();
    await toFastifyHandler(() => new Response(null, { status: 204, headers: { 'x-a': 'A' } }))(
      fakeRequest({ method: 'GET' }),
      reply,
    );
    expect(calls.code).toEqual([204]);
    expect(calls.headers).toEqual([{ 'x-a': 'A' }]);
    expect(calls.send).toEqual([[]]);
  });

  it('a body that stands for a Node stream is sent as that stream, done when the reply closes', async () => {
    const { reply, calls, raw } = fakeReply();
    const source = Readable.from(['x']);
    const done = vi.fn();
    await toFastifyHandler(() => {
      const stream = new ReadableStream();
      standFor(stream, { source, done });
      return new Response(stream);
    })(fakeRequest({ method: 'GET' }), reply);
    expect(calls.send).toEqual([[source]]);
    expect(done).not.toHaveBeenCalled();
    raw.emit('close');
    expect(done).toHaveBeenCalledOnce();
  });
});
