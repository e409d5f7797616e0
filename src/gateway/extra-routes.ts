/**
 * The gateway's own routes beside the kit's handlers: GET /decisions/{reference} (for shops
 * that poll, behind DECISIONS_TOKEN), GET /openapi.json, GET /healthz, and the admin
 * listener's placeholders for /status and /metrics (the status helpers mount theirs first).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { DeviceRiskHandler } from '../server/endpoint/handler.js';
import type { Outbox } from './outbox.js';
import type { Route } from './routes.js';

const noStore = { 'cache-control': 'no-store' };
const refusal = (status: number, code: string, headers: Record<string, string> = {}) =>
  Response.json({ error: { code } }, { status, headers: { ...noStore, ...headers } });

const digest = (text: string) => createHash('sha256').update(text).digest();

/** GET /decisions/{customerInternalReference}: the order's latest decision and whether the shop has it. */
export function decisionsRoute(outbox: Outbox, token: string | undefined, log: (line: string) => void): Route {
  const expected = token === undefined ? undefined : digest(`Bearer ${token}`);
  return {
    path: '/decisions/*',
    methods: ['GET', 'HEAD'],
    async handler(request) {
      // Unset DECISIONS_TOKEN: the route is not there.
      if (!expected) return refusal(404, 'not_found');
      // Compared as digests, in constant time: a wrong bearer learns nothing of the right one.
      if (!timingSafeEqual(digest(request.headers.get('authorization') ?? ''), expected)) {
        log('refused a decisions poll: decisions_unauthorized');
        return refusal(401, 'decisions_unauthorized', { 'www-authenticate': 'Bearer' });
      }
      const reference = decodeURIComponent(new URL(request.url).pathname.slice('/decisions/'.length));
      const record = reference ? await outbox.latest(reference) : undefined;
      if (!record) return refusal(404, 'decision_not_found');
      return Response.json(
        { ...record.event, delivered: record.deliveredAt !== undefined, webhookId: record.id },
        { headers: noStore },
      );
    },
  };
}

/**
 * The OpenAPI document (src/gateway/openapi.json, beside this module in the build: dist/), or
 * what `read` gives (the single executable's asset: sea.ts). Read once, at the first request.
 */
export function openApiRoute(read?: () => string): Route {
  let document: string | undefined;
  return {
    path: '/openapi.json',
    methods: ['GET', 'HEAD'],
    handler() {
      document ??= read ? read() : readFileSync(new URL('./openapi.json', import.meta.url), 'utf8');
      return new Response(document, { headers: { 'content-type': 'application/json', 'cache-control': 'no-cache' } });
    },
  };
}

/**
 * GET /healthz: 200 while the gateway takes checkouts, 503 `shutting_down` from SIGTERM on, so
 * that a load balancer stops sending it shoppers while its checks under way finish.
 */
export function healthRoute(closing: () => boolean): Route {
  return {
    path: '/healthz',
    methods: ['GET', 'HEAD'],
    handler: () =>
      closing()
        ? Response.json({ status: 'shutting_down' }, { status: 503, headers: { ...noStore, 'retry-after': '1' } })
        : Response.json({ status: 'ok' }, { headers: noStore }),
  };
}

/** The admin listener's own routes: placeholders until the status helpers' handlers are mounted before them. */
export function adminRoutes(endpoint: DeviceRiskHandler, closing: () => boolean): Route[] {
  return [
    {
      path: '/status',
      methods: ['GET'],
      handler: async () => Response.json({ backlog: await endpoint.backlog() }, { headers: noStore }),
    },
    {
      path: '/metrics',
      methods: ['GET'],
      handler: async () => {
        const backlog = await endpoint.backlog();
        return new Response(
          `# TYPE blackbox_capture_gateway_queued gauge\nblackbox_capture_gateway_queued ${backlog.queued}\n`,
          { headers: { 'content-type': 'text/plain; version=0.0.4', ...noStore } },
        );
      },
    },
    healthRoute(closing),
  ];
}
