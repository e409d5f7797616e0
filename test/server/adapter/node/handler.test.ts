// toNodeHandler: fetch-style handlers on node:http and as Express-style middleware.
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BodyTimeoutError, toNodeHandler, type FetchHandler } from '../../../../src/server/index.js';
import { bodyTimedOut, isBodyTimeout, readLimited } from '../../../../src/server/net/http.js';
import { closeServers, listening, postAs, rawRequest, serve } from '../../../support/http.js';
import { trickle } from '../../../support/slow-body.js';

afterEach(closeServers);

describe('toNodeHandler', () => {
  it('passes method, URL, headers, body and client address; writes status, headers, cookies and body', async () => {
    const seen: unknown[] = [];
    const handler: FetchHandler = async (request, context) => {
      seen.push([
        request.method,
        new URL(request.url).pathname + new URL(request.url).search,
        request.headers.get('x-a'),
        await request.text(),
        context?.clientAddress,
      ]);
      const headers = new Headers({ 'content-type': 'text/plain' });
      headers.append('set-cookie', 'a=1');
      headers.append('set-cookie', 'b=2');
      return new Response('hello', { status: 201, headers });
    };
    const origin = await serve(toNodeHandler(handler));
    const response = await fetch(`${origin}/p?q=1`, { method: 'POST', headers: { 'x-a': 'A' }, body: 'body' });
    expect(response.status).toBe(201);
    expect(await response.text()).toBe('hello');
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(seen).toEqual([['POST', '/p?q=1', 'A', 'body', '127.0.0.1']]);
  });

  it('streams a response body', async () => {
    const origin = await serve(
      toNodeHandler(() => {
        const stream = new ReadableStream({
          async start(controller) {
            for (const part of ['a', 'b', 'c']) {
              controller.enqueue(new TextEncoder().encode(part));
              await new Promise((r) => setTimeout(r, 5));
            }
            controller.close();
          },
        });
        return new Response(stream);
      }),
    );
    expect(await (await fetch(origin)).text()).toBe('abc');
  });

  it('answers HEAD without a body', async () => {
    const origin = await serve(toNodeHandler(() => new Response('body', { headers: { 'x-h': '1' } })));
    const response = await fetch(origin, { method: 'HEAD' });
    expect(response.headers.get('x-h')).toBe('1');
    expect(await response.text()).toBe('');
  });

  it('turns an exception into a bare 500 without details', async () => {
    const origin = await serve(
      toNodeHandler(() => {
        throw new Error('secret detail');
      }),
    );
    const response = await fetch(origin);
    expect(response.status).toBe(500);
    expect(await response.text()).not.toContain('secret');
  });

  it('hands an exception to Express-style next()', async () => {
    const errors: unknown[] = [];
    const middleware = toNodeHandler(() => {
      throw new Error('boom');
    });
    const origin = await serve((req, res) =>
      middleware(req, res, (error) => {
        errors.push(error);
        res.statusCode = 418;
        res.end();
      }),
    );
    expect((await fetch(origin)).status).toBe(418);
    expect(errors).toHaveLength(1);
  });

  it('aborts the request signal when the client goes away', async () => {
    let aborted: Promise<boolean> | undefined;
    const origin = await serve(
      toNodeHandler((request) => {
        aborted = new Promise((resolve) => request.signal.addEventListener('abort', () => resolve(true)));
        return new Promise(() => {}); // never answers
      }),
    );
    const controller = new AbortController();
    const pending = fetch(origin, { signal: controller.signal }).catch(() => undefined);
    await expect.poll(() => aborted !== undefined).toBe(true);
    controller.abort();
    await pending;
    expect(await aborted).toBe(true);
  });

  it.each(['a@b', 'a b', 'x/y'])(
    'a malformed Host (%j) is a 400 with a code before the handler runs, for the endpoint as for the proxy',
    async (host) => {
      let ran = false;
      const origin = await serve(
        toNodeHandler(() => {
          ran = true;
          return new Response('ok');
        }),
      );
      const { port } = new URL(origin);
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        httpRequest({ hostname: '127.0.0.1', port, path: '/device-risk', method: 'POST', headers: { host } }, (res) => {
          let body = '';
          res.on('data', (c) => (body += c)).on('end', () => resolve({ status: res.statusCode!, body }));
        })
          .on('error', reject)
          .end('{}');
      });
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.body).error.code).toBe('bad_host');
      expect(ran).toBe(false);
    },
  );

  it('a request target of the form //host/path stays a path on this origin', async () => {
    const seen: string[] = [];
    const origin = await serve(
      toNodeHandler((request) => {
        seen.push(request.url);
        return new Response('ok');
      }),
    );
    const { port } = new URL(origin);
    await new Promise<void>((resolve, reject) => {
      httpRequest({ hostname: '127.0.0.1', port, path: '//evil.example/x' }, (res) => res.resume().on('end', resolve))
        .on('error', reject)
        .end();
    });
    expect(seen).toEqual([`http://127.0.0.1:${port}//evil.example/x`]);
  });
});

// Express with a body parser before the handler: the stream is read, the parsed body is on req.body.
describe('toNodeHandler behind Express body parsers', () => {
  async function expressWith(parser: import('express').RequestHandler) {
    const express = (await import('express')).default;
    const app = express();
    app.use(parser);
    app.all(
      '/echo',
      toNodeHandler(
        async (request) =>
          new Response(JSON.stringify({ type: request.headers.get('content-type'), text: await request.text() })),
      ),
    );
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    return `${await listening(server)}/echo`;
  }

  it('express.json(): the handler reads the JSON the parser read', async () => {
    const express = (await import('express')).default;
    const url = await expressWith(express.json());
    const answer = (await (await postAs(url, 'application/json', '{ "blackbox": "0400+/=" }')).json()) as {
      text: string;
    };
    expect(JSON.parse(answer.text)).toEqual({ blackbox: '0400+/=' });
  });

  it('express.urlencoded(): the handler reads the form the parser read, "+" kept', async () => {
    const express = (await import('express')).default;
    const url = await expressWith(express.urlencoded({ extended: false }));
    const answer = (await (
      await postAs(url, 'application/x-www-form-urlencoded', 'blackbox=0400%2B%2F%3D&a=1')
    ).json()) as { text: string };
    expect(new URLSearchParams(answer.text).get('blackbox')).toBe('0400+/=');
  });

  it('express.text() and express.raw(): the string or the bytes as they were', async () => {
    const express = (await import('express')).default;
    const url = await expressWith(express.text());
    expect(
      (
        (await (
          await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'plain body' })
        ).json()) as { text: string }
      ).text,
    ).toBe('plain body');
  });

  it('a parser that read the stream and left no body: 400 body_already_read, naming the fix, logged', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const url = await expressWith((req, _res, next) => {
      req.resume();
      req.on('end', () => next());
    });
    const answer = await postAs(url, 'application/octet-stream', 'x');
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'body_already_read',
      message: expect.stringMatching(/before body parsers/),
    });
    // A set-up fault: the server's log says so, not only the browser's answer.
    expect(logged.mock.calls).toEqual([
      [expect.stringMatching(/^\[blackbox-capture\/server\] .*\(body_already_read\)$/)],
    ]);
    logged.mockRestore();
  });

  it('a request the parsers leave alone still streams', async () => {
    const express = (await import('express')).default;
    const url = await expressWith(express.json());
    const answer = (await (
      await fetch(url, { method: 'POST', headers: { 'content-type': 'text/csv' }, body: 'a,b' })
    ).json()) as { text: string };
    expect(answer.text).toBe('a,b');
  });
});

describe('toNodeHandler and a body that trickles in', () => {
  const reading: FetchHandler = async (request) => new Response(await readLimited(request, 1024, 300));

  it('is cut at the limit readLimited was given: 408 body_timeout, told to onError, the connection closed', async () => {
    const told: unknown[] = [];
    const origin = await serve(toNodeHandler(reading, { onError: (error) => told.push(error) }));
    // A byte every 200 ms: without a time limit this connection would stay open for 40 s.
    const { answer, sent, heldMs } = await trickle(origin, '/blackbox', { everyMs: 200 });
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(answer).toContain('{"error":{"code":"body_timeout","message":"The body did not arrive within 300 ms"}}');
    expect(sent).toBeLessThan(10);
    expect(heldMs).toBeLessThan(5_000);
    expect(told).toHaveLength(1);
    expect(told[0]).toBeInstanceOf(BodyTimeoutError);
  });

  it('without onError, logs the cut on the console', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const origin = await serve(toNodeHandler(reading));
      const { answer } = await trickle(origin, '/blackbox', { everyMs: 200 });
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      expect(logged).toHaveBeenCalledOnce();
      // One line, as the kit's other refusals: no stack trace per slow client.
      expect(logged.mock.calls[0]).toEqual([
        '[blackbox-capture/server] the request body did not arrive within 300 ms (body_timeout)',
      ]);
    } finally {
      logged.mockRestore();
    }
  });

  it('a refusal before the body is read closes the connection instead of draining the body', async () => {
    const origin = await serve(toNodeHandler(() => new Response('no', { status: 403 })));
    const { answer, sent, heldMs } = await trickle(origin, '/blackbox', { everyMs: 200 });
    expect(answer).toMatch(/^HTTP\/1\.1 403 /);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(sent).toBeLessThan(10);
    expect(heldMs).toBeLessThan(5_000);
  });

  /**
   * A POST declaring `length` bytes whose body comes `laterMs` after the head (none when
   * `laterMs` is undefined): what the server wrote back, when its first byte came, and whether
   * it came before the body was sent (an order, not a time: a starved machine keeps it).
   */
  function postLater(origin: string, length: number, laterMs?: number, chunked = false) {
    const { hostname, port } = new URL(origin);
    return new Promise<{ answer: string; answeredMs: number; beforeBody: boolean }>((resolve) => {
      const started = Date.now();
      const socket = connect(Number(port), hostname);
      let answer = '';
      let answeredMs = -1;
      let bodySent = false;
      let beforeBody = false;
      const framing = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`;
      socket.write(`POST /checkout HTTP/1.1\r\nHost: ${hostname}:${port}\r\n${framing}\r\n\r\n`);
      const body = chunked ? `${length.toString(16)}\r\n${'x'.repeat(length)}\r\n0\r\n\r\n` : 'x'.repeat(length);
      if (laterMs !== undefined)
        setTimeout(() => {
          bodySent = true;
          if (socket.writable) socket.write(body);
        }, laterMs);
      socket.on('data', (chunk: Buffer) => {
        if (answeredMs < 0) [answeredMs, beforeBody] = [Date.now() - started, !bodySent];
        answer += chunk.toString();
        // A connection kept alive stays open: the whole answer is enough.
        if (/\r\n\r\n(no|2\r\nno\r\n0\r\n\r\n)$/.test(answer)) socket.end();
      });
      socket.on('error', () => {});
      socket.on('close', () => resolve({ answer, answeredMs, beforeBody }));
    });
  }
  const refusingBig: FetchHandler = async (request) =>
    (await readLimited(request, 1024)) === undefined ? new Response('no', { status: 413 }) : new Response('ok');

  it('a small body refused by its Content-Length is read to its end first: a front still sending it is not reset', async () => {
    const origin = await serve(toNodeHandler(refusingBig));
    // The 20,000 bytes come 300 ms after the head: the 413 waits for them, and the connection is kept.
    const { answer, beforeBody } = await postLater(origin, 20_000, 300);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).not.toMatch(/\r\nconnection: close\r\n/i);
    expect(beforeBody).toBe(false);
  });

  it('up to 64 KiB by Content-Length, or counted when none is declared: past it the connection is closed', async () => {
    const origin = await serve(toNodeHandler(refusingBig));
    const whole = await postLater(origin, 64 * 1024, 300);
    expect(whole.answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(whole.answer).not.toMatch(/\r\nconnection: close\r\n/i);
    // Chunked, refused before it is read (a counting refusal would cancel the stream): read up to 64 KiB, then left.
    const refusing = await serve(toNodeHandler(() => new Response('no', { status: 403 })));
    const small = await postLater(refusing, 1000, 300, true);
    expect(small.answer).toMatch(/^HTTP\/1\.1 403 /);
    expect(small.answer).not.toMatch(/\r\nconnection: close\r\n/i);
    const large = await postLater(refusing, 256 * 1024, 300, true);
    expect(large.answer).toMatch(/^HTTP\/1\.1 403 [^]*\r\nconnection: close\r\n/i);
  });

  it('a chunked body refused by counting is read to its end first too: its 413 reaches the client, the connection kept', async () => {
    const origin = await serve(toNodeHandler(refusingBig));
    const { hostname, port } = new URL(origin);
    const socket = connect(Number(port), hostname);
    let answer = '';
    let restSent = false;
    let beforeRest: boolean | undefined;
    socket.on('data', (chunk: Buffer) => {
      beforeRest ??= !restSent;
      answer += chunk.toString();
      if (/\r\n\r\nno$/.test(answer)) socket.end();
    });
    socket.on('error', () => {});
    const closed = new Promise((resolve) => socket.on('close', resolve));
    // 2,000 bytes at once (over the 1,024 the handler reads: refused by counting), 1,000 more later.
    socket.write(
      `POST /checkout HTTP/1.1\r\nHost: ${hostname}:${port}\r\nTransfer-Encoding: chunked\r\n\r\n7d0\r\n${'x'.repeat(2000)}\r\n`,
    );
    setTimeout(() => {
      restSent = true;
      if (socket.writable) socket.write(`3e8\r\n${'x'.repeat(1000)}\r\n0\r\n\r\n`);
    }, 300);
    await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).not.toMatch(/\r\nconnection: close\r\n/i);
    expect(beforeRest).toBe(false);
  });

  it('a body already too slow (408) is not read further: the answer comes before the rest, the connection closed', async () => {
    const origin = await serve(
      toNodeHandler(
        () => {
          throw new BodyTimeoutError(300);
        },
        { onError: () => {} },
      ),
    );
    const { answer, beforeBody } = await postLater(origin, 1000, 900);
    expect(answer).toMatch(/^HTTP\/1\.1 408 [^]*\r\nconnection: close\r\n/i);
    expect(beforeBody).toBe(true);
  });

  it("a kit handler's own 408 (its time limit, answered, not thrown) is not drained either: the connection closed at once", async () => {
    const answering: FetchHandler = async (request) => {
      try {
        return new Response(await readLimited(request, 1024, 300));
      } catch (error) {
        if (isBodyTimeout(error)) return bodyTimedOut(error);
        throw error;
      }
    };
    const origin = await serve(toNodeHandler(answering));
    // Cut at 300 ms; the body comes at 900 ms, within the second a drain would wait: the answer
    // comes before it (an order, not a time).
    const { answer, beforeBody } = await postLater(origin, 1000, 900);
    expect(answer).toMatch(/^HTTP\/1\.1 408 [^]*\r\nconnection: close\r\n/i);
    expect(beforeBody).toBe(true);
  });

  it("a handler that cancels a body by counting and then throws: Express's error handler answers", async () => {
    const express = (await import('express')).default;
    const app = express();
    app.use(
      toNodeHandler(async (request) => {
        if ((await readLimited(request, 1024)) === undefined) throw new Error('too large');
        return new Response('ok');
      }),
    );
    // Express's own error handler (its finalhandler), quiet: it waits for the request to end.
    app.set('env', 'production');
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { hostname, port } = new URL(await listening(server));
    const socket = connect(Number(port), hostname);
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('error', () => {});
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write(
      `POST / HTTP/1.1\r\nHost: ${hostname}\r\nTransfer-Encoding: chunked\r\n\r\n7d0\r\n${'x'.repeat(2000)}\r\n`,
    );
    setTimeout(() => socket.writable && socket.write(`3e8\r\n${'x'.repeat(1000)}\r\n0\r\n\r\n`), 300);
    await expect.poll(() => answer, { timeout: 5000 }).toMatch(/^HTTP\/1\.1 500 /);
    socket.destroy();
    await closed;
    // A client that stops sending the rest: after the drain's second, the request is ended
    // (the connection closed) rather than held until Node's request timeout.
    const stalled = connect(Number(port), hostname);
    stalled.on('error', () => {});
    let stalledClosed = false;
    stalled.on('close', () => (stalledClosed = true));
    stalled.write(
      `POST / HTTP/1.1\r\nHost: ${hostname}\r\nTransfer-Encoding: chunked\r\n\r\n7d0\r\n${'x'.repeat(2000)}\r\n`,
    );
    await expect.poll(() => stalledClosed, { timeout: 5000 }).toBe(true);
  });

  it('an exception before a large body is read: its 500 is written, the body neither read nor cut first', async () => {
    const origin = await serve(
      toNodeHandler(() => {
        throw new Error('refused');
      }),
    );
    // 100 KiB declared, none sent: past what is drained, and the request not cut before the answer.
    const { answer } = await postLater(origin, 100 * 1024);
    expect(answer).toMatch(/^HTTP\/1\.1 500 /);
  });

  it("a client gone while its body is read before the answer: nothing goes to Express's next", async () => {
    const passed: unknown[] = [];
    const handler = toNodeHandler(() => new Response('no', { status: 403 }));
    const origin = await serve((req, res) => handler(req, res, (error) => void passed.push(error)));
    const { hostname, port } = new URL(origin);
    const socket = connect(Number(port), hostname);
    socket.on('error', () => {});
    socket.write(`POST /x HTTP/1.1\r\nHost: ${hostname}\r\nContent-Length: 1000\r\n\r\n${'x'.repeat(10)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(passed).toEqual([]);
  });

  it('a larger body, or a small one that does not come within a second, is not waited for: the connection is closed', async () => {
    const origin = await serve(toNodeHandler(refusingBig));
    // The body would come 3 s after the head (a busy machine may take longer than a few hundred
    // ms to answer): the 413 comes before it, and closes the connection.
    const large = await postLater(origin, 64 * 1024 + 1, 3_000);
    expect(large.answer).toMatch(/^HTTP\/1\.1 413 [^]*\r\nconnection: close\r\n/i);
    expect(large.beforeBody).toBe(true);
    const never = await postLater(origin, 20_000);
    expect(never.answer).toMatch(/^HTTP\/1\.1 413 [^]*\r\nconnection: close\r\n/i);
    expect(never.answeredMs).toBeGreaterThanOrEqual(900);
    expect(never.answeredMs).toBeLessThan(5_000);
  });

  it('a body sent whole is read as before, on a connection kept alive', async () => {
    const origin = await serve(toNodeHandler(reading));
    const response = await fetch(origin, { method: 'POST', body: '{"a":1}' });
    expect(response.status).toBe(200);
    expect(response.headers.get('connection')).not.toBe('close');
    expect(await response.text()).toBe('{"a":1}');
  });
});

describe('toNodeHandler: what it answers of its own', () => {
  it('a bad Host: 400 bad_host as JSON, not stored, not logged (the client is at fault)', async () => {
    const console_ = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const origin = await serve(toNodeHandler(() => new Response('never')));
      const answer = await rawRequest(origin, '/p', { headers: { host: 'a_b' } });
      expect(answer.status).toBe(400);
      expect([answer.headers['content-type'], answer.headers['cache-control']]).toEqual([
        'application/json',
        'no-store',
      ]);
      expect((JSON.parse(answer.body) as { error: { code: string } }).error.code).toBe('bad_host');
      expect(console_).not.toHaveBeenCalled();
    } finally {
      console_.mockRestore();
    }
  });

  it('an exception: 500, "internal error" as plain text', async () => {
    const origin = await serve(
      toNodeHandler(() => {
        throw new Error('secret detail');
      }),
    );
    const answer = await rawRequest(origin, '/p');
    expect([answer.status, answer.headers['content-type'], answer.body]).toEqual([
      500,
      'text/plain; charset=utf-8',
      'internal error',
    ]);
  });

  it('an absolute-form target counts by its path and query only, on the Host sent', async () => {
    const seen: string[] = [];
    const origin = await serve(
      toNodeHandler((request) => {
        seen.push(request.url);
        return new Response(null, { status: 204 });
      }),
    );
    await rawRequest(origin, 'http://other.example/x?y=1', { headers: { host: 'shop.example' } });
    expect(seen).toEqual(['http://shop.example/x?y=1']);
  });

  it('a method no web Request can carry: 405 method_not_allowed', async () => {
    const origin = await serve(toNodeHandler(() => new Response('never')));
    const answer = await rawRequest(origin, '/p', { method: 'TRACE' });
    expect([answer.status, (JSON.parse(answer.body) as { error: { code: string } }).error.code]).toEqual([
      405,
      'method_not_allowed',
    ]);
  });
});
