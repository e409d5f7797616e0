/**
 * `blackbox-capture/server/status`: what the on-call sees. `createStatusMonitor` keeps the
 * time series and the fleet's reporter lease; `createMetricsHandler` answers the Prometheus
 * text exposition and `createStatusHandler` the status page, both web-standard fetch handlers
 * with no credentials of their own: mount them behind the shop's authentication, or on a
 * listener only operators reach (docs/operating.md#metrics-and-the-status-page).
 */
import { statusMessages } from '../messages.js';
import { checkOptions } from '../options-table.js';
import { METRICS_HANDLER_OPTIONS, STATUS_HANDLER_OPTIONS } from './settings.js';
import { counterValues } from './tally.js';
import { exposition } from './exposition.js';
import { statusPage, type PageInput } from './page.js';
import type { StatusMonitor } from './monitor.js';
import { defaultInstanceId } from '../metrics.js';
import type { DoctorOptions } from '../../doctor/index.js';

export { createStatusMonitor, type StatusMonitor, type StatusMonitorOptions } from './monitor.js';
export { METRICS, prometheusName, type MetricDefinition } from './names.js';

const refuse = (status: number, code: string, message: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ error: code, message }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });

const readOnly = (request: Request) =>
  request.method === 'GET' || request.method === 'HEAD'
    ? undefined
    : refuse(405, 'method_not_allowed', statusMessages.notAllowed, { allow: 'GET, HEAD' });

export interface MetricsHandlerOptions {
  /** The monitor whose reporter lease says whether this instance writes the shared queue's gauges. */
  monitor: StatusMonitor;
}

/** `GET /metrics`: the Prometheus text exposition of this process's counters and its queues' gauges. */
export function createMetricsHandler(options: MetricsHandlerOptions): (request: Request) => Promise<Response> {
  checkOptions(options, METRICS_HANDLER_OPTIONS);
  const { monitor } = options;
  return async (request) => {
    const refused = readOnly(request);
    if (refused) return refused;
    const body = exposition(counterValues(), await monitor.readings());
    return new Response(request.method === 'HEAD' ? null : body, {
      headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' },
    });
  };
}

export interface StatusHandlerOptions {
  monitor: StatusMonitor;
  /** This instance's name on the page. Default hostname:pid. */
  instanceId?: string;
  /**
   * The doctor's checks on the shop's own checkout page, run from the page's button: the URL is
   * this option's, never the request's, so the page cannot be made to fetch anything else.
   */
  doctor?: { url: string } & Omit<DoctorOptions, 'fetch' | 'lookup'>;
  /**
   * More figures for the page's first table, read on each request as [label, value] rows: the
   * gateway's decisions not delivered (docs/gateway.md#metrics). It answers its own failures
   * with a row that says so, never a made-up value.
   */
  figures?: () => Promise<ReadonlyArray<readonly [string, string]>>;
}

/** The page forbids everything but its own inline style and its form back to itself. */
const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/** `GET /status`: the status page; `?doctor=run` runs the doctor's checks on `doctor.url` first. */
export function createStatusHandler(options: StatusHandlerOptions): (request: Request) => Promise<Response> {
  checkOptions(options, STATUS_HANDLER_OPTIONS);
  const { monitor } = options;
  return async (request) => {
    const refused = readOnly(request);
    if (refused) return refused;
    const input: PageInput = {
      at: Date.now(),
      instance: options.instanceId ?? (await defaultInstanceId()),
      reporter: monitor.reporter,
      series: await monitor.series(),
      ...(options.doctor ? { doctorUrl: options.doctor.url } : {}),
      ...(options.figures ? { figures: await options.figures() } : {}),
    };
    if (new URL(request.url).searchParams.get('doctor') === 'run') {
      if (!options.doctor) return refuse(404, 'doctor_not_set_up', statusMessages.noDoctor);
      input.doctor = await runDoctorChecks(options.doctor);
    }
    return new Response(request.method === 'HEAD' ? null : statusPage(input), { headers: PAGE_HEADERS });
  };
}

/** The command's checks, with its resolver: the same report `npx blackbox-capture doctor <url>` prints. */
async function runDoctorChecks({ url, ...doctorOptions }: NonNullable<StatusHandlerOptions['doctor']>) {
  // Loaded on the first run only: the doctor and its HTML tokenizer stay out of the page's cost.
  const { checkPage } = await import('../../doctor/index.js');
  return checkPage(url, doctorOptions);
}
