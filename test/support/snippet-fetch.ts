// The docs' server snippets call the service's and the vendor's real hosts, as written: for
// the tests that run them in this process (test/docs/readme.test.ts, readme-frameworks.test.ts),
// fetch is replaced so that those hosts reach the emulator, and what the first-party proxy
// sent to the vendor's collector is recorded. Also what the snippets leave to the reader: the
// environment their set-up file reads, and the session lookup.
import type { Emulator } from '../../src/emulator/index.js';

/** A request the proxy made to the vendor's first-party host. */
export interface CollectorRequest {
  method: string;
  url: string;
  forwardedFor: string | null;
  body: string;
}

const COLLECTOR = 'https://first.iovation.com';

/**
 * The EU hosts the snippets name (docs/vendor-contract.md), each to the emulator's address for
 * it: one per role, as the service's (the upload and finalize addresses of a create answer on
 * `api.`, account create and update on `account.`).
 */
export const emulatorRoutes = (emulator: Emulator): Record<string, string> => ({
  'https://auth.emea-1.jumio.ai': new URL(emulator.tokenUrl).origin,
  'https://account.emea-1.jumio.ai': emulator.accountUrl,
  'https://api.emea-1.jumio.ai': emulator.apiUrl,
  'https://retrieval.emea-1.jumio.ai': emulator.retrievalUrl,
  [COLLECTOR]: emulator.collectorUrl,
});

/**
 * Replaces globalThis.fetch until the returned `restore` is called. Load the kit first (as an
 * app whose tests stub fetch does): its proxy then calls the replacement, where on Node it
 * would use node:http, which the replacement cannot see.
 */
export function routeFetchToEmulator(emulator: Emulator): {
  collectorRequests: CollectorRequest[];
  restore(): void;
} {
  const realFetch = globalThis.fetch;
  const routes = emulatorRoutes(emulator);
  const collectorRequests: CollectorRequest[] = [];
  globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : input);
    const to = routes[url.origin];
    if (!to) return realFetch(input, init);
    if (input instanceof Request) throw new Error('the kit calls fetch(url, init)');
    const headers = new Headers(init?.headers);
    if (url.origin === COLLECTOR) {
      const body = init?.body ? await new Response(init.body).text() : '';
      collectorRequests.push({
        method: init?.method ?? 'GET',
        url: url.pathname,
        forwardedFor: headers.get('x-forwarded-for'),
        body,
      });
      return realFetch(new URL(url.pathname + url.search, to), { ...init, body: body || undefined, headers });
    }
    headers.set('x-forwarded-host', url.host); // the emulator writes its hrefs for the host called
    return realFetch(new URL(url.pathname + url.search, to), { ...init, headers });
  };
  return { collectorRequests, restore: () => void (globalThis.fetch = realFetch) };
}

/** What the snippets' set-up file reads from the environment, for `emulator` (workflow 10011); `extra` over it. */
export function setSnippetEnv(emulator: Emulator, extra: Record<string, string> = {}): void {
  Object.assign(process.env, {
    CLIENT_ID: emulator.clientId,
    CLIENT_SECRET: emulator.clientSecret,
    WORKFLOW_KEY: '10011',
    PORT: '0',
    ...extra,
  });
}

/** The snippets' "yours": the session lookup, signed in when the cookie says session=ok. */
export const sessionUser = async (request: Request): Promise<{ orderId: string; id: string } | null> =>
  /session=ok/.test(request.headers.get('cookie') ?? '') ? { orderId: 'order-1', id: 'user-1' } : null;
