/**
 * The gateway's own routes beside the kit's handlers: GET /decisions/{reference} (for shops
 * that poll, behind DECISIONS_TOKEN), GET /openapi.json, GET /healthz, and the admin
 * listener's /status and /metrics.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createMetricsHandler, createStatusHandler, type StatusMonitor } from '../server/status/index.js';
import { gaugeFamily, settleWithin } from '../server/parts.js';
import type { Outbox } from './outbox.js';
import type { Route } from './routes.js';
import { refusedEvent, toldRefusal, type Log } from './log.js';

const noStore = { 'cache-control': 'no-store' };
const refusal = (status: number, code: string, headers: Record<string, string> = {}) =>
  Response.json({ error: { code } }, { status, headers: { ...noStore, ...headers } });

const digest = (text: string) => createHash('sha256').update(text).digest();

/** GET /decisions/{customerInternalReference}: the order's latest decision and whether the shop has it. */
export function decisionsRoute(outbox: Outbox, token: string | undefined, log: Log): Route {
  const expected = token === undefined ? undefined : digest(`Bearer ${token}`);
  return {
    path: '/decisions/*',
    methods: ['GET', 'HEAD'],
    async handler(request) {
      // Unset DECISIONS_TOKEN: the route is not there.
      if (!expected) return refusal(404, 'not_found');
      // Compared as digests, in constant time: a wrong bearer learns nothing of the right one.
      if (!timingSafeEqual(digest(request.headers.get('authorization') ?? ''), expected)) {
        log('refused a decisions poll: decisions_unauthorized', refusedEvent('decisions_unauthorized'));
        return toldRefusal(refusal(401, 'decisions_unauthorized', { 'www-authenticate': 'Bearer' }));
      }
      let reference: string;
      try {
        reference = decodeURIComponent(new URL(request.url).pathname.slice('/decisions/'.length));
      } catch {
        // Malformed percent-encoding (`a%zz`): the client's mistake, said as such, never a 500.
        log('refused a decisions poll: invalid_reference', refusedEvent('invalid_reference'));
        return toldRefusal(refusal(400, 'invalid_reference'));
      }
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

/**
 * The admin listener's routes: the status page and the Prometheus metrics of
 * blackbox-capture/server/status (docs/operating.md#metrics-and-the-status-page), the metrics
 * with the outbox's gauges after the kit's (docs/gateway.md#metrics).
 */
export function adminRoutes(monitor: StatusMonitor, outbox: Outbox, closing: () => boolean): Route[] {
  const kitMetrics = createMetricsHandler({ monitor });
  return [
    {
      path: '/status',
      methods: ['GET', 'HEAD'],
      handler: createStatusHandler({ monitor, figures: async () => [undeliveredRow(await outboxFigures(outbox))] }),
    },
    {
      path: '/metrics',
      methods: ['GET', 'HEAD'],
      async handler(request) {
        const answer = await kitMetrics(request);
        if (request.method === 'HEAD') return answer;
        return new Response((await answer.text()) + (await outboxGauges(outbox)), { headers: answer.headers });
      },
    },
    healthRoute(closing),
  ];
}

/** How long the outbox's figures may take for a scrape, in ms: a store that does not answer leaves them out. */
const FIGURES_MS = 2000;

/** The outbox's depth and its oldest undelivered age in seconds (0 when none waits); undefined when its store did not answer in time. */
async function outboxFigures(outbox: Outbox): Promise<{ depth: number; ageSeconds: number } | undefined> {
  const figures = await settleWithin(
    () => outbox.figures(),
    FIGURES_MS,
    () => new Error('the outbox did not answer'),
  ).catch(() => undefined);
  if (!figures) return undefined;
  const age = figures.oldestAt === undefined ? 0 : Math.max(0, (Date.now() - figures.oldestAt) / 1000);
  return { depth: figures.depth, ageSeconds: Math.round(age) };
}

async function outboxGauges(outbox: Outbox): Promise<string> {
  const figures = await outboxFigures(outbox);
  // Left out, never a made-up 0: an alert on them must see no data, not "nothing waits".
  if (!figures) return '';
  return (
    gaugeFamily('outboxDepth', [{ labels: {}, value: figures.depth }]) +
    gaugeFamily('outboxOldest', [{ labels: {}, value: figures.ageSeconds }])
  );
}

/**
 * The status page's row beside the alert BlackboxCaptureDecisionsUndelivered
 * (docs/operating.md#alerts-and-the-dashboard): how many decisions wait for the shop's receiver, the oldest's age.
 */
export function undeliveredRow(figures: { depth: number; ageSeconds: number } | undefined): [string, string] {
  const label = 'Decisions not delivered (the outbox)';
  if (!figures) return [label, "unknown: the outbox's store did not answer within 2 s"];
  return [label, figures.depth === 0 ? '0' : `${figures.depth}, the oldest ${figures.ageSeconds} s old`];
}
