/**
 * A local integrator site for the browser tests: pages registered by each test,
 * the built dist/ files, the first-party proxy at /iojs (prefix stripped, to the
 * emulator's collector), and a recording POST endpoint. The emulator serves the
 * loader and the third-party host on origins of their own, as in production.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/index.js';
import { createFirstPartyProxy } from '../../src/server/proxy/proxy.js';
import { toNodeHandler } from '../../src/server/adapter/node/handler.js';
import type { FetchHandler } from '../../src/server/fetch-handler.js';

const DIST = new URL('../../dist/', import.meta.url);

export interface Delivery {
  body: unknown;
  idempotencyKey: string | null;
  contentType: string | null;
}

export interface Site {
  origin: string;
  emulator: Emulator;
  loaderUrl: string;
  deliveries: Delivery[];
  /** Native form posts to /form: their fields, as the browser sent them. */
  forms: Array<Record<string, string>>;
  /** Serve `html` at `path` with optional extra response headers. */
  page(path: string, html: string, headers?: Record<string, string>): string;
  /** Answer the next `count` deliveries with `status`. */
  failDeliveries(count: number, status: number): void;
  /** Serve `body` at `path` with the given content type. */
  file(path: string, body: string, contentType: string): string;
  /** Answer URLs of this site matching `pattern` with a fixed response. */
  override(pattern: RegExp, status: number, body: string, contentType: string): void;
  close(): Promise<void>;
}

async function listen(handler: FetchHandler): Promise<{ server: Server; origin: string }> {
  const server = createServer(toNodeHandler(handler));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export async function startSite(options: EmulatorOptions = {}): Promise<Site> {
  const emulator = await startEmulator(options);
  const pages = new Map<string, { html: string; headers: Record<string, string> }>();
  const files = new Map<string, { body: string; contentType: string }>();
  const overrides: Array<{ pattern: RegExp; response: () => Response }> = [];
  const deliveries: Delivery[] = [];
  const forms: Array<Record<string, string>> = [];
  let failures = { count: 0, status: 503 };

  const overridden = (request: Request) => overrides.find((o) => o.pattern.test(request.url))?.response();

  // The server kit's own first-party proxy, in front of the emulator's collector.
  const proxy = createFirstPartyProxy({ prefix: '/iojs', collectorUrl: emulator.collectorUrl });
  const siteServer = await listen(async (request, context) => {
    const hit = overridden(request);
    if (hit) return hit;
    const url = new URL(request.url);
    if (proxy.matches(request)) return proxy(request, context);
    if (url.pathname === '/device-risk' && request.method === 'POST') {
      const body = await request.json().catch(() => null);
      if (failures.count > 0) {
        failures.count--;
        return new Response('{"error":"unavailable"}', { status: failures.status, headers: { 'retry-after': '0' } });
      }
      deliveries.push({
        body,
        idempotencyKey: request.headers.get('idempotency-key'),
        contentType: request.headers.get('content-type'),
      });
      return Response.json({ status: 'received' });
    }
    if ((url.pathname === '/form' || url.pathname === '/checkout') && request.method === 'POST') {
      forms.push(Object.fromEntries(new URLSearchParams(await request.text())));
      return new Response('<!doctype html><title>posted</title><p id="posted">posted</p>', {
        headers: { 'content-type': 'text/html' },
      });
    }
    if (url.pathname.startsWith('/dist/')) {
      try {
        const file = await readFile(new URL(url.pathname.slice('/dist/'.length), DIST));
        return new Response(file, { headers: { 'content-type': 'text/javascript; charset=utf-8' } });
      } catch {
        return new Response('not found', { status: 404 });
      }
    }
    // The README's layout: the package's files and the vendor's loader under /static/.
    if (url.pathname === '/static/vendor/loader.js') {
      const loader = await fetch(emulator.loaderUrl);
      return new Response(await loader.text(), { headers: { 'content-type': 'text/javascript; charset=utf-8' } });
    }
    if (/^\/static\/(blackbox-capture\.umd|browser-[\w-]+|index|element|tcf)\.js$/.test(url.pathname)) {
      return new Response(await readFile(new URL(url.pathname.slice('/static/'.length), DIST)), {
        headers: { 'content-type': 'text/javascript; charset=utf-8' },
      });
    }
    const file = files.get(url.pathname);
    if (file) return new Response(file.body, { headers: { 'content-type': file.contentType } });
    const page = pages.get(url.pathname);
    if (page)
      return new Response(page.html, { headers: { 'content-type': 'text/html; charset=utf-8', ...page.headers } });
    return new Response('not found', { status: 404 });
  });

  return {
    origin: siteServer.origin,
    emulator,
    loaderUrl: emulator.loaderUrl,
    deliveries,
    forms,
    page(path, html, headers = {}) {
      pages.set(path, { html, headers });
      return siteServer.origin + path;
    },
    file(path, body, contentType) {
      files.set(path, { body, contentType });
      return siteServer.origin + path;
    },
    failDeliveries(count, status) {
      failures = { count, status };
    },
    override(pattern, status, body, contentType) {
      overrides.unshift({
        pattern,
        response: () => new Response(body, { status, headers: { 'content-type': contentType } }),
      });
    },
    async close() {
      siteServer.server.closeAllConnections();
      await new Promise((resolve) => siteServer.server.close(resolve));
      await emulator.close();
    },
  };
}
