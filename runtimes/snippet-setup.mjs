// What a server snippet of the docs leaves to the reader, for running its TypeScript as written
// in Deno or Bun (or, transpiled, in Node): runtimes/runtimes.test.ts writes an entry
// that imports this file, then the snippet's server file, then calls `announce(server)`.
// Static imports all: Deno then runs it with no more permissions than the snippet names.
// Supplied here: the session lookup (`sessionUser`), the
// order decision (`decideOrder`, printed), and a fetch that routes the service's and the
// vendor's hosts (SNIPPET_ROUTES, JSON: origin → emulator address) to the emulator.
// `announce` prints `listening <port>` once the server listens; one line per event:
// `collector <json>` for each request the proxy made, `decided <json>` for each decision.
// The kit loads before fetch is replaced, as in an app whose tests stub fetch (readme.test.ts).
import 'blackbox-capture/server';

const routes = JSON.parse(process.env.SNIPPET_ROUTES ?? '{}');
const COLLECTOR = 'https://first.iovation.com';
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const url = new URL(input instanceof Request ? input.url : input);
  const to = routes[url.origin];
  if (!to) return realFetch(input, init);
  if (input instanceof Request) throw new Error('the kit calls fetch(url, init)');
  const headers = new Headers(init?.headers);
  if (url.origin === COLLECTOR)
    console.log(`collector ${JSON.stringify({ url: url.pathname, forwardedFor: headers.get('x-forwarded-for') })}`);
  // The emulator writes the addresses of its answers for the host the client called.
  else headers.set('x-forwarded-host', url.host);
  return realFetch(new URL(url.pathname + url.search, to), { ...init, headers });
};
globalThis.sessionUser = async (request) =>
  /session=ok/.test(request.headers.get('cookie') ?? '') ? { orderId: 'order-1', id: 'user-1' } : null;
globalThis.decideOrder = async (workflowExecutionId, status, decision) =>
  console.log(`decided ${JSON.stringify({ workflowExecutionId, status, decision })}`);

/** Prints the port the snippet's server listens on: Deno.serve's `addr`, Bun.serve's `port`, node:http's `address()`. */
export async function announce(server) {
  if (typeof server.address === 'function' && !server.listening)
    await new Promise((resolve) => server.once('listening', resolve));
  console.log(`listening ${server.addr?.port ?? server.port ?? server.address().port}`);
}
