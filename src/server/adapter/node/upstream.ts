/**
 * The first-party proxy's upstream calls on Node: `http.request` / `https.request` with a
 * keep-alive agent per origin, behind the small part of the `fetch` signature the proxy
 * uses. Measured (bench, Node proxy in its own process): the global fetch (undici) cost the
 * proxy about half its throughput against nginx; this path keeps the handler web-standard
 * at its surface. Loaded lazily, and only on Node: edge runtimes keep their fetch.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { proxyMessages } from '../../messages.js';
import { forget, readThrough, standFor } from '../../net/direct-body.js';
import { BadUpstreamAnswerError, usableStatus } from '../../proxy/upstream-answer.js';
import type { UpstreamInit } from '../../proxy/upstream.js';
import type { NodeBody } from './body.js';

const DECODERS: Record<string, (() => NodeJS.ReadWriteStream & Readable) | undefined> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

const agents = new Map<string, HttpAgent>();
const agentFor = (url: URL) => {
  let agent = agents.get(url.origin);
  if (!agent) {
    // Sockets stay open between requests: connection set-up is most of a small request's cost.
    const options = { keepAlive: true, maxSockets: 256, maxFreeSockets: 64, scheduling: 'lifo' as const };
    agent = url.protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options);
    agents.set(url.origin, agent);
  }
  return agent;
};

/**
 * A web stream over `body` that converts it only when first read: the Node adapter writes
 * it from `body` directly (body.ts), and the conversion is a third of the cost of a
 * small answer.
 */
function webView(body: Readable): ReadableStream<Uint8Array> {
  const record: NodeBody = { source: body, done: () => {} };
  const stream = readThrough(
    () => {
      forget(stream); // read through the web stream from now on: never handed over half read
      return Readable.toWeb(body) as ReadableStream<Uint8Array>;
    },
    () => record.done(), // read when called: withDone() may have added to it
    () => void body.destroy(),
  );
  standFor(stream, record);
  return stream;
}

/**
 * An answer's headers, each as sent (`rawHeaders`), or from the parsed `headers` where the
 * runtime leaves `rawHeaders` empty (a node:http built on fetch, as workerd's).
 */
export function headersOf(message: Pick<IncomingMessage, 'rawHeaders' | 'headers'>): Headers {
  const out = new Headers();
  const raw = message.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) out.append(raw[i]!, raw[i + 1]!);
  if (raw.length === 0)
    for (const [name, value] of Object.entries(message.headers))
      for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) out.append(name, one);
  return out;
}

/** A reason phrase a web Response accepts (RFC 9112 4: tab, space, visible and obs-text). */
const REASON = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * A Node answer as a web Response whose body streams. Throws `BadUpstreamAnswerError` for a
 * status no web Response can carry (a 1xx, or outside 200-599); drops an unusable reason.
 */
function toWebResponse(response: IncomingMessage, method: string): Response {
  const status = response.statusCode ?? 0;
  if (!usableStatus(status)) throw new BadUpstreamAnswerError(proxyMessages.unusableStatus(status));
  const out = headersOf(response);
  const empty = method === 'HEAD' || [204, 205, 304].includes(status);
  // Stryker disable next-line ConditionalExpression: a body's consumer attaches in this same tick, so resuming early loses nothing
  if (empty) response.resume();
  // Stryker disable next-line StringLiteral: no Content-Encoding finds no decoder, whatever the fallback text
  const decoder = DECODERS[(response.headers['content-encoding'] ?? '').toLowerCase()];
  const body: Readable = decoder ? response.pipe(decoder()) : response;
  // A body can fail before anyone reads it (a truncated gzip is found out as it ends): an
  // 'error' nobody listens to would end the process. The stream is destroyed with the error,
  // which its reader finds (the web view rejects, the Node adapter drops the connection).
  body.on('error', () => {});
  if (decoder) {
    response.once('error', (error) => body.destroy(error));
    out.delete('content-encoding');
    out.delete('content-length');
  }
  const statusText = REASON.test(response.statusMessage ?? '') ? response.statusMessage : undefined;
  return new Response(empty ? null : webView(body), { status, ...(statusText ? { statusText } : {}), headers: out });
}

/**
 * The upstream's answer as a web Response whose body streams. It asks for identity; an
 * upstream that compresses anyway is decoded, as fetch would.
 */
export function nodeUpstream(url: URL, init: UpstreamInit): Promise<Response> {
  const headers: Record<string, string> = {};
  init.headers.forEach((value, name) => (headers[name] = value));
  headers['accept-encoding'] = 'identity';
  return send(url, init, headers, true);
}

function send(url: URL, init: UpstreamInit, headers: Record<string, string>, mayRetry: boolean): Promise<Response> {
  return new Promise((resolve, reject) => {
    if (init.signal.aborted) return reject(init.signal.reason as Error);
    // One request for both schemes: the agent decides (an https agent speaks TLS). A body
    // written with end() alone gets its Content-Length from Node.
    const request = httpRequest(
      url,
      { method: init.method, headers, agent: agentFor(url) },
      (response: IncomingMessage) => {
        // Whatever the collector (or a proxy in front of it) sends must not throw out of this
        // callback: nothing would catch it, and the process would end.
        try {
          resolve(toWebResponse(response, init.method));
        } catch (error) {
          response.destroy();
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      },
    );
    // Rejected here, not only through 'error': Deno's node:http (built on fetch) destroys
    // the request without emitting one, and the proxy would wait past its time limit.
    const abort = () => {
      const reason = init.signal.reason instanceof Error ? init.signal.reason : new Error(proxyMessages.aborted);
      request.destroy(reason);
      reject(reason);
    };
    init.signal.addEventListener('abort', abort);
    request.once('close', () => init.signal.removeEventListener('abort', abort));
    request.once('error', (error: NodeJS.ErrnoException) => {
      // A kept-alive socket the collector closed just as it was reused: the request never
      // reached it. Sent again once on a new socket, for the methods that may be (as Node's
      // documentation advises); anything else is the collector's answer to give.
      const stale = request.reusedSocket && error.code === 'ECONNRESET' && !init.signal.aborted;
      if (stale && mayRetry && (init.method === 'GET' || init.method === 'HEAD'))
        resolve(send(url, init, headers, false));
      else reject(error);
    });
    request.end(init.body);
  });
}
