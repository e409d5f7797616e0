// The hand-over of a Node body (body.ts, src/server/net/direct-body.ts): the proxy's answer from
// node:http is written by the Node adapter straight from its Node stream; any other reader gets
// a web stream.
import { request as httpRequest } from 'node:http';
import { PassThrough, Readable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { standFor, withDone } from '../../../../src/server/net/direct-body.js';
import { takeNodeBody } from '../../../../src/server/adapter/node/body.js';
import { nodeUpstream } from '../../../../src/server/adapter/node/upstream.js';
import { createFirstPartyProxy, toNodeHandler } from '../../../../src/server/index.js';
import { writeResponse } from '../../../../src/server/adapter/node/response.js';
import { closeServers, serve, servers } from '../../../support/http.js';

afterEach(async () => {
  vi.restoreAllMocks();
  await closeServers();
});

const bytes = (text: string) => new TextEncoder().encode(text);
/** A web stream that fails the test if anyone reads it. */
const unreadable = () =>
  new ReadableStream<Uint8Array>(
    {
      pull() {
        throw new Error('the web stream was read');
      },
    },
    { highWaterMark: 0 },
  );
/** A client that goes away once the first bytes of the body have come. */
function leaveAfterFirstBytes(origin: string): Promise<void> {
  return new Promise((resolve) => {
    const request = httpRequest(origin, (response) => {
      response.once('data', () => {
        request.destroy();
        resolve();
      });
    });
    request.end();
  });
}

/**
 * The proxy's time limit of `ms` (a value no other timer here uses): whether it was started,
 * and whether it was cleared. Spied, not counted: timers of other test files share the process.
 */
function timeLimit(ms: number) {
  const set = vi.spyOn(globalThis, 'setTimeout');
  const clear = vi.spyOn(globalThis, 'clearTimeout');
  const handles = () => set.mock.calls.flatMap((call, i) => (call[1] === ms ? [set.mock.results[i]!.value] : []));
  return {
    started: () => handles().length,
    cleared: () =>
      handles().length > 0 && handles().every((handle) => clear.mock.calls.some((call) => call[0] === handle)),
  };
}
const LIMIT_MS = 61_234;

describe('withDone', () => {
  it('wraps a plain stream: done once at its end', async () => {
    const done = vi.fn();
    const stream = withDone(new Response('abc').body!, done);
    expect(done).not.toHaveBeenCalled();
    expect(await new Response(stream).text()).toBe('abc');
    expect(done).toHaveBeenCalledTimes(1);
  });

  it('wraps a plain stream: done once when it fails, and the failure passes on', async () => {
    const done = vi.fn();
    const failing = new ReadableStream({
      pull(controller) {
        controller.error(new Error('broken upstream'));
      },
    });
    await expect(new Response(withDone(failing, done)).text()).rejects.toThrow('broken upstream');
    expect(done).toHaveBeenCalledTimes(1);
  });

  it('wraps a plain stream: done once when it is cancelled, and the cancel reaches the source', async () => {
    const done = vi.fn();
    const cancelled = vi.fn();
    const stream = withDone(new ReadableStream({ cancel: cancelled }), done);
    await stream.cancel('gone');
    expect(done).toHaveBeenCalledTimes(1);
    expect(cancelled).toHaveBeenCalledWith('gone');
  });

  it('returns a stream that stands for a Node stream as it is, with done added to its own', () => {
    const first = vi.fn();
    const second = vi.fn();
    const stream = unreadable();
    const source = new PassThrough();
    standFor(stream, { source, done: first });
    expect(withDone(stream, second)).toBe(stream);
    const body = takeNodeBody(stream)!;
    expect(body.source).toBe(source);
    body.done();
    expect(first).toHaveBeenCalledTimes(1);
    expect(second).toHaveBeenCalledTimes(1);
  });
});

describe('takeNodeBody', () => {
  it('hands a body over once, never one someone has begun to read, never an unmarked one', () => {
    const stream = unreadable();
    standFor(stream, { source: new PassThrough(), done: () => {} });
    expect(takeNodeBody(stream)).toBeDefined();
    expect(takeNodeBody(stream)).toBeUndefined();

    const locked = unreadable();
    standFor(locked, { source: new PassThrough(), done: () => {} });
    locked.getReader();
    expect(takeNodeBody(locked)).toBeUndefined();

    expect(takeNodeBody(unreadable())).toBeUndefined();
  });
});

describe('nodeUpstream bodies', () => {
  it('stand for their Node stream until someone reads them, even once the reader lets go', async () => {
    const url = await serve((_req, res) => res.end('var collected = true;'));
    const init = () => ({ method: 'GET', headers: new Headers(), signal: new AbortController().signal });
    const unread = await nodeUpstream(new URL(url), init());
    expect(takeNodeBody(unread.body!)).toBeDefined();

    const begun = await nodeUpstream(new URL(url), init());
    const reader = begun.body!.getReader();
    await reader.read();
    reader.releaseLock();
    expect(takeNodeBody(begun.body!)).toBeUndefined();
  });
});

describe('writeResponse with a body that stands for a Node stream', () => {
  it('pipes the Node stream, never reads the web stream, and calls done once', async () => {
    const done = vi.fn();
    const origin = await serve((_req, res) => {
      const body = unreadable();
      standFor(body, { source: Readable.from([bytes('var a = 1;'), bytes(' var b = 2;')]), done });
      void writeResponse(new Response(body, { headers: { 'content-type': 'text/javascript' } }), res);
    });
    const response = await fetch(origin);
    expect(response.headers.get('content-type')).toBe('text/javascript');
    expect(await response.text()).toBe('var a = 1; var b = 2;');
    await vi.waitFor(() => expect(done).toHaveBeenCalledTimes(1));
  });

  it('drops the connection when the Node stream fails midway, rather than end a truncated 200', async () => {
    const done = vi.fn();
    const origin = await serve((_req, res) => {
      const source = new PassThrough();
      const body = unreadable();
      standFor(body, { source, done });
      void writeResponse(new Response(body), res);
      source.write('var partial = 1;');
      setTimeout(() => source.destroy(new Error('upstream broke')), 20);
    });
    const response = await fetch(origin);
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
    await vi.waitFor(() => expect(done).toHaveBeenCalledTimes(1));
  });

  it('destroys the Node stream when the client goes away', async () => {
    const done = vi.fn();
    const source = new PassThrough();
    const origin = await serve((_req, res) => {
      const body = unreadable();
      standFor(body, { source, done });
      void writeResponse(new Response(body), res);
      source.write('var partial = 1;');
    });
    await leaveAfterFirstBytes(origin);
    await vi.waitFor(() => expect(source.destroyed).toBe(true));
    expect(done).toHaveBeenCalledTimes(1);
  });
});

describe('the first-party proxy on Node', () => {
  const script = 'var collected = true;'.repeat(50);
  const collector = () => serve((_req, res) => res.writeHead(200, { 'content-type': 'text/javascript' }).end(script));

  it('writes the answer from the collector socket to the client without web streams, and clears its time limit', async () => {
    const toWeb = vi.spyOn(Readable, 'toWeb');
    const site = await serve(
      toNodeHandler(createFirstPartyProxy({ collectorUrl: await collector(), timeoutMs: LIMIT_MS })),
    );
    const limit = timeLimit(LIMIT_MS);
    const response = await fetch(`${site}/iojs/general5/x/static_wdp.js`);
    expect(await response.text()).toBe(script);
    expect(toWeb).not.toHaveBeenCalled();
    expect(limit.started()).toBe(1);
    await vi.waitFor(() => expect(limit.cleared()).toBe(true));
  });

  it('gives a web reader the same answer through a web stream, and clears its time limit at the end', async () => {
    const toWeb = vi.spyOn(Readable, 'toWeb');
    const proxy = createFirstPartyProxy({ collectorUrl: await collector(), timeoutMs: LIMIT_MS });
    const limit = timeLimit(LIMIT_MS);
    const response = await proxy(new Request('https://shop.example/iojs/general5/x/static_wdp.js'));
    expect(limit.started()).toBe(1);
    expect(limit.cleared()).toBe(false); // the time limit holds while the body is unread
    expect(await response.text()).toBe(script);
    expect(toWeb).toHaveBeenCalledTimes(1);
    expect(limit.cleared()).toBe(true);
  });

  it('a web reader that drops the answer unread frees the collector socket and the time limit', async () => {
    let upstreamSocket: import('node:net').Socket | undefined;
    const url = await serve((req, res) => {
      upstreamSocket = req.socket;
      res.writeHead(200, { 'content-type': 'text/javascript' }).write('var partial = 1;'); // and more to come
    });
    const proxy = createFirstPartyProxy({ collectorUrl: url, timeoutMs: LIMIT_MS });
    const limit = timeLimit(LIMIT_MS);
    const response = await proxy(new Request('https://shop.example/iojs/general5/x/static_wdp.js'));
    expect(limit.cleared()).toBe(false);
    await response.body!.cancel();
    expect(limit.cleared()).toBe(true);
    await vi.waitFor(() => expect(upstreamSocket?.destroyed).toBe(true));
  });

  it('keeps the collector connection for the next request once an answer was written in full', async () => {
    let connections = 0;
    const url = await collector();
    servers.at(-1)!.on('connection', () => connections++);
    const site = await serve(toNodeHandler(createFirstPartyProxy({ collectorUrl: url })));
    for (let i = 0; i < 3; i++)
      expect(await (await fetch(`${site}/iojs/general5/x/static_wdp.js`)).text()).toBe(script);
    expect(connections).toBe(1);
  });
});

describe('writeResponse with any other body', () => {
  it('cancels the body when the client goes away', async () => {
    const cancelled = vi.fn();
    const origin = await serve((_req, res) => {
      const body = new ReadableStream({
        start(controller) {
          controller.enqueue(bytes('var partial = 1;')); // and nothing more for now
        },
        cancel: cancelled,
      });
      void writeResponse(new Response(body), res);
    });
    await leaveAfterFirstBytes(origin);
    await vi.waitFor(() => expect(cancelled).toHaveBeenCalledTimes(1));
  });
});
