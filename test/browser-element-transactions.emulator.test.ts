// @vitest-environment happy-dom
// <blackbox-capture post-url> against the server kit's endpoint and the emulated service: one
// Device Risk transaction per page run and checkout, however often the element is mounted.
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startEmulator, type Emulator } from '../src/emulator/index.js';
import {
  createDeviceRiskClient,
  createDeviceRiskHandler,
  createTokenSource,
  type DeviceRiskHandler,
} from '../src/server/index.js';
import { rawRequest } from './support/http.js';
import { freshPage, LOADER_URL } from './support/vendor-dom.js';

const SHOP = 'https://shop.example';
const UA = 'AcmeShop Checkout/1.0';

beforeAll(() => {
  // happy-dom has no ElementInternals: a stand-in that takes the form value.
  (HTMLElement.prototype as unknown as { attachInternals(): unknown }).attachInternals = () => ({
    form: null,
    setFormValue() {},
  });
});

let emulator: Emulator | undefined;
const original = globalThis.fetch;
afterEach(async () => {
  globalThis.fetch = original;
  await emulator?.close();
});

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
async function endpoint(): Promise<{
  emulator: Emulator;
  posts: Array<{ key: string | null; checkout: string | null }>;
}> {
  emulator = await startEmulator({ accountRequestsPerSecond: 0 });
  const tokenSource = createTokenSource({
    clientId: emulator.clientId,
    clientSecret: emulator.clientSecret,
    tokenUrl: emulator.tokenUrl,
    userAgent: UA,
    sleep: async () => {},
    fetch: serverFetch,
  });
  const client = createDeviceRiskClient({
    tokenSource,
    baseUrl: emulator.baseUrl,
    userAgent: UA,
    maxAttempts: 1,
    fetch: serverFetch,
  });
  const handler: DeviceRiskHandler = createDeviceRiskHandler({
    client,
    allowedOrigins: [SHOP],
    workflowKey: 10020,
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

let defined = 0;
async function freshTag(): Promise<string> {
  await freshPage();
  const { defineBlackboxCapture } = await import('../src/browser/element.js');
  const tag = `blackbox-capture-tx-${++defined}`;
  defineBlackboxCapture(tag);
  return tag;
}

type CaptureElement = HTMLElement & { state: string; ready: Promise<string> };
/** Mounts the element (as a framework's render does), waits for its capture to end, unmounts it. */
async function mount(tag: string, attributes: string): Promise<CaptureElement> {
  const host = document.createElement('div');
  host.innerHTML = `<${tag} loader-url="${LOADER_URL}" post-url="${SHOP}/device-risk" ${attributes}></${tag}>`;
  document.body.append(host);
  const element = host.firstElementChild as CaptureElement;
  await element.ready;
  host.remove();
  return element;
}

describe('<blackbox-capture post-url>: one transaction per checkout', () => {
  it('three mounts in one page run (remounts, a hot reload, StrictMode) make one transaction, under one key', async () => {
    const { emulator, posts } = await endpoint();
    const tag = await freshTag();
    for (let i = 0; i < 3; i++) expect((await mount(tag, '')).state).toBe('complete');
    await vi.waitFor(() => expect(emulator.inspect.requests('accountCreate')).toBe(1));
    await new Promise((r) => setTimeout(r, 100));
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
    expect(posts).toEqual([{ key: expect.any(String), checkout: null }]);
  });

  it('checkout-id scopes it: the same checkout id never two, another checkout id another', async () => {
    const { emulator, posts } = await endpoint();
    const tag = await freshTag();
    for (const id of ['cart-1', 'cart-1', 'cart-2', 'cart-1'])
      expect((await mount(tag, `checkout-id="${id}"`)).state).toBe('complete');
    await vi.waitFor(() => expect(emulator.inspect.requests('accountCreate')).toBe(2));
    await new Promise((r) => setTimeout(r, 100));
    expect(emulator.inspect.requests('accountCreate')).toBe(2);
    expect(posts.map((post) => post.checkout)).toEqual(['cart-1', 'cart-2']);
    expect(new Set(posts.map((post) => post.key)).size).toBe(2);
  });

  it('a delivery refused fails the element with post_failed; a later mount delivers again', async () => {
    const { emulator, posts } = await endpoint();
    const tag = await freshTag();
    const withService = globalThis.fetch;
    globalThis.fetch = (async (input: string, init?: RequestInit) =>
      String(input).startsWith(SHOP)
        ? new Response('{"error":"bad_request"}', { status: 400 })
        : withService(input, init)) as typeof fetch;
    const errors: Array<{ code: string }> = [];
    const listener = (event: Event) => errors.push((event as CustomEvent<{ code: string }>).detail);
    document.addEventListener('blackboxerror', listener);
    try {
      expect((await mount(tag, '')).state).toBe('failed');
      expect(errors).toEqual([expect.objectContaining({ code: 'post_failed' })]);
      globalThis.fetch = withService;
      expect((await mount(tag, '')).state).toBe('complete');
      await vi.waitFor(() => expect(emulator.inspect.requests('accountCreate')).toBe(1));
      expect(posts).toHaveLength(1);
    } finally {
      document.removeEventListener('blackboxerror', listener);
    }
  });
});
