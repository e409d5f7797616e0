// The docs' Angular snippet (docs/frameworks.md), as written, in an Angular 22 app written by
// hand on the packed tarball: `ng build` (the application builder, AOT), served with the server
// kit's endpoint and proxy on the emulated service, driven in Chromium with the emulator's
// loader, its third party held until Pay is pressed. Angular's packages are not devDependencies (some 240
// packages with the CLI and the builder): they are installed from their committed lockfile into the user
// cache once per lockfile, and the test is skipped, named, when the registry cannot be reached
// (with CI set, that fails it). Only @angular/core and @angular/forms, which the entry's types
// name, are devDependencies.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize } from 'node:path';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decodeBlackbox, startEmulator, type Emulator } from '../../src/emulator/index.js';
import {
  createDeviceRiskHandler,
  createFirstPartyProxy,
  toNodeHandler,
  type FetchHandler,
} from '../../src/server/index.js';
import { cachedInstall, SITES } from '../support/cached-install.js';
import { expectNewPageRun, launchChromium, revisitByRouter } from '../support/framework-site.js';
import { clientOn } from '../support/kit.js';
import { fileOf, snippet } from '../support/readme.js';

/** Angular's packages (test/package/sites/angular), kept between runs, outside the clone; the app beside them. */
const toolchain = cachedInstall(join(SITES, 'angular'), { ignoreScripts: true });
const { dir: CACHE, app: APP, installed: haveAngular, write } = toolchain;

let emulator: Emulator;
let server: Server | undefined;
let browser: Browser | undefined;
let origin = '';
let built = '';
/** What the shop's server received: the endpoint's POSTs (body and checkout id) and the orders. */
const posts: Array<{ body: { blackbox?: string; outcome?: { outcome: string } }; checkout: string | null }> = [];
const orders: Array<{ cart: string; blackbox: string; outcome?: string }> = [];

/** The app around the snippet: the shell with its links, the routes, the bootstrap. */
function writeApp(): void {
  write('package.json', JSON.stringify({ name: 'shop', private: true, type: 'module' }));
  write(
    'angular.json',
    JSON.stringify({
      version: 1,
      cli: { analytics: false, cache: { enabled: false } },
      projects: {
        shop: {
          projectType: 'application',
          root: '',
          sourceRoot: 'src',
          architect: {
            build: {
              builder: '@angular/build:application',
              options: {
                browser: 'src/main.ts',
                index: 'src/index.html',
                tsConfig: 'tsconfig.json',
                outputPath: 'dist',
                optimization: true,
                sourceMap: false,
              },
            },
          },
        },
      },
    }),
  );
  write(
    'tsconfig.json',
    JSON.stringify({
      compilerOptions: {
        strict: true,
        target: 'ES2022',
        module: 'preserve',
        moduleResolution: 'bundler',
        lib: ['ES2022', 'dom'],
        skipLibCheck: true,
        isolatedModules: true,
      },
      angularCompilerOptions: { strictTemplates: true, strictInjectionParameters: true },
      files: ['src/main.ts'],
    }),
  );
  write(
    'src/index.html',
    '<!doctype html><html><head><base href="/"></head><body><app-root></app-root></body></html>\n',
  );
  for (const name of ['frameworks-angular-checkout', 'frameworks-angular-element']) {
    const block = snippet(name);
    write(fileOf(block), block.code);
  }
  write(
    'src/main.ts',
    `import { Component } from '@angular/core';
import { bootstrapApplication } from '@angular/platform-browser';
import { provideRouter, RouterLink, RouterOutlet } from '@angular/router';
import { Checkout } from './app/checkout';
import { ElementCheckout } from './app/element-checkout';

@Component({ selector: 'app-page', template: '<p id="page">{{ text }}</p>' })
class Page {
  text = 'elsewhere';
}

@Component({
  selector: 'app-root',
  imports: [RouterLink, RouterOutlet],
  template: \`<nav>
    <a id="to-nav-1" routerLink="/checkout/nav-1">cart 1</a> <a id="to-nav-2" routerLink="/checkout/nav-2">cart 2</a>
    <a id="away" routerLink="/elsewhere">elsewhere</a>
  </nav><router-outlet />\`,
})
class App {}

bootstrapApplication(App, {
  providers: [
    provideRouter([
      { path: 'checkout/:cart', component: Checkout },
      { path: 'element/:cart', component: ElementCheckout },
      { path: 'elsewhere', component: Page },
      { path: 'thanks', component: Page },
    ]),
  ],
}).catch((error: unknown) => console.error(error));
`,
  );
}

/** `ng build` in the app; resolves with its output, rejects with it on failure. */
function ngBuild(): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, NG_CLI_ANALYTICS: 'false', NO_COLOR: '1' };
  for (const name of Object.keys(env)) if (/^(VITEST|TEST$|NODE_ENV$)/.test(name)) delete env[name];
  const ng = join(CACHE, 'node_modules', '@angular', 'cli', 'bin', 'ng.js');
  const build = spawn(process.execPath, [ng, 'build'], { cwd: APP, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  build.stdout.on('data', (chunk) => (output += chunk));
  build.stderr.on('data', (chunk) => (output += chunk));
  return new Promise((resolve, reject) =>
    build.once('exit', (code) =>
      code === 0 ? resolve(output) : reject(new Error(`ng build exited ${code}:\n${output}`)),
    ),
  );
}

const TYPES: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };

/** The shop: the kit's endpoint and proxy, the loader, the order route, the built app. */
async function startShop(): Promise<void> {
  const client = clientOn(emulator);
  const loader = await (await fetch(emulator.loaderUrl)).text();
  const iojs = createFirstPartyProxy({ prefix: '/iojs', collectorUrl: emulator.collectorUrl });
  const browserFiles = join(APP, 'dist', 'browser');
  let deviceRisk: FetchHandler | undefined;
  const shop: FetchHandler = async (request, context) => {
    const { pathname } = new URL(request.url);
    if (pathname.startsWith('/iojs/')) return iojs(request, context);
    if (pathname === '/device-risk') {
      posts.push({ body: await request.clone().json(), checkout: request.headers.get('checkout-id') });
      deviceRisk ??= createDeviceRiskHandler({
        client,
        allowedOrigins: [origin],
        workflowKey: 10011,
        resolveCustomer: () => ({ customerInternalReference: 'order-angular', userReference: 'user-angular' }),
      });
      return deviceRisk(request, context);
    }
    if (pathname === '/order') {
      orders.push(await request.json());
      return new Response(null, { status: 204 });
    }
    if (pathname === '/static/vendor/loader.js')
      return new Response(loader, { headers: { 'content-type': TYPES['.js']! } });
    // The app's files; every other path is the router's, answered with its page.
    const file = normalize(join(browserFiles, pathname));
    const found =
      file.startsWith(browserFiles) && extname(file) && existsSync(file) ? file : join(browserFiles, 'index.html');
    return new Response(readFileSync(found), { headers: { 'content-type': TYPES[extname(found)] ?? 'text/plain' } });
  };
  server = createServer(toNodeHandler(shop));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  if (!haveAngular) return;
  emulator = await startEmulator({ accountRequestsPerSecond: 0 });
  toolchain.clearApp();
  writeApp();
  // Beside Angular's packages, so that the entry's imports of @angular/* find the app's copy.
  toolchain.installPackage();
  built = await ngBuild();
  await startShop();
  browser = await launchChromium();
}, 600_000);

/** Each test's page run, closed after it even when it failed (its capture would deliver into the next). */
const contexts: BrowserContext[] = [];
const newContext = async () => {
  const context = await browser!.newContext();
  contexts.push(context);
  return context;
};
afterEach(async () => {
  for (const context of contexts.splice(0)) await context.close();
});

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  await emulator?.close();
  toolchain.clearApp();
});

/**
 * Pay pressed while the capture collects (the third party's scripts held until then), on the
 * route `path`: the order the page's (ngSubmit) handler sends, once it has gone to /thanks.
 */
async function payWhileCollecting(path: string, started: string) {
  const context = await newContext();
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => /^(error|warning)$/.test(message.type()) && errors.push(message.text()));
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  await context.route(`${emulator.thirdPartyUrl}/**`, async (route) => {
    await held;
    await route.continue();
  });
  orders.length = posts.length = 0;
  await page.goto(`${origin}${path}`, { waitUntil: 'domcontentloaded' }); // the held script holds `load`
  // Bootstrapped: the capture has started (a click before would be a native submit).
  await page.waitForFunction(() => (window as { IGLOO?: { loader?: unknown } }).IGLOO?.loader);
  expect(await page.locator(started).count()).toBe(1); // still collecting
  await page.locator('button').click();
  release();
  await page.locator('#page').waitFor();
  expect(page.url()).toBe(`${origin}/thanks`);
  expect(orders).toHaveLength(1);
  const [order] = orders;
  expect(decodeBlackbox(order!.blackbox)?.sources.sort()).toEqual(['fp_dyn', 'fp_static', 'tp']);
  // The order's blackbox is the final one: the one the capture delivered on completion.
  await expect.poll(() => posts.length, { timeout: 20_000 }).toBe(1);
  expect(posts[0]!.body).toEqual(
    expect.objectContaining({ blackbox: order!.blackbox, outcome: expect.objectContaining({ outcome: 'complete' }) }),
  );
  // The endpoint answers once the checkout is queued: the transaction follows.
  const made = () => emulator.inspect.transactions().filter((made) => made.blackboxes.includes(order!.blackbox));
  await expect.poll(() => made().length, { timeout: 20_000 }).toBe(1);
  expect(errors).toEqual([]); // no JIT warning, no NG8001, nothing else
  return { order: order!, checkout: posts[0]!.checkout };
}

describe.skipIf(!haveAngular)(
  'injectBlackbox and the element in an Angular app built by ng build (docs/frameworks.md)',
  () => {
    it('(ngSubmit) while the capture collects: the order and the endpoint get the final blackbox, outcome complete', async () => {
      const { order, checkout } = await payWhileCollecting('/checkout/pay-1', 'form[data-complete="false"]');
      expect(order.cart).toBe('pay-1');
      expect(checkout).toBe('pay-1');
      expect(built).not.toMatch(/WARNING|NG\d{4}/);
    });

    it("'frameworks-angular-element': <blackbox-capture> holds (ngSubmit) until the capture ends; the form has the final blackbox", async () => {
      const { order } = await payWhileCollecting('/element/pay-2', 'blackbox-capture:state(collecting)');
      expect(order).toMatchObject({ cart: 'pay-2', outcome: 'complete' });
    });

    it("three visits of one cart by the router make one transaction; a second cart loads fully by the package's doing, its own", async () => {
      posts.length = 0;
      const before = emulator.inspect.requests('accountCreate');
      const context = await newContext();
      const page = await context.newPage();
      await page.goto(`${origin}/checkout/nav-1`);
      await expect.poll(() => posts.length, { timeout: 20_000 }).toBe(1);
      await revisitByRouter(page, '#page');
      await page.locator('#away').click();
      await page.locator('#page').waitFor();
      // One collection per page run: the page run's blackbox went to nav-1, so the package
      // reloads nav-2's page, which posts its own.
      await expectNewPageRun(page, () => page.locator('#to-nav-2').click());
      await page.locator('form[data-complete="true"]').waitFor();
      await expect.poll(() => posts.length, { timeout: 20_000 }).toBe(2);
      expect(posts.map((post) => post.checkout)).toEqual(['nav-1', 'nav-2']);
      expect(posts[1]!.body).not.toEqual(posts[0]!.body);
      await expect.poll(() => emulator.inspect.requests('accountCreate') - before, { timeout: 20_000 }).toBe(2);
      await new Promise((resolve) => setTimeout(resolve, 300)); // a third POST would have started by now
      expect(posts).toHaveLength(2);
    });
  },
);
