/**
 * The gateway's routes: one table of path, method and handler for the public listener and
 * one for the admin listener (which helper modules mount handlers into: `/status`,
 * `/metrics`), matched in order. Anything else is 404 with a stable code, a wrong method 405.
 * Every answer is counted (blackbox_capture_gateway_requests_total, by route and status; a
 * refusal also in blackbox_capture_gateway_refusals_total, by code: docs/gateway.md#metrics).
 */
import type { FetchHandler, RequestContext } from '../server/index.js';
import { count, isRelayed, readLimited } from '../server/parts.js';
import { refusalTold } from './log.js';

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

/** A refusal no handler logged in its own words: what the log says of it. */
export type RefusalListener = (refusal: { route: string; method: string; status: number; code: string }) => void;

/**
 * One handler of a list of routes, each answer counted by route and status, each refusal by
 * its code. Each refusal (4xx) its handler did not log goes to `onRefusal`: the gateway logs
 * what it refuses. A 5xx is a failure the kit tells through its onError, not a refusal, but
 * for those in REFUSED_UNTOLD_5XX.
 */
/** 5xx answers that refuse a request without a failure to tell (a closing instance's): logged as refusals. */
const REFUSED_UNTOLD_5XX: readonly string[] = ['shutting_down'];

export function router(routes: readonly Route[], onRefusal?: RefusalListener): FetchHandler {
  const answer = (request: Request, context?: RequestContext): [string, Response | Promise<Response>] => {
    const path = new URL(request.url).pathname;
    const route = routes.find((candidate) => matches(candidate, path));
    if (!route) return ['unmatched', error(404, 'not_found')];
    if (route.methods && !route.methods.includes(request.method))
      return [route.path, error(405, 'method_not_allowed', { allow: route.methods.join(', ') })];
    return [route.path, route.handler(request, context)];
  };
  return async (request: Request, context?: RequestContext) => {
    const [route, answered] = answer(request, context);
    const response = await answered;
    count('requests', { route, status: String(response.status) });
    if (response.status >= 400) {
      // The collector's words are not the gateway's: its answers counted by status alone.
      const code = isRelayed(response) ? `status_${response.status}` : await codeOf(response);
      count('refusals', { code });
      if ((response.status < 500 || REFUSED_UNTOLD_5XX.includes(code)) && !refusalTold(response))
        onRefusal?.({ route, method: request.method, status: response.status, code });
    }
    return response;
  };
}

/** The most of a refusal's body read for its code: the kit's error bodies are a few dozen bytes. */
const CODE_BODY_MAX_BYTES = 4096;

/** A refusal's `error.code` (the kit's and the gateway's answers), or `status_<n>` for one without. */
async function codeOf(response: Response): Promise<string> {
  if (!/^application\/json\b/.test(response.headers.get('content-type') ?? '')) return `status_${response.status}`;
  try {
    // A body past the bytes is undefined, which does not parse: its status, as for any other.
    const body = JSON.parse((await readLimited(response.clone(), CODE_BODY_MAX_BYTES)) ?? '') as {
      error?: { code?: unknown } | string;
    };
    const code = typeof body.error === 'string' ? body.error : body.error?.code;
    // Codes are the kit's own words: anything else is not a label (bounded series).
    return typeof code === 'string' && /^[a-z_]{1,40}$/.test(code) ? code : `status_${response.status}`;
  } catch {
    return `status_${response.status}`;
  }
}
