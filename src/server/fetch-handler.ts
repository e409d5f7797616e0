/**
 * The web-standard handler every part of the kit is (`Request -> Response`), and what a
 * runtime's adapter passes beside the request. Here, not in an adapter, so that the parts
 * that run on every runtime never import an adapter's module (src/server/adapter/node/ is
 * Node's; docs/architecture.md).
 */

/**
 * What the Node adapter knows beyond the Request: the client's address. A runtime's own
 * second argument (Next.js's `{ params }`, a Worker's `env`) is accepted and ignored.
 */
export interface RequestContext {
  clientAddress?: string;
  /** The scheme the shopper used, when a trusted front said it (X-Forwarded-Proto): the request's own otherwise. */
  clientProto?: 'http' | 'https';
  [other: string]: unknown;
}

export type FetchHandler = (request: Request, context?: RequestContext) => Response | Promise<Response>;
