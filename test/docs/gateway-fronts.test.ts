/**
 * The gateway's fronts of docs/gateway.md#the-front, each in its real server with the recipe
 * included as shipped (proxy/nginx/gateway.conf, caddy/gateway.caddy, apache/gateway.conf,
 * haproxy/gateway.cfg; test/support/gateway-fronts.ts), in front of the gateway as a process
 * and the PHP back end of docs/gateway.md as printed: a page opened through the front in
 * Chromium, with the vendor's real loader, reaches its signed decision in the shop's
 * decisions.jsonl, the service's callback coming back through the front; the shopper's
 * address is the connection's, never one a client wrote. A server this machine lacks is
 * skipped and named; with CI set it fails the run.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { availableBackends, startBackend, type RunningBackend } from '../support/backends.js';
import { enginePaths, launch, type EnginePage } from '../support/engines.mjs';
import { listening, type RunningFront } from '../support/fronts.js';
import { BROWSER_PACKAGE, GATEWAY_FRONTS, walkthroughCaddyfile } from '../support/gateway-fronts.js';
import { checkoutThrough, shopSettings } from '../support/gateway-shop.js';
import { freePort } from '../support/processes.mjs';
import { realLoaderSource } from '../support/real-loader.mjs';
import { snippet } from '../support/readme.js';
import { startGatewayProcess, type GatewayProcess } from '../support/shop-front.js';

const SETTINGS = shopSettings();
const php = availableBackends().present.find((backend) => backend.name === 'php');
if (!php && process.env.CI) throw new Error('CI is set and php-cli is missing (.ci/run installs it)');
const fronts = GATEWAY_FRONTS.filter((front) => front.available());
const missing = GATEWAY_FRONTS.filter((front) => !fronts.includes(front)).map((front) => front.name);
if (missing.length) console.warn(`skipped, server missing: ${missing.join(', ')}`);
const chromium = existsSync(enginePaths().chromium);
if (!chromium && process.env.CI) throw new Error('CI is set and Chromium is missing (.ci/run installs it)');
/** Caddy runs the walkthrough's own Caddyfile (docs/gateway.md), with each run's addresses. */
const caddyfile = snippet('gateway-caddyfile').code;
/** An address no test machine is: what a client writes in X-Forwarded-For to pass as another. */
const SPOOFED = '203.0.113.9';

let emulator: Emulator;
let shop: RunningBackend;
let page: EnginePage | undefined;
beforeAll(async () => {
  emulator = await startEmulator({ loaderSource: realLoaderSource() });
  SETTINGS.LOADER_URL = emulator.loaderUrl;
  if (php) shop = await startBackend(php, SETTINGS);
  if (chromium) page = await launch('chromium');
});
afterAll(async () => {
  await page?.close();
  await shop?.close();
  await emulator?.close();
});

describe.runIf(php).each(fronts.map((front) => [front.name, front] as const))('the %s front', (name, front) => {
  let gateway: GatewayProcess;
  let shopFront: RunningFront;
  let origin: string;
  beforeAll(async () => {
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    // The walkthrough's settings (docs/gateway.md#walkthrough-a-php-shop-on-the-emulator): the service calls back through the
    // front, which the gateway trusts to name the shopper.
    gateway = await startGatewayProcess(emulator, {
      ALLOWED_ORIGINS: origin,
      ORDER_SECRET: SETTINGS.ORDER_SECRET,
      DECISION_URL: shop.url + '/webhook',
      WEBHOOK_SECRET: SETTINGS.WEBHOOK_SECRET,
      CALLBACK_URL: origin + '/callback',
      TRUSTED_FRONTS: '127.0.0.1',
      DECISIONS_TOKEN: 'a'.repeat(32),
    });
    shopFront = await front.start({ port, gateway: gateway.url, backend: shop.url, caddyfile });
  }, 60_000);
  afterAll(async () => {
    await shopFront?.stop();
    await gateway?.close();
  });

  it('serves the browser package beside the shop, and leaves everything else to the back end', async () => {
    for (const file of BROWSER_PACKAGE) {
      const answer = await fetch(`${origin}/${file}`);
      expect(answer.status, file).toBe(200);
      expect(answer.headers.get('content-type'), file).toMatch(/^text\/javascript\b/);
      expect(
        Buffer.from(await answer.arrayBuffer()).equals(readFileSync(new URL(`../../dist/${file}`, import.meta.url))),
        file,
      ).toBe(true);
    }
    expect(await (await fetch(origin + '/')).text()).toContain(' data-order-token="');
    // The gateway's own routes are not the shoppers': the back end answers them (404), never the gateway.
    for (const path of ['/healthz', '/openapi.json', '/decisions/order-1', '/device-risk/x', '/callbacks']) {
      const answer = await fetch(origin + path, { headers: { authorization: `Bearer ${'a'.repeat(32)}` } });
      expect(answer.status, path).toBe(404);
      expect(await answer.text(), path).toBe('');
    }
    // …which does answer them, to anyone who reaches it directly.
    expect((await fetch(gateway.url + '/healthz')).status).toBe(200);
  });

  it("gives the gateway the connection's address, never one the client wrote", async () => {
    const callback = (to: string) =>
      fetch(to + '/callback', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': SPOOFED },
        body: '{}',
      });
    // Through the front, the service's address (loopback here: CALLBACK_SOURCES' default) is
    // the one checked: the callback's body is judged, and refused as no callback.
    const through = await callback(origin);
    expect(await through.json()).toMatchObject({ error: { code: 'invalid_callback' } });
    // A front that appended to the client's header would hand the gateway the spoofed address.
    const appended = await fetch(gateway.url + '/callback', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': `${SPOOFED}, 127.0.0.1` },
      body: '{}',
    });
    expect(appended.status).toBe(403);
    expect(gateway.output()).toContain(SPOOFED);
  });

  it("passes the page's Origin as sent, and a body up to the gateway's own limit", async () => {
    const post = (from: string, bytes: number) =>
      fetch(origin + '/device-risk', {
        method: 'POST',
        headers: { origin: from, 'content-type': 'application/json' },
        body: JSON.stringify({ blackbox: 'x'.repeat(bytes) }),
      });
    expect(await (await post('https://elsewhere.example', 10)).json()).toMatchObject({
      error: { code: 'origin_not_allowed' },
    });
    // Over the gateway's 16 KiB: its own answer, with its code, not the front's page.
    const over = await post(origin, 20_000);
    expect(over.status).toBe(413);
    expect(await over.json()).toMatchObject({ error: { code: 'body_too_large' } });
  });

  it("sends the gateway the page's Origin and Host, none of the shop's cookies or credentials, no body over 32 KiB", async () => {
    const seen: IncomingHttpHeaders[] = [];
    const recorder = await listening((request, response) => {
      seen.push(request.headers);
      request.resume().on('end', () => response.writeHead(204).end());
    });
    const port = await freePort();
    const recorded = await front.start({ port, gateway: recorder.origin, backend: shop.url, caddyfile });
    try {
      const shopper = {
        origin: `http://127.0.0.1:${port}`,
        cookie: 'session=s3cret; bbc_fpc=v',
        authorization: 'Basic c2hvcDpzM2NyZXQ=',
        'x-forwarded-for': SPOOFED,
      };
      for (const [method, path] of [
        ['POST', '/device-risk'],
        ['POST', '/callback'],
        ['GET', '/iojs/latest/loader_only.js'],
      ] as const)
        expect((await fetch(recorded.origin + path, { method, headers: shopper })).status, path).toBe(204);
      const [checkout, callback, script] = seen as [IncomingHttpHeaders, IncomingHttpHeaders, IncomingHttpHeaders];
      for (const headers of [checkout, callback]) {
        expect(headers.cookie).toBeUndefined();
        expect(headers.authorization).toBeUndefined();
      }
      for (const headers of seen) {
        expect(headers['x-forwarded-for']).toBe('127.0.0.1');
        expect(headers.origin).toBe(shopper.origin);
        expect(headers.host).toMatch(new RegExp(`^127\\.0\\.0\\.1(:${port})?$`));
      }
      // The vendor's cookies travel to the gateway's first-party proxy, which keeps only them.
      expect(script.cookie).toBe(shopper.cookie);
      // A body over the front's 32 KiB is refused by the front: the gateway is not asked.
      const over = await fetch(recorded.origin + '/device-risk', {
        method: 'POST',
        headers: { origin: shopper.origin, 'content-type': 'application/json' },
        body: 'x'.repeat(32 * 1024 + 1),
      });
      expect(over.status).toBe(413);
      expect(seen).toHaveLength(3);
    } finally {
      await recorded.stop();
      await recorder.stop();
    }
  });

  it('answers a 5xx when the gateway is down, which the browser package posts again after', async () => {
    const port = await freePort();
    const down = `http://127.0.0.1:${await freePort()}`;
    const orphan = await front.start({ port, gateway: down, backend: shop.url, caddyfile });
    try {
      const answer = await fetch(orphan.origin + '/device-risk', {
        method: 'POST',
        headers: { origin: orphan.origin, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(answer.status).toBeGreaterThanOrEqual(502);
      expect(answer.status).toBeLessThanOrEqual(504);
    } finally {
      await orphan.stop();
    }
  });

  it.skipIf(!chromium)(
    "reaches a decision through it in Chromium, with the vendor's real loader, the callback through it too",
    async () => {
      const collected = emulator.inspect.requests('collector');
      const event = await checkoutThrough(page!, origin, shop, {
        emulator,
        orderSecret: SETTINGS.ORDER_SECRET,
        said: () => `${name}: ${gateway.output()}`,
      });
      // The loader's first-party scripts came through the front's /iojs/ and the gateway's proxy.
      expect(emulator.inspect.requests('collector')).toBeGreaterThan(collected);
      const execution = event.data.workflowExecutionId;
      const called = () =>
        emulator.inspect
          .callbacks()
          .find((sent) => (sent.body as { workflowExecution?: { id?: string } }).workflowExecution?.id === execution);
      await expect.poll(() => called()?.delivered, { timeout: 30_000 }).toBe(true);
      expect(called()).toMatchObject({ url: origin + '/callback', status: 200 });
    },
    180_000,
  );
});

describe("the walkthrough's Caddyfile, as the caddy front runs it", () => {
  it('is the printed one, with the front, the recipe and the back end of the run', () => {
    const config = walkthroughCaddyfile(caddyfile, 41234, '/tmp/front/blackbox-capture', 'http://127.0.0.1:45678');
    expect(config).toBe(
      caddyfile
        .replace('http://:8080 ', 'http://:41234 ')
        .replace('node_modules/blackbox-capture/proxy/caddy', '/tmp/front/blackbox-capture')
        .replace('127.0.0.1:8000', '127.0.0.1:45678'),
    );
    expect(config).not.toMatch(/:8080|:8000|node_modules/);
  });

  // A changed walkthrough is refused rather than run as something else.
  it.each([
    ['http://:8080 ', 'http://:9090 '],
    ['import node_modules/blackbox-capture/proxy/caddy/gateway.caddy', 'import gateway.caddy'],
    ['reverse_proxy 127.0.0.1:8000', 'reverse_proxy 127.0.0.1:9000'],
  ])('is refused without "%s"', (line, other) => {
    expect(() => walkthroughCaddyfile(caddyfile.replace(line, other), 1, '/f', 'http://127.0.0.1:2')).toThrow(
      `the walkthrough's Caddyfile has no "${line}"`,
    );
  });
});
