/**
 * The gateway's routes: one table of path, method and handler for the public listener and
 * one for the admin listener (which helper modules mount handlers into: `/status`,
 * `/metrics`), matched in order. Anything else is 404 with a stable code, a wrong method 405.
 */
import type { FetchHandler, RequestContext } from '../server/fetch-handler.js';

export interface Route {
  /** `/healthz`, or a prefix ending in `/*` (`/iojs/*`, `/decisions/*`). */
  path: string;
  /** Methods taken; others are 405. Undefined: the handler decides (the proxy, the endpoint). */
  methods?: readonly string[];
  handler: FetchHandler;
}

const error = (status: number, code: string, headers: Record<string, string> = {}) =>
  Response.json({ error: { code } }, { status, headers: { 'cache-control': 'no-store', ...headers } });

/** The paths `route.path` matches: itself, or everything under its prefix. */
const matches = (route: Route, path: string) =>
  route.path.endsWith('/*') ? path.startsWith(route.path.slice(0, -1)) : path === route.path;

/** One handler of a list of routes. */
export function router(routes: readonly Route[]): FetchHandler {
  return (request: Request, context?: RequestContext) => {
    const path = new URL(request.url).pathname;
    const route = routes.find((candidate) => matches(candidate, path));
    if (!route) return error(404, 'not_found');
    if (route.methods && !route.methods.includes(request.method))
      return error(405, 'method_not_allowed', { allow: route.methods.join(', ') });
    return route.handler(request, context);
  };
}
