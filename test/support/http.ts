// Loopback HTTP for tests: servers on ports the OS chooses, and requests sent exactly as
// written (fetch would normalise a path, a Host or a header name).
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Every server serve() started and closeServers() has not closed yet, oldest first. */
export const servers: Server[] = [];

/** The origin of a server listening on 127.0.0.1 with `handler`. */
export async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  return listening(createServer(handler));
}

/** The origin of `server` once it listens on 127.0.0.1; closeServers() closes it. */
export async function listening(server: Server): Promise<string> {
  servers.push(server);
  if (!server.listening) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Closes every server started here, its kept-alive connections too (for afterEach). */
export async function closeServers(): Promise<void> {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** A POST of `body` to `url` with its content-type, by fetch. */
export const postAs = (url: string, contentType: string, body: string): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body });

/** A receiver of JSON posts on loopback (a callback URL): its origin, and the bodies in the order they came; each answered 200. */
export async function jsonReceiver<T = unknown>(): Promise<{ origin: string; bodies: T[] }> {
  const bodies: T[] = [];
  const origin = await serve((req, res) => {
    let data = '';
    req
      .on('data', (chunk) => (data += chunk))
      .on('end', () => {
        bodies.push(JSON.parse(data) as T);
        res.writeHead(200).end();
      });
  });
  return { origin, bodies };
}

export interface RawAnswer {
  status: number;
  body: string;
  headers: IncomingHttpHeaders;
}

/**
 * A request whose path and headers go out exactly as written: a header given a list goes as
 * one line per value (given an object, Node joins a list of cookies into one line; given its
 * raw list of names and values, which adds no Host, it sends each line as written).
 */
export function rawRequest(
  origin: string,
  path: string,
  init: { method?: string; headers?: Record<string, string | string[]>; body?: string } = {},
): Promise<RawAnswer> {
  const { hostname, port } = new URL(origin);
  const entries = Object.entries(init.headers ?? {});
  const headers = entries.some(([, value]) => Array.isArray(value))
    ? entries.flatMap(([name, value]) => [value].flat().flatMap((line) => [name, line]))
    : init.headers;
  return new Promise((resolve, reject) => {
    const request = httpRequest({ hostname, port, path, method: init.method ?? 'GET', headers }, (response) => {
      let body = '';
      response
        .on('data', (chunk: Buffer) => (body += chunk.toString()))
        .on('end', () => resolve({ status: response.statusCode!, body, headers: response.headers }));
    });
    request.on('error', reject).end(init.body);
  });
}

/**
 * A POST on a connection of its own from `localAddress` (a loopback address: 127.0.0.2 plays
 * the service's callback sender), failing after `timeoutMs` without an answer.
 */
export function postFrom(
  origin: string,
  path: string,
  body: string,
  headers: Record<string, string>,
  localAddress = '127.0.0.1',
  timeoutMs = 20_000,
): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      { hostname, port, path, method: 'POST', localAddress, agent: false, headers },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode!, text }));
      },
    );
    request.setTimeout(timeoutMs, () => request.destroy(new Error(`no answer in ${timeoutMs / 1000} s`)));
    request.on('error', reject).end(body);
  });
}
