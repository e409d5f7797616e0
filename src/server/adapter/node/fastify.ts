/**
 * Fastify adapter: runs a web-standard `Request -> Response` handler as a Fastify route
 * handler. Fastify reads the body before the handler (its JSON and text parsers), so the
 * adapter takes the body from Fastify's request, or streams it when no parser read it;
 * the answer goes back through `reply`, so Fastify's hooks and logging see it. Types
 * only: the kit does not depend on Fastify, and the edge build stays free of Node modules.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { plainAddress } from '../../net/http.js';
import type { FetchHandler } from '../../fetch-handler.js';
import { BadRequestError, webRequest } from './request.js';
import { takeNodeBody } from './body.js';

/** What the adapter reads of Fastify's request: the Node request, the parsed body, the logger. */
export interface FastifyRequestLike {
  raw: IncomingMessage;
  body?: unknown;
  log: { level?: string; error(details: object, message: string): void; info(details: object, message: string): void };
}

/** What the adapter uses of Fastify's reply. */
export interface FastifyReplyLike {
  raw: ServerResponse;
  code(status: number): unknown;
  headers(values: Record<string, string | string[]>): unknown;
  send(payload?: unknown): unknown;
}

export interface FastifyHandlerOptions {
  /**
   * The caller's address. Default: the socket's peer, as `toNodeHandler` does; Fastify's
   * `trustProxy` does not change it. Behind a proxy you run, `(request) => request.ip` with
   * Fastify's `trustProxy` set to that proxy's address (never `true`: any client could then
   * name its own address).
   */
  clientAddress?: (request: FastifyRequestLike & { ip?: string }) => string | undefined;
}

/**
 * Wraps a fetch-style handler as a Fastify route handler:
 * `app.post('/device-risk', toFastifyHandler(deviceRisk))`. A body Fastify parsed (JSON,
 * text) is written anew in its media type and checked by the handler as its own; a body
 * no parser read (a scope whose parser passes the stream on) is streamed. A body that was
 * read and cannot be recovered is answered 400 `body_already_read` and logged.
 */
export function toFastifyHandler(
  handler: FetchHandler,
  options: FastifyHandlerOptions = {},
): (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<unknown> {
  const addressOf = options.clientAddress ?? ((request) => request.raw.socket.remoteAddress);
  return async (request, reply) => {
    let webRequestMade: Request;
    try {
      webRequestMade = webRequest(request.raw, reply.raw, {
        body: request.body,
        parserRan: request.body !== undefined,
      });
    } catch (error) {
      if (!(error instanceof BadRequestError)) throw error;
      logRefusal(request, error);
      reply.code(error.status);
      reply.headers({ 'content-type': 'application/json', 'cache-control': 'no-store' });
      return reply.send(JSON.stringify({ error: { code: error.code, message: error.message } }));
    }
    const address = addressOf(request);
    const response = await handler(webRequestMade, {
      ...(address === undefined ? {} : { clientAddress: plainAddress(address) }),
    });
    return sendResponse(response, reply);
  };
}

/**
 * A refusal goes to Fastify's logger when it has one, as Fastify logs its own: a client's
 * fault at info, a set-up fault at error. Without one a set-up fault goes to the console,
 * so that it is never silent.
 */
function logRefusal(request: FastifyRequestLike, error: BadRequestError): void {
  const details = { code: error.code, url: request.raw.url, method: request.raw.method };
  const message = `[blackbox-capture/server] ${error.message}`;
  const hasLogger = typeof request.log.level === 'string' && request.log.level !== 'silent';
  if (!error.setUpFault) request.log.info(details, message);
  else if (hasLogger) request.log.error(details, message);
  else console.error(`${message} (${error.code})`);
}

/** Status, headers (each Set-Cookie apart) and body through `reply`; the proxy's Node stream as a stream. */
function sendResponse(response: Response, reply: FastifyReplyLike): unknown {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, key) => {
    // Stryker disable next-line ConditionalExpression,StringLiteral: a Set-Cookie kept here is replaced by the list below
    if (key !== 'set-cookie') headers[key] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  reply.code(response.status);
  reply.headers(headers);
  // A HEAD's body too: Fastify's HEAD handling drops it and keeps the Content-Length.
  if (!response.body) return reply.send();
  // The proxy's answer from node:http: Fastify pipes it, and destroys it if the client goes away.
  const direct = takeNodeBody(response.body);
  if (direct) {
    reply.raw.once('close', direct.done);
    return reply.send(direct.source);
  }
  return reply.send(response.body);
}
