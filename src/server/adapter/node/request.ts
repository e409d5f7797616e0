/**
 * The Node adapter's first half: a web Request from a Node request (`toRequest`), or from
 * what a framework's parser left (`webRequest`, which the Fastify adapter uses too), and the
 * refusals no handler sees (`BadRequestError`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { nodeMessages } from '../../messages.js';
import { validHost } from '../../net/host.js';

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
  return webRequest(req, res, { body, parserRan: parserRan === true }, true);
}

/** The Node stream's chunks left behind a web body its reader cancelled, by Request (`toRequest`'s only). */
const leftBehind = new WeakMap<Request, AsyncIterator<Uint8Array, undefined>>();

/**
 * What is left of the body of a Request `toRequest` made once its reader cancelled it (a
 * refusal by counting, a time limit): the adapter's to read before its answer (handler.ts).
 */
export const bodyLeft = (request: Request): AsyncIterator<Uint8Array, undefined> | undefined => leftBehind.get(request);

/**
 * What a framework's body parser left, if one ran: Express leaves it on the Node request,
 * Fastify on its own request object.
 */
export interface ParsedBody {
  body: unknown;
  /** The framework says its parser ran, whether or not the stream reads as ended. */
  parserRan: boolean;
}

/**
 * `toRequest` with the parsed body given: the part the Node and Fastify adapters share.
 * `keepLeft`: a cancelled body leaves the Node stream as it is (bodyLeft), for the caller to
 * read or close; otherwise the cancel ends it.
 */
export function webRequest(req: IncomingMessage, res: ServerResponse, parsed: ParsedBody, keepLeft = false): Request {
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
    } else body = webStreamOf(req, keepLeft ? (chunks) => leftBehind.set(request, chunks) : undefined);
  }
  const request = new Request(url, {
    method: req.method ?? 'GET',
    headers,
    signal: controller.signal,
    ...(body === undefined ? {} : { body, duplex: 'half' }),
  });
  return request;
}

/**
 * The request body as a web stream, read as the handler reads it (backpressure kept). A
 * cancel ends the Node stream, or hands its chunks to `keep`: ending it closes the socket,
 * and a front still sending the body would take the reset for the answer.
 */
function webStreamOf(
  req: IncomingMessage,
  keep?: (chunks: AsyncIterator<Uint8Array, undefined>) => void,
): ReadableStream<Uint8Array> {
  const chunks = req[Symbol.asyncIterator]() as AsyncIterator<Uint8Array, undefined>;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await chunks.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      if (keep) keep(chunks);
      // Stryker disable next-line OptionalChaining: a Readable's iterator always has return
      else await chunks.return?.();
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
