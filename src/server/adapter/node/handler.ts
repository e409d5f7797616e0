/**
 * Node adapter: runs a web-standard `Request -> Response` handler on
 * `http.createServer` or as Express middleware. It imports nothing from Node at run time
 * (types only), so that the server entry loads on runtimes without Node's modules (workerd).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bodyTimedOut, isBodyTimeout, plainAddress } from '../../http.js';
import { logError } from '../../errors.js';
import { MESSAGE_PREFIX, nodeMessages } from '../../messages.js';
import { takeNodeBody } from '../../direct-body.js';
import { validHost } from '../../host.js';

export { validHost };

/**
 * What the Node adapter knows beyond the Request: the client's address. A runtime's own
 * second argument (Next.js's `{ params }`, a Worker's `env`) is accepted and ignored.
 */
export interface RequestContext {
  clientAddress?: string;
  [other: string]: unknown;
}

export type FetchHandler = (request: Request, context?: RequestContext) => Response | Promise<Response>;

export type NodeHandler = (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => void;

/** A request the adapter refuses before any handler sees it (a malformed Host, a method no web Request can carry). */
export class BadRequestError extends Error {
  override readonly name = 'BadRequestError';
  constructor(
    readonly code: 'bad_host' | 'bad_request_target' | 'body_already_read' | 'method_not_allowed',
    message: string,
    /** The HTTP status `toNodeHandler` answers with. */
    readonly status: 400 | 405 = 400,
  ) {
    super(message);
  }

  /** The server's own set-up is wrong (a parser ate the body), not the client's request: logged, not only answered. */
  get setUpFault(): boolean {
    return this.code === 'body_already_read';
  }
}

/** Methods the Fetch standard forbids in a Request: `new Request()` throws on them. */
const FORBIDDEN_METHODS = /^(CONNECT|TRACE|TRACK)$/i;

/**
 * Builds a web Request from a Node request; the signal aborts when the client goes
 * away. Throws `BadRequestError` for a malformed Host, which `toNodeHandler` answers with 400.
 */
export function toRequest(req: IncomingMessage, res: ServerResponse): Request {
  const { body, _body: parserRan } = req as IncomingMessage & { body?: unknown; _body?: boolean };
  return webRequest(req, res, { body, parserRan: parserRan === true });
}

/**
 * What a framework's body parser left, if one ran: Express leaves it on the Node request,
 * Fastify on its own request object.
 */
export interface ParsedBody {
  body: unknown;
  /** The framework says its parser ran, whether or not the stream reads as ended. */
  parserRan: boolean;
}

/** `toRequest` with the parsed body given: the part the Node and Fastify adapters share. */
export function webRequest(req: IncomingMessage, res: ServerResponse, parsed: ParsedBody): Request {
  if (FORBIDDEN_METHODS.test(req.method ?? ''))
    throw new BadRequestError('method_not_allowed', nodeMessages.methodNotServed(req.method), 405);
  const encrypted = (req.socket as { encrypted?: boolean }).encrypted === true;
  const host = req.headers.host ?? 'localhost';
  if (!validHost(host)) throw new BadRequestError('bad_host', nodeMessages.badHost);
  // The target is appended to the origin, never resolved against it: "//other.host/x" stays a path.
  let target = req.url ?? '/';
  if (!target.startsWith('/')) {
    try {
      const absolute = new URL(target); // absolute-form, as sent to proxies: only its path counts
      target = absolute.pathname + absolute.search;
    } catch {
      throw new BadRequestError('bad_request_target', nodeMessages.badTarget);
    }
  }
  const url = new URL(`${encrypted ? 'https' : 'http'}://${host}${target}`);
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  let body: BodyInit | ReadableStream | undefined;
  if (hasBody) {
    const rewritten = alreadyParsed(req, parsed);
    if (rewritten !== undefined) {
      body = rewritten;
      headers.delete('content-length'); // the body was written anew
    } else body = webStreamOf(req);
  }
  return new Request(url, {
    method: req.method ?? 'GET',
    headers,
    signal: controller.signal,
    ...(body === undefined ? {} : { body, duplex: 'half' }),
  });
}

/** The request body as a web stream, read as the handler reads it (backpressure kept). */
function webStreamOf(req: IncomingMessage): ReadableStream<Uint8Array> {
  const chunks = req[Symbol.asyncIterator]() as AsyncIterator<Uint8Array, undefined>;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await chunks.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      await chunks.return?.();
    },
  });
}

/**
 * A body a framework's parser already read (Express's `express.json()` or
 * `express.urlencoded()` before the handler), written back in its own media type, so
 * that the handler applies the same limits and checks. Undefined when the stream is
 * still unread. A stream that was read without leaving a body cannot be recovered.
 */
function alreadyParsed(
  req: IncomingMessage,
  { body, parserRan }: ParsedBody,
): string | Uint8Array<ArrayBuffer> | undefined {
  if (!req.readableEnded && !parserRan) return undefined;
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return new Uint8Array(body);
  const type = req.headers['content-type'] ?? '';
  if (body && typeof body === 'object') {
    if (/^application\/x-www-form-urlencoded\b/i.test(type))
      return new URLSearchParams(body as Record<string, string>).toString();
    if (/\bjson\b/i.test(type)) return JSON.stringify(body);
  }
  throw new BadRequestError('body_already_read', nodeMessages.bodyAlreadyRead);
}

/** Writes a web Response to a Node response, streaming its body. */
export async function writeResponse(response: Response, res: ServerResponse, method = 'GET'): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, key) => {
    if (key !== 'set-cookie') headers[key] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  res.writeHead(response.status, response.statusText, headers);
  if (!response.body || method === 'HEAD') {
    await response.body?.cancel();
    res.end();
    return;
  }
  // A body that stands for a Node stream (the proxy's answer from node:http) is piped from
  // it; a failure on either side destroys the other, as below. (Not `pipeline()`: on Node 20
  // it makes an AbortController and a DOMException per call, 4 % of the proxy's CPU.)
  const direct = takeNodeBody(response.body);
  if (direct) {
    const { source, done } = direct;
    await new Promise<void>((resolve) => {
      // A source that failed before it got here has no error left to emit.
      if (source.errored) res.destroy();
      source.on('error', () => res.destroy());
      // 'close' follows 'finish', or a destroy: the client went away, or the source broke. A
      // source that ended is left as it is by destroy() (an upstream answer read to its end
      // keeps its socket for the next request).
      res.once('close', () => {
        source.destroy();
        done();
        resolve();
      });
      source.pipe(res);
    });
    return;
  }
  const reader = response.body.getReader();
  res.on('close', () => void reader.cancel().catch(() => {}));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await new Promise((resolve) => res.once('drain', resolve));
    }
    res.end();
  } catch {
    res.destroy(); // the upstream body broke: drop the connection rather than send a truncated 200
  }
}

export interface NodeHandlerOptions {
  /** Told of each request cut because its body took too long. Default: one line on the console. */
  onError?: (error: unknown) => void;
}

/**
 * Wraps a fetch-style handler for Node. A body that did not arrive in time (`BodyTimeoutError`
 * from `readLimited`) is answered 408 and the connection closed; any other exception becomes
 * a bare 500 (or goes to Express's `next`), never a hanging request and never a stack trace.
 */
export function toNodeHandler(handler: FetchHandler, options: NodeHandlerOptions = {}): NodeHandler {
  const onError = options.onError ?? logError;
  return (req, res, next) => {
    void (async () => {
      let request: Request;
      try {
        request = toRequest(req, res);
      } catch (error) {
        if (!(error instanceof BadRequestError)) throw error;
        if (error.setUpFault) console.error(`${MESSAGE_PREFIX}${error.message} (${error.code})`);
        res.writeHead(error.status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        res.end(JSON.stringify({ error: { code: error.code, message: error.message } }));
        return;
      }
      let response: Response;
      try {
        response = await handler(request, { clientAddress: plainAddress(req.socket.remoteAddress ?? '') });
      } catch (error) {
        if (!isBodyTimeout(error)) throw error;
        onError(error);
        response = bodyTimedOut(error);
      }
      // A body still arriving that the handler did not read (a refusal before it, or over its
      // size): close the connection after the answer rather than drain it for as long as the
      // client cares to send.
      if (!req.complete) res.setHeader('connection', 'close');
      await writeResponse(response, res, request.method);
    })().catch((error: unknown) => {
      if (next) return next(error);
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(nodeMessages.internalError);
      } else res.destroy();
    });
  };
}
