/**
 * `npm run demo`: the whole flow on one machine. For now the browser side against
 * the emulated vendor scripts; the server kit and the emulated API join in later.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startEmulator } from '../src/emulator/index.js';
import { toNodeHandler, type FetchHandler } from '../src/server/node.js';

const DIST = new URL('../dist/', import.meta.url);
// Resolved from the package root, so it works from demo/ and from the bundled .demo/.
const PAGES = new URL('../demo/pages/', import.meta.url);
const host = '127.0.0.1';
const port = Number(process.env.DEMO_PORT ?? 4173);

function listen(handler: FetchHandler, wanted: number): Promise<Server> {
  const server = createServer(toNodeHandler(handler));
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new Error(`Port ${wanted} on ${host} is already in use. Stop the other process or set DEMO_PORT.`) : error),
    );
    server.listen(wanted, host, () => resolve(server));
  });
}

async function main() {
  const emulator = await startEmulator();
  const site = await listen(async (request) => {
    const url = new URL(request.url);
    if (url.pathname.startsWith('/iojs/')) {
      return emulator.handlers.collector(new Request(new URL(url.pathname.slice(5) + url.search, emulator.collectorUrl), { headers: request.headers }));
    }
    if (url.pathname === '/device-risk' && request.method === 'POST') {
      const body = (await request.json().catch(() => null)) as { blackbox?: unknown } | null;
      const length = typeof body?.blackbox === 'string' ? body.blackbox.length : 0;
      return Response.json({ received: length > 0, length });
    }
    if (url.pathname.startsWith('/dist/')) {
      const file = await readFile(new URL(url.pathname.slice(6), DIST)).catch(() => undefined);
      return file ? new Response(file, { headers: { 'content-type': 'text/javascript; charset=utf-8' } }) : new Response('not found', { status: 404 });
    }
    if (url.pathname === '/' || url.pathname === '/checkout.html') {
      const html = (await readFile(new URL('checkout.html', PAGES), 'utf8')).replaceAll('{{LOADER_URL}}', emulator.loaderUrl);
      return new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8' } });
    }
    return new Response('not found', { status: 404 });
  }, port);

  console.log(`blackbox-capture demo on the built-in emulator\n\n  Open http://${host}:${(site.address() as AddressInfo).port}/\n\nCtrl-C stops it.`);
  const stop = () => {
    site.closeAllConnections();
    site.close();
    void emulator.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: Error) => {
  console.error(error.message);
  process.exit(1);
});
