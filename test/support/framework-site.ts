// The shop in front of a framework's built app, for the framework tests (dist-vue,
// dist-sveltekit): the README's layout (/static/vendor/loader.js: the emulator's loader), the
// first-party proxy at /iojs, the server kit's endpoint at /device-risk on the emulated service
// (so that a test counts Device Risk transactions), a recorder of the app's orders at /orders,
// and the app itself for every other path. The final collection script comes late
// (`FINAL_SCRIPT_DELAY_MS`), so that a submit made at once meets a capture still collecting.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { decodeBlackbox, startEmulator, type Emulator } from '../../src/emulator/index.js';
import { toNodeHandler, type FetchHandler } from '../../src/server/node.js';
import {
  createDeviceRiskClient,
  createDeviceRiskHandler,
  createFirstPartyProxy,
  createTokenSource,
} from '../../src/server/index.js';

/** How late the last collection script contributes: a submit made at once meets `collecting`. */
export const FINAL_SCRIPT_DELAY_MS = 1500;
/** The sources of a final blackbox from the emulated loader. */
export const FINAL_SOURCES = ['fp_dyn', 'fp_static', 'tp'];

export interface FrameworkSite {
  origin: string;
  emulator: Emulator;
  /** The orders the app posted to /orders: their form fields (or JSON body). */
  orders: Array<Record<string, string>>;
  /** The blackbox POSTs that reached the endpoint: their Idempotency-Key and checkout-id headers. */
  posts: Array<{ key: string | null; checkout: string | null }>;
  close(): Promise<void>;
}

/** The sources a blackbox holds, sorted (the emulator's encoding). */
export const sourcesOf = (blackbox: string | undefined) => decodeBlackbox(String(blackbox))?.sources.sort();

/** Starts the shop; `app` answers every path the shop does not. */
export async function startFrameworkSite(app: (request: Request, origin: string) => Promise<Response>): Promise<FrameworkSite> {
  const emulator = await startEmulator({ accountRequestsPerSecond: 0, delays: { fp_dyn: [FINAL_SCRIPT_DELAY_MS] } });
  const orders: FrameworkSite['orders'] = [];
  const posts: FrameworkSite['posts'] = [];
  const proxy = createFirstPartyProxy({ prefix: '/iojs', collectorUrl: emulator.collectorUrl });
  const userAgent = 'AcmeShop Checkout/1.0';
  const client = createDeviceRiskClient({
    tokenSource: createTokenSource({
      clientId: emulator.clientId,
      clientSecret: emulator.clientSecret,
      tokenUrl: emulator.tokenUrl,
      userAgent,
    }),
    baseUrl: emulator.baseUrl,
    userAgent,
    maxAttempts: 1,
  });
  let origin = '';
  let endpoint: FetchHandler | undefined;
  const handler: FetchHandler = async (request, context) => {
    const url = new URL(request.url);
    if (proxy.matches(request)) return proxy(request, context);
    // A browser asks for it on every first page: no 404 in the console the tests read.
    if (url.pathname === '/favicon.ico') return new Response(null, { status: 204 });
    if (url.pathname === '/static/vendor/loader.js') {
      const loader = await fetch(emulator.loaderUrl);
      return new Response(await loader.text(), { headers: { 'content-type': 'text/javascript; charset=utf-8' } });
    }
    if (url.pathname === '/device-risk' && request.method === 'POST') {
      posts.push({ key: request.headers.get('idempotency-key'), checkout: request.headers.get('checkout-id') });
      return endpoint!(request, context);
    }
    if (url.pathname === '/orders' && request.method === 'POST') {
      const type = request.headers.get('content-type') ?? '';
      const fields = type.includes('json')
        ? ((await request.json()) as Record<string, string>)
        : Object.fromEntries([...(await request.formData())].map(([name, value]) => [name, String(value)]));
      orders.push(fields);
      return Response.json({ placed: true });
    }
    return app(request, origin);
  };
  const server: Server = createServer(toNodeHandler(handler));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  endpoint = createDeviceRiskHandler({
    client,
    allowedOrigins: [origin],
    workflowKey: 10020,
    resolveCustomer: () => ({ customerInternalReference: 'cust-1', userReference: 'u1' }),
  });
  return {
    origin,
    emulator,
    orders,
    posts,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await emulator.close();
    },
  };
}

/** Debian's Chromium, as the other browser tests start it. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** The page's console warnings and errors, and its uncaught errors, as they come. */
export function consoleProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'warning' || message.type() === 'error') problems.push(`${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  return problems;
}
