// The shop in front of a framework's built app, for the framework tests (dist-vue,
// dist-sveltekit): the README's layout (/static/vendor/loader.js: the emulator's loader), the
// first-party proxy at /iojs, the server kit's endpoint at /device-risk on the emulated service
// (so that a test counts Device Risk transactions), a recorder of the app's orders at /orders,
// and the app itself for every other path. The final collection script comes late
// (`FINAL_SCRIPT_DELAY_MS`), so that a submit made at once meets a capture still collecting.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { decodeBlackbox, startEmulator, type Emulator } from '../../src/emulator/index.js';
import { toNodeHandler } from '../../src/server/adapter/node/handler.js';
import type { FetchHandler } from '../../src/server/fetch-handler.js';
import { createDeviceRiskHandler, createFirstPartyProxy } from '../../src/server/index.js';
import { clientOn } from './kit.js';

/** How late the last collection script contributes: a submit made at once meets `collecting`. */
export const FINAL_SCRIPT_DELAY_MS = 1500;
/** The sources of a final blackbox from the emulated loader. */
export const FINAL_SOURCES = ['fp_dyn', 'fp_static', 'tp'];

export interface FrameworkSite {
  origin: string;
  emulator: Emulator;
  /** The orders the app posted to /orders: their form fields (or JSON body). */
  orders: Array<Record<string, string>>;
  /** The blackbox POSTs that reached the endpoint: their Idempotency-Key and checkout-id headers, and the answer's status and code. */
  posts: Array<{ key: string | null; checkout: string | null; status?: number; code?: string }>;
  close(): Promise<void>;
}

/**
 * Counts from now on: `expectOnePerCheckout(carts)` waits for one blackbox POST per cart, each
 * accepted, and one account create each: a later cart reached in the same page run is not given
 * the first one's blackbox (the loader collects once per page run,
 * docs/vendor-contract.md#one-collection-per-page-run); the package reloads its page
 * (docs/browser.md#one-blackbox-per-checkout), whose new page run posts a blackbox of its own.
 * Then it checks that nothing more comes (a late delivery of a remount would show within 300 ms).
 */
export function countFrom(site: FrameworkSite): { expectOnePerCheckout(carts: string[]): Promise<void> } {
  const before = site.emulator.inspect.requests('accountCreate');
  const posted = site.posts.length;
  const creates = () => site.emulator.inspect.requests('accountCreate') - before;
  return {
    async expectOnePerCheckout(carts) {
      await expect.poll(() => site.posts.length - posted, { timeout: 20_000 }).toBe(carts.length);
      const mine = site.posts.slice(posted);
      await expect.poll(() => mine.every((post) => post.status !== undefined), { timeout: 20_000 }).toBe(true);
      expect(mine.map((post) => [post.checkout, post.code ?? 'accepted'])).toEqual(
        carts.map((cart) => [cart, 'accepted']),
      );
      await expect.poll(creates, { timeout: 20_000 }).toBe(carts.length);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(site.posts.length - posted).toBe(carts.length);
      expect(creates()).toBe(carts.length);
    },
  };
}

/**
 * Marks the page's run, does `act` (a remount, a click to another checkout), and waits for a
 * new page run: the package reloaded the page (docs/browser.md#one-blackbox-per-checkout).
 */
export async function expectNewPageRun(page: Page, act: () => Promise<unknown>): Promise<void> {
  await page.evaluate(() => ((window as { run?: string }).run = 'first'));
  await act();
  await expect
    .poll(() => page.evaluate(() => (window as { run?: string }).run ?? 'new').catch(() => 'navigating'), {
      timeout: 20_000,
    })
    .toBe('new');
}

/** Waits for the one transaction of `emulator` that holds `blackbox`: what the page awaited is what the endpoint got. */
export async function expectOneTransactionWith(emulator: Emulator, blackbox: string): Promise<void> {
  await expect
    .poll(() => emulator.inspect.transactions().filter((tx) => tx.blackboxes.includes(blackbox)).length, {
      timeout: 20_000,
    })
    .toBe(1);
}

/**
 * Presses Pay at once, while the page's `<blackbox-capture>` still collects (its state read at
 * the click), and waits for 'Order placed': the site's one order, which carries the final
 * blackbox and, in its `outcomeField`, the outcome complete.
 */
export async function payWhileCollecting(
  page: Page,
  site: FrameworkSite,
  outcomeField: string,
): Promise<Record<string, string>> {
  const stateAtClick = await page
    .locator('blackbox-capture')
    .evaluate((e: Element) => (e as HTMLElement & { state: string }).state);
  await page.getByRole('button', { name: 'Pay' }).click();
  await page.getByText('Order placed').waitFor();
  expect(stateAtClick).toBe('collecting');
  expect(site.orders).toHaveLength(1);
  const order = site.orders[0]!;
  expect([order[outcomeField], sourcesOf(order.blackbox)]).toEqual(['complete', FINAL_SOURCES]);
  return order;
}

/**
 * Two more visits of checkout nav-1 by the app's router: away (`#away`, until `elsewhere` shows)
 * and back (`#to-nav-1`), each until the checkout's form says its capture is complete.
 */
export async function revisitByRouter(page: Page, elsewhere: string): Promise<void> {
  for (let visit = 2; visit <= 3; visit++) {
    await page.locator('#away').click();
    await page.locator(elsewhere).waitFor();
    await page.locator('#to-nav-1').click();
    await page.locator('form[data-complete="true"]').waitFor();
  }
}

/**
 * Presses Pay before the page says 'Device checked' and waits for 'Order placed': the submit
 * awaited the capture. The next order `recorder` got carries the final blackbox, and the one
 * transaction of `service` holds it: what the page awaited is what the endpoint got.
 */
export async function payBeforeChecked(
  page: Page,
  recorder: FrameworkSite,
  service: FrameworkSite,
): Promise<Record<string, string>> {
  const before = recorder.orders.length;
  await page.getByRole('button', { name: 'Pay' }).click();
  const checkedAtClick = await page.getByText('Device checked').count();
  await page.getByText('Order placed').waitFor();
  expect(checkedAtClick).toBe(0);
  const order = recorder.orders[before]!;
  expect(sourcesOf(order.blackbox)).toEqual(FINAL_SOURCES);
  await expectOneTransactionWith(service.emulator, order.blackbox!);
  return order;
}

/** A new page of `browser` and its console problems as they come (consoleProblems); after `run`, the page and `site` closed. */
export async function onNewPage(
  browser: Browser,
  site: FrameworkSite,
  run: (page: Page, problems: string[]) => Promise<void>,
): Promise<void> {
  const page = await browser.newPage();
  const problems = consoleProblems(page);
  try {
    await run(page, problems);
  } finally {
    await page.close();
    await site.close();
  }
}

/** The sources a blackbox holds, sorted (the emulator's encoding). */
export const sourcesOf = (blackbox: string | undefined) => decodeBlackbox(String(blackbox))?.sources.sort();

export interface FrameworkSiteOptions {
  /** The vendor's real loader 5.2.2 (test/support/real-loader.mjs) at /static/vendor/loader.js, before the emulator's scripts. Default the emulator's. */
  loaderSource?: string;
}

/** Starts the shop; `app` answers every path the shop does not. */
export async function startFrameworkSite(
  app: (request: Request, origin: string) => Promise<Response>,
  options: FrameworkSiteOptions = {},
): Promise<FrameworkSite> {
  const emulator = await startEmulator({
    accountRequestsPerSecond: 0,
    delays: { fp_dyn: [FINAL_SCRIPT_DELAY_MS] },
    ...(options.loaderSource === undefined ? {} : { loaderSource: options.loaderSource }),
  });
  const orders: FrameworkSite['orders'] = [];
  const posts: FrameworkSite['posts'] = [];
  const proxy = createFirstPartyProxy({ prefix: '/iojs', collectorUrl: emulator.collectorUrl });
  const client = clientOn(emulator, { maxAttempts: 1 });
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
      const post: FrameworkSite['posts'][number] = {
        key: request.headers.get('idempotency-key'),
        checkout: request.headers.get('checkout-id'),
      };
      posts.push(post);
      const answer = await endpoint!(request, context);
      post.status = answer.status;
      if (answer.status >= 400) post.code = ((await answer.clone().json()) as { error: { code: string } }).error.code;
      return answer;
    }
    if (url.pathname === '/orders' && request.method === 'POST') {
      const type = request.headers.get('content-type') ?? '';
      const fields = type.includes('json')
        ? ((await request.json()) as Record<string, string>)
        : Object.fromEntries(
            [...(await request.formData())].map(([name, value]) => [
              name,
              typeof value === 'string' ? value : value.name,
            ]),
          );
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
    // A data directory of its own: a test file starts two sites (two loaders) in one beforeAll,
    // and two default queues on one directory share their checkouts (src/server/queue/file.ts).
    // Beside the one the test's setup gave (test/support/data-dir-setup.ts), removed with it.
    dataDir: `${process.env.BLACKBOX_CAPTURE_DATA_DIR ?? 'bbc-data'}-site-${crypto.randomUUID()}`,
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
    if (message.type() === 'warning' || message.type() === 'error')
      problems.push(`${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  return problems;
}

/** The shop's `app` for a framework's own server at `upstream`: every request passed on, as a reverse proxy does. */
export function forwardTo(upstream: string): (request: Request) => Promise<Response> {
  return async (request) => {
    const url = new URL(request.url);
    const headers = new Headers(request.headers);
    headers.delete('host');
    // What a reverse proxy tells the app of the address the browser used.
    headers.set('x-forwarded-host', url.host);
    headers.set('x-forwarded-proto', url.protocol.slice(0, -1));
    const answer = await fetch(upstream + url.pathname + url.search, {
      method: request.method,
      headers,
      body: request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.arrayBuffer(),
      redirect: 'manual',
    });
    const passed = new Headers(answer.headers);
    // fetch has decoded the body already.
    passed.delete('content-encoding');
    passed.delete('content-length');
    return new Response(answer.body, { status: answer.status, headers: passed });
  };
}

/**
 * Waits for a submit listener on the page's form: the framework has hydrated it (a click
 * before would post natively). Read through Chromium's DevTools protocol.
 */
export async function submitListened(page: Page): Promise<void> {
  const cdp = await page.context().newCDPSession(page);
  for (;;) {
    const { result } = await cdp.send('Runtime.evaluate', { expression: "document.querySelector('form')" });
    if (result.objectId) {
      const { listeners } = await cdp.send('DOMDebugger.getEventListeners', { objectId: result.objectId });
      if (listeners.some((listener) => listener.type === 'submit')) break;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await cdp.detach();
}

/**
 * Makes the page warn (a console problem) when a `<blackbox-capture>` leaves it: a hydration
 * that fails throws the server's markup away and renders anew, which production builds do
 * without a word. A page with no remount must keep the element the server rendered.
 */
export async function reportRemovals(page: Page): Promise<void> {
  await page.addInitScript(() => {
    new MutationObserver((records) => {
      for (const record of records)
        for (const node of record.removedNodes)
          if (node.nodeName === 'BLACKBOX-CAPTURE' || (node as Element).querySelector?.('blackbox-capture'))
            console.warn('a <blackbox-capture> was removed from the page');
    }).observe(document, { childList: true, subtree: true });
  });
}
