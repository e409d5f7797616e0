/**
 * The demo integrator site: demo pages, the first-party proxy at /iojs and the
 * integrator endpoint, all from the server kit, in front of the emulator (or the
 * real service, by configuration). `npm run demo` runs it; the end-to-end tests
 * start it in-process.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startEmulator, type CollectionDelays, type Emulator } from '../src/emulator/index.js';
import {
  repairBlackbox,
  createCallbackHandler,
  createDeviceRiskClient,
  createDeviceRiskHandler,
  createFirstPartyProxy,
  createTokenSource,
  isDeviceRiskError,
  runDeviceRiskCheck,
  toNodeHandler,
  type CustomerMapping,
  type DeviceRiskClient,
  type DeviceRiskDetails,
} from '../src/server/index.js';
import type { DemoConfig } from './config.js';

// Resolved from the package root, so this works from demo/ and from the bundled .demo/.
const ROOT = new URL('../', import.meta.url);
const CUSTOMER_COOKIE = 'demo_customer';

export interface DemoOptions {
  /** Collection delays of the emulator (default: slow enough to watch). */
  delays?: CollectionDelays;
  /** A loader the emulator serves instead of its own (tests run the vendor's real one). */
  loaderSource?: string;
  /** Attempts of the server kit's calls (default 3). */
  clientMaxAttempts?: number;
}

export interface Demo {
  url: string;
  /** Present when the emulator plays the vendor or the service. */
  emulator?: Emulator;
  /** Where the pages point: for the records of what was used. */
  settings: { loaderUrl: string; collectorUrl: string; service: string };
  close(): Promise<void>;
}

const WATCHABLE_DELAYS: CollectionDelays = {
  fp_static: [80],
  fp_dyn: [160, 420],
  tp: [120, 300],
  tp_static: [120],
  tp_dyn: [300],
};

/** The header every demo page shares. */
const HEADER =
  '<header><strong>blackbox-capture demo</strong><nav><a href="/checkout-element">Checkout</a><a href="/checkout">Script tag</a><a href="/checkout-adopt">Adopt mode</a><a href="/spa">SPA</a><a href="/playground">Playground</a></nav></header>';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The playground's decision switch. */
const FORCED_DECISIONS: Record<string, { type: string; label: string; alerts: string[]; score: number }> = {
  PASSED: { type: 'PASSED', label: 'OK', alerts: [], score: 5 },
  WARNING: { type: 'WARNING', label: 'SUSPICIOUS', alerts: ['IP Mismatch'], score: 55 },
  REJECTED: { type: 'REJECTED', label: 'HIGH_RISK', alerts: ['Device Risk Global', 'IP Mismatch'], score: 96 },
};

/** The server-side answer, as the demo shows it: decision, label, alerts, how and when it came, the raw details. */
function decisionPanel(
  answer: { status: string; details?: DeviceRiskDetails; via: string; at: number } | undefined,
): string {
  const note = '<p class="server-only">Server-side information: a real shop never sends this to the browser.</p>';
  if (!answer)
    return `<div class="decision" data-decision="pending">${note}<p>No answer yet: the callback has not arrived and the details are not ready.</p></div>`;
  const risk = answer.details?.deviceRisk;
  const decision = risk?.decision ?? answer.details?.decision;
  const type = decision?.type ?? answer.status;
  const rows = [
    [
      'Device Risk decision',
      `<strong class="decision-type">${escapeHtml(type)}</strong>${decision?.label ? ` <code>${escapeHtml(decision.label)}</code>` : ''}`,
    ],
    ['Alerts', risk?.alerts.length ? risk.alerts.map((a) => escapeHtml(a)).join(', ') : 'none'],
    [
      'Workflow decision',
      answer.details
        ? `${escapeHtml(answer.details.decision.type)}${answer.details.decision.score === undefined ? '' : `, score ${answer.details.decision.score}`}`
        : escapeHtml(answer.status),
    ],
    [
      'Came by',
      answer.via === 'callback'
        ? `the service's callback, at ${new Date(answer.at).toISOString()}`
        : `polling the retrieval API, at ${new Date(answer.at).toISOString()}`,
    ],
  ];
  return `<div class="decision" data-decision="${escapeHtml(type)}" data-via="${escapeHtml(answer.via)}">${note}<table>${rows.map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`).join('')}</table>
<details><summary>Raw details (JSON)</summary><pre>${escapeHtml(JSON.stringify(answer.details?.raw ?? null, null, 2))}</pre></details></div>`;
}

export async function startDemo(config: DemoConfig, options: DemoOptions = {}): Promise<Demo> {
  const needsEmulator = !config.loaderUrl || !config.collectorUrl || !config.clientId;
  const emulator = needsEmulator
    ? await startEmulator({
        delays: options.delays ?? WATCHABLE_DELAYS,
        accountRequestsPerSecond: 0,
        ...(options.loaderSource !== undefined ? { loaderSource: options.loaderSource } : {}),
      })
    : undefined;
  const loaderUrl = config.loaderUrl ?? emulator!.loaderUrl;
  const collectorUrl = config.collectorUrl ?? emulator!.collectorUrl;

  const tokenSource = createTokenSource({
    clientId: config.clientId ?? emulator!.clientId,
    clientSecret: config.clientSecret ?? emulator!.clientSecret,
    userAgent: config.userAgent,
    ...(config.clientId
      ? config.tokenUrl
        ? { tokenUrl: config.tokenUrl }
        : { region: config.region! }
      : { tokenUrl: emulator!.tokenUrl }),
  });
  const client: DeviceRiskClient = createDeviceRiskClient({
    tokenSource,
    userAgent: config.userAgent,
    maxAttempts: options.clientMaxAttempts ?? 3,
    ...(config.clientId
      ? config.apiBaseUrl
        ? { baseUrl: config.apiBaseUrl }
        : { region: config.region! }
      : {
          ...emulator!.serviceUrls,
          // The built-in emulator's account limit is off (above): so is the client's. With real
          // credentials the client keeps the service's documented limits.
          limits: { accountRequestsPerSecond: 100, accountBurst: 50 },
        }),
  });

  /**
   * What the server learned of each transaction: the demo shows it on its pages, labelled as
   * the server-side information a real shop never sends to the browser.
   */
  interface Answer {
    status: string;
    details?: DeviceRiskDetails;
    via: 'callback' | 'polling';
    at: number;
  }
  const answers = new Map<string, Answer>();
  const waiters = new Map<string, Array<() => void>>();
  const remember = (workflowExecutionId: string, answer: Answer) => {
    if (answers.has(workflowExecutionId)) return;
    answers.set(workflowExecutionId, answer);
    for (const wake of waiters.get(workflowExecutionId) ?? []) wake();
    waiters.delete(workflowExecutionId);
  };
  /** The answer of a transaction: its callback, or after `waitMs` a read of the details (polling). */
  async function answerOf(
    ids: { accountId: string; workflowExecutionId: string },
    waitMs: number,
  ): Promise<Answer | undefined> {
    if (!answers.has(ids.workflowExecutionId)) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        waiters.set(ids.workflowExecutionId, [
          ...(waiters.get(ids.workflowExecutionId) ?? []),
          () => {
            clearTimeout(timer);
            return resolve();
          },
        ]);
      });
    }
    if (!answers.has(ids.workflowExecutionId)) {
      const details = await client.details(ids).catch(() => undefined);
      if (details && details.status === 'PROCESSED')
        remember(ids.workflowExecutionId, { status: details.status, details, via: 'polling', at: Date.now() });
    }
    return answers.get(ids.workflowExecutionId);
  }
  // The service's callbacks: its authoritative answer. The emulator calls from loopback.
  const callbacks = createCallbackHandler({
    client,
    allowedSources: config.clientId ? 'any' : ['127.0.0.0/8', '::1'],
    onResult: ({ workflowExecutionId, status, details }) =>
      remember(workflowExecutionId, { status, ...(details ? { details } : {}), via: 'callback', at: Date.now() }),
    onError: (error) =>
      console.error(
        `device-risk callback: ${isDeviceRiskError(error) ? `${error.code} ${error.message}` : String(error)}`,
      ),
  });

  const customerOf = (request: Request): CustomerMapping => {
    const cookie = /(?:^|;\s*)demo_customer=([A-Za-z0-9-]{8,64})/.exec(request.headers.get('cookie') ?? '')?.[1];
    // The demo's stand-in for your own session lookup.
    return {
      customerInternalReference: `demo-${cookie ?? 'anonymous'}`,
      workflowKey: config.workflowKey,
      ...(origin ? { callbackUrl: `${origin}/device-risk/callback` } : {}),
    };
  };
  // Created once the site's origin (its allowed Origin) is known.
  let endpoint: ReturnType<typeof createDeviceRiskHandler> | undefined;
  const proxy = createFirstPartyProxy({ prefix: '/iojs', collectorUrl });

  // The loader's third-party host: the real loader's default, or the emulator's.
  const thirdPartyOrigin = new URL(config.loaderUrl ? 'https://mpsnare.iesnare.com' : emulator!.thirdPartyUrl).origin;

  /** The checkout page's capture tags: the UMD file with data attributes only, in one of two integrations. */
  const captureTags = (nonce: string, adopt: boolean, loader = loaderUrl) => {
    const src = escapeHtml(loader);
    const umd = `<script nonce="${nonce}" src="/dist/blackbox-capture.umd.js" data-loader-url="${src}" data-field="blackbox"${adopt ? ' data-inject="false"' : ''}></script>`;
    // In the HTML the preconnect starts before any script runs; the package adds it only when missing.
    const preconnect = `<link rel="preconnect" href="${escapeHtml(thirdPartyOrigin)}">`;
    return adopt
      ? `<!-- Adopt mode: the page's own loader tag follows the package's tag. -->\n  ${preconnect}\n  ${umd}\n  <script nonce="${nonce}" src="${src}"></script>`
      : `<!-- A preload hint lets the loader download beside the package. -->\n  ${preconnect}\n  <link rel="preload" as="script" href="${src}" nonce="${nonce}">\n  ${umd}`;
  };

  async function page(
    name: string,
    request: Request,
    values: Record<string, string> = {},
    adopt = false,
    html_: Record<string, string> = {},
  ): Promise<Response> {
    const nonce = randomBytes(16).toString('base64');
    let html = await readFile(new URL(`demo/pages/${name}`, ROOT), 'utf8');
    // The doctor's broken pages (?doctor=…): one mistake each, for its tests.
    const broken = new URL(request.url).searchParams.get('doctor');
    let tags = captureTags(nonce, adopt, broken === 'bad-loader' ? '/broken-404/iojs/loader.js' : loaderUrl);
    if (broken === 'double-tag') tags += `\n  <script nonce="${nonce}" src="${escapeHtml(loaderUrl)}"></script>`;
    html = html.replace('{{CAPTURE_TAGS}}', tags).replace('{{HEADER}}', HEADER);
    for (const [key, value] of Object.entries(html_)) html = html.replaceAll(`{{${key}}}`, value);
    for (const [key, value] of Object.entries({
      NONCE: nonce,
      LOADER_URL: loaderUrl,
      THIRD_PARTY: thirdPartyOrigin,
      ...values,
    }))
      html = html.replaceAll(`{{${key}}}`, escapeHtml(value));
    const headers = new Headers({
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      // Every demo page runs under a strict CSP: a nonce plus strict-dynamic.
      'content-security-policy':
        broken === 'csp'
          ? "script-src 'self'; connect-src 'self'"
          : `script-src 'nonce-${nonce}' 'strict-dynamic'; object-src 'none'; base-uri 'none'`,
    });
    if (!/(?:^|;\s*)demo_customer=/.test(request.headers.get('cookie') ?? '')) {
      headers.append('set-cookie', `${CUSTOMER_COOKIE}=${randomUUID()}; Path=/; HttpOnly; SameSite=Lax`);
    }
    return new Response(html, { headers });
  }

  async function file(path: string, type: string): Promise<Response> {
    const body = await readFile(new URL(path, ROOT)).catch(() => undefined);
    return body
      ? new Response(body, { headers: { 'content-type': type, 'cache-control': 'no-cache' } })
      : new Response('not found', { status: 404 });
  }

  /** The classic form post: the server runs the whole Device Risk flow with the field's value. */
  async function checkoutSubmit(request: Request): Promise<Response> {
    const form = new URLSearchParams(await request.text());
    const submitted = form.get('blackbox') ?? '';
    // What the page said about its capture; "no-script" is the form's own value, sent with JavaScript off.
    // blackbox_outcome from the script-tag pages, blackbox-outcome from <blackbox-capture name="blackbox">.
    const said = form.get('blackbox_outcome') ?? form.get('blackbox-outcome') ?? '';
    const outcome = /^[\w-]{1,40}$/.test(said) ? said : 'not sent';
    let result: string;
    let ok = false;
    let panel = '<p class="muted">No decision: the check did not run.</p>';
    try {
      // A form that sends the field unencoded arrives with spaces for "+": repaired, losslessly.
      const { blackbox } = repairBlackbox(submitted);
      const check = await runDeviceRiskCheck(client, blackbox, customerOf(request));
      ok = true;
      result = JSON.stringify({ ...check, blackboxLength: blackbox.length }, null, 2);
      panel = decisionPanel(await answerOf(check, 3000));
    } catch (error) {
      result = !submitted
        ? 'No blackbox arrived: the page ran no device check (JavaScript off, or the capture failed). The order cannot be checked.'
        : isDeviceRiskError(error)
          ? `${error.code}: ${error.message}`
          : 'unexpected error';
    }
    return page(
      'result.html',
      request,
      {
        RESULT: result,
        STATE: ok ? 'ok' : 'error',
        OUTCOME: outcome,
        HEADING: ok ? 'Server result' : 'The device check could not run',
      },
      false,
      { DECISION: panel },
    );
  }

  const handler = async (request: Request, context?: { clientAddress?: string }): Promise<Response> => {
    const url = new URL(request.url);
    const path = url.pathname;
    if (proxy.matches(request)) return proxy(request, context);
    if (path.startsWith('/broken-404/iojs/')) return new Response('not found', { status: 404 });
    // The doctor's broken sites: a proxy whose dynamic script a cache serves, one that drops cookies.
    if (path.startsWith('/broken-cache/iojs/') || path.startsWith('/broken-cookie/iojs/')) {
      const kind = path.split('/')[1];
      const forwarded = await proxy(
        new Request(new URL(path.replace(`/${kind}`, '') + url.search, url), {
          method: request.method,
          headers: request.headers,
        }),
        context,
      );
      const headers = new Headers(forwarded.headers);
      headers.delete('set-cookie');
      if (kind === 'broken-cache') {
        headers.set('cache-control', 'public, max-age=600');
        headers.set('age', '42');
        // The cookies stay under the prefix this broken site serves them from.
        for (const cookie of forwarded.headers.getSetCookie())
          headers.append('set-cookie', cookie.replace('; Path=/iojs', `; Path=/${kind}/iojs`));
      }
      return new Response(forwarded.body, { status: forwarded.status, headers });
    }
    // A site whose SPA fallback answers every path with its HTML page: the classic proxy bug.
    if (path.startsWith('/broken-html/iojs/'))
      return new Response('<!doctype html><html><body>shop</body></html>', {
        headers: { 'content-type': 'text/html' },
      });
    if (path === '/device-risk') return endpoint!(request, context);
    if (path === '/device-risk/callback') return callbacks(request, context);
    // Demo only: the server-side answer, for the playground's labelled panel. A real shop has no such route.
    if (path === '/demo/answer' && request.method === 'GET') {
      const ids = {
        accountId: url.searchParams.get('accountId') ?? '',
        workflowExecutionId: url.searchParams.get('workflowExecutionId') ?? '',
      };
      const answer = await answerOf(ids, 5000).catch(() => undefined);
      return new Response(decisionPanel(answer), {
        headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' },
      });
    }
    if (path.startsWith('/dist/') && /^\/dist\/[\w.-]+\.js$/.test(path))
      return file(path.slice(1), 'text/javascript; charset=utf-8');
    if (/^\/demo\/[\w-]+\.(js|css)$/.test(path))
      return file(
        `demo/pages/${path.slice(6)}`,
        path.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8',
      );
    if (path === '/demo/status' && request.method === 'GET') {
      const accountId = url.searchParams.get('accountId') ?? '';
      const workflowExecutionId = url.searchParams.get('workflowExecutionId') ?? '';
      try {
        return Response.json({ status: await client.status({ accountId, workflowExecutionId }) });
      } catch (error) {
        return Response.json({ error: isDeviceRiskError(error) ? error.code : 'error' }, { status: 502 });
      }
    }
    if (path === '/checkout' && request.method === 'POST') return checkoutSubmit(request);
    if (request.method !== 'GET' && request.method !== 'HEAD')
      return new Response('method not allowed', { status: 405 });
    if (path === '/favicon.ico') return new Response(null, { status: 204 });
    if (path === '/') return page('index.html', request);
    if (path === '/checkout') return page('checkout.html', request, { TITLE: 'Checkout' });
    if (path === '/checkout-adopt') return page('checkout.html', request, { TITLE: 'Checkout, adopt mode' }, true);
    if (path === '/checkout-element') return page('checkout-element.html', request);
    if (path === '/spa' || path.startsWith('/spa/')) return page('spa.html', request);
    if (path === '/playground') {
      // The switch that forces the decision of this customer's next check (the emulator only).
      const decide = url.searchParams.get('decide');
      const forced = decide && FORCED_DECISIONS[decide];
      // The decision is forced for this customer: give a first visit its cookie first.
      if (forced && !/(?:^|;\s*)demo_customer=/.test(request.headers.get('cookie') ?? '')) {
        return new Response(null, {
          status: 303,
          headers: {
            location: url.pathname + url.search,
            'set-cookie': `${CUSTOMER_COOKIE}=${randomUUID()}; Path=/; HttpOnly; SameSite=Lax`,
          },
        });
      }
      if (forced && emulator) {
        const reference = customerOf(request).customerInternalReference;
        emulator.decide((tx) => tx.customerInternalReference === reference, forced, { once: true });
      }
      return page('playground.html', request);
    }
    return new Response('not found', { status: 404 });
  };

  let origin = '';
  const server: Server = createServer(toNodeHandler(handler));
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, resolve);
    });
  } catch (error) {
    await emulator?.close();
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new Error(
        `Port ${config.port} on ${config.host} is already in use. Stop the other process, or choose another port: DEMO_PORT=4180 npm run demo`,
        { cause: error },
      );
    }
    throw error;
  }
  origin = `http://${config.host}:${(server.address() as AddressInfo).port}`;
  endpoint = createDeviceRiskHandler({
    answer: 'checked',
    client,
    allowedOrigins: [origin],
    workflowKey: config.workflowKey,
    resolveCustomer: customerOf,
    // On one machine every browser is 127.0.0.1 and its checkouts share one demo customer; a
    // shop keeps the defaults (docs/server.md#admission).
    checkoutsPerAddress: false,
    checkoutsPerCustomer: false,
    onError: (error) =>
      console.error(`device-risk: ${isDeviceRiskError(error) ? `${error.code} ${error.message}` : String(error)}`),
  });

  return {
    url: origin,
    ...(emulator ? { emulator } : {}),
    settings: {
      loaderUrl,
      collectorUrl,
      service: config.clientId ? (config.apiBaseUrl ?? `region ${config.region}`) : 'emulator',
    },
    async close() {
      await callbacks.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await emulator?.close();
    },
  };
}
