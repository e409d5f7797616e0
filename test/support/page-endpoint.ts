// The server kit's endpoint on the emulated service, reached by a happy-dom page's fetch of
// SHOP's /device-risk: the browser tests that count Device Risk transactions.
import { expect, vi } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { rawRequest } from './http.js';
import { handlerOn, SHOP } from './kit.js';

export { SHOP };

let emulator: Emulator | undefined;
const original = globalThis.fetch;
/** For afterEach: the page's fetch as it was, the emulator closed. */
export async function closeEndpoint(): Promise<void> {
  globalThis.fetch = original;
  await emulator?.close();
  emulator = undefined;
}

/** The server kit's fetch over node:http: this page's fetch is happy-dom's, which answers the vendor's URLs. */
const serverFetch = (async (input: string | URL, init: RequestInit = {}) => {
  const url = new URL(String(input));
  const answer = await rawRequest(url.origin, url.pathname + url.search, {
    method: init.method ?? 'GET',
    headers: Object.fromEntries(new Headers(init.headers).entries()),
    body:
      typeof init.body === 'string'
        ? init.body
        : init.body instanceof URLSearchParams
          ? init.body.toString()
          : undefined,
  });
  const headers = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) if (typeof value === 'string') headers.set(name, value);
  return new Response(answer.status === 204 ? null : answer.body, { status: answer.status, headers });
}) as typeof fetch;

/** The emulated service behind the server kit's endpoint, which the page's POSTs to SHOP reach. */
export async function endpoint(): Promise<{
  emulator: Emulator;
  posts: Array<{ key: string | null; checkout: string | null }>;
}> {
  emulator = await startEmulator({ accountRequestsPerSecond: 0 });
  const handler = handlerOn(emulator, {
    client: {
      tokenSource: { sleep: async () => {}, fetch: serverFetch },
      maxAttempts: 1,
      fetch: serverFetch,
      // The emulator's account limit is off here: so is the client's.
      limits: { accountRequestsPerSecond: 100, accountBurst: 50 },
    },
    resolveCustomer: () => ({ customerInternalReference: 'cust-1', userReference: 'u1' }),
  });
  const posts: Array<{ key: string | null; checkout: string | null }> = [];
  globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = String(input instanceof Request ? input.url : input);
    if (!url.startsWith(`${SHOP}/device-risk`)) return original(input, init);
    const request = new Request(url, { method: 'POST', headers: init?.headers, body: init?.body as string });
    // What the browser adds (a page cannot: happy-dom drops it from the init, as browsers do).
    request.headers.set('origin', SHOP);
    posts.push({ key: request.headers.get('idempotency-key'), checkout: request.headers.get('checkout-id') });
    return handler(request);
  }) as typeof fetch;
  return { emulator, posts };
}

/** One account create on `emulator`, and no second within 200 ms (a late delivery of a remount would show by then). */
export async function expectOneTransaction(emulator: Emulator): Promise<void> {
  await vi.waitFor(() => expect(emulator.inspect.requests('accountCreate')).toBe(1), { timeout: 5000 });
  await new Promise((resolve) => setTimeout(resolve, 200));
  expect(emulator.inspect.requests('accountCreate')).toBe(1);
}
