/**
 * Node adapter: runs a web-standard `Request -> Response` handler on
 * `http.createServer` or as Express middleware. It imports nothing from Node at run time
 * (types only), so that the server entry loads on runtimes without Node's modules (workerd).
 * The Request is made by request.ts, the Response written by response.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bodyTimedOut, isBodyTimeout } from '../../net/http.js';
import { forwardedAddress, forwardedProto, forwardIgnored } from './forwarded.js';
import { onErrorOf, safeOnError } from '../../errors.js';
import type { FetchHandler } from '../../fetch-handler.js';
import { MESSAGE_PREFIX, nodeMessages } from '../../messages.js';
import { BadRequestError, bodyLeft, toRequest } from './request.js';
import { writeResponse } from './response.js';

export type NodeHandler = (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => void;

export interface NodeHandlerOptions {
  /** Told of each request cut because its body took too long. Default: one line on the console. */
  onError?: (error: unknown) => void;
  /**
   * Fronts (addresses, CIDR ranges) whose X-Forwarded-For names the shopper: a request from
   * one of them gets the address it appended as `clientAddress` (forwarded.ts). Default none:
   * the socket's address, whatever the header says.
   */
  trustedFronts?: readonly string[];
  /**
   * Told of each request that carries X-Forwarded-For from an address not among
   * `trustedFronts`: its header is ignored. A front left out of the list makes every shopper
   * behind it one address, which nothing else would say (the gateway logs it).
   */
  onForwardIgnored?: (socketAddress: string) => void;
}

/** An unread body is read to its end before the answer when it declares at most this many bytes, or when none is declared, up to them. */
const DRAIN_MAX_BYTES = 64 * 1024;
/** ...and for this long at most: one that arrives slower is left, and its connection closed. */
const DRAIN_MS = 1000;

/**
 * Reads a small remainder of a body the handler did not read to its end: one it left unread,
 * or one its reader cancelled (refused by counting: bodyLeft). A socket closed with bytes
 * unread is reset, and a front still sending them (Caddy, nginx) may take the reset for the
 * answer and answer 502: the shopper's 413 or 403 would be lost (docs/server.md#errors).
 */
async function drainSmallBody(req: IncomingMessage, request: Request): Promise<void> {
  const body = request.body;
  const left = bodyLeft(request);
  // A body arrived whole (req.complete) reads at once to its end: no test of it is needed.
  // Stryker disable next-line ConditionalExpression,LogicalOperator: an absent or locked body throws at getReader, which the caller's catch makes the same return
  if (!body || (body.locked && !left) || Number(req.headers['content-length'] ?? 0) > DRAIN_MAX_BYTES) return;
  // The Node chunks kept behind a cancelled body, or the body not read yet.
  const reader = left ? undefined : body.getReader();
  const next = () => (reader ? reader.read() : left!.next());
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), DRAIN_MS)));
  try {
    // Left pending when late: cancelling would destroy the socket before the answer is written.
    for (let size = 0; size <= DRAIN_MAX_BYTES;) {
      const step = await Promise.race([next(), late]);
      // Stryker disable next-line ConditionalExpression,LogicalOperator: a step past the end or the time throws at its value, which the caller's catch makes the same return
      if (!step || step.done) return;
      size += step.value.byteLength;
    }
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Wraps a fetch-style handler for Node. A body that did not arrive in time (`BodyTimeoutError`
 * from `readLimited`) is answered 408 and the connection closed; any other exception becomes
 * a bare 500 (or goes to Express's `next`), never a hanging request and never a stack trace.
 */
export function toNodeHandler(handler: FetchHandler, options: NodeHandlerOptions = {}): NodeHandler {
  const onError = onErrorOf(options.onError);
  const onForwardIgnored = options.onForwardIgnored && safeOnError(options.onForwardIgnored);
  const clientAddress = forwardedAddress(options.trustedFronts ?? []);
  const clientProto = forwardedProto(options.trustedFronts ?? []);
  const ignored = forwardIgnored(options.trustedFronts ?? []);
  return (req, res, next) => {
    let request: Request | undefined;
    void (async () => {
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
        const socket = req.socket.remoteAddress ?? '';
        const proto = clientProto(socket, req.headers['x-forwarded-proto']);
        const ignoredFrom = ignored(socket, req.headers['x-forwarded-for']);
        if (ignoredFrom !== undefined) onForwardIgnored?.(ignoredFrom);
        response = await handler(request, {
          clientAddress: clientAddress(socket, req.headers['x-forwarded-for']),
          ...(proto ? { clientProto: proto } : {}),
        });
      } catch (error) {
        if (!isBodyTimeout(error)) throw error;
        onError(error);
        response = bodyTimedOut(error);
      }
      // A body still arriving that the handler did not read to its end (a refusal before it,
      // or over its size by Content-Length or by counting): a small one is read to its end
      // first, briefly; otherwise, and for a body already cut by its time limit (a 408, thrown
      // or answered by the kit's handlers), the connection is closed after the answer rather
      // than drained for as long as the client cares to send.
      // A client gone mid-drain (the read rejects: aborted) is no failure of the answer's.
      if (response.status !== 408) await drainSmallBody(req, request).catch(() => {});
      if (!req.complete) res.setHeader('connection', 'close');
      await writeResponse(response, res, request.method);
    })().catch(async (error: unknown) => {
      // What is left of a body the handler cancelled (bodyLeft): read briefly to its end, as
      // before an answer, else the request ended. Express's error handler waits for the request
      // to end before it answers, and a body kept for the drain would never end by itself.
      if (request && bodyLeft(request)) {
        await drainSmallBody(req, request).catch(() => {});
        // Stryker disable next-line ConditionalExpression: a request read to its end is over: destroying it then cuts nothing
        if (!req.complete) req.destroy();
      }
      if (next) return next(error);
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(nodeMessages.internalError);
      } else res.destroy();
    });
  };
}
