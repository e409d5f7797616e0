// docs/frameworks.md#one-collection-per-page-run, as written: two checkouts in one visit (cart →
// checkout A → Pay → cart → checkout B → Pay) in pages whose navigation replaces the page
// without a full load (Turbo Drive 8, htmx 2 with hx-boost, React Router 7, Astro 7's
// <ClientRouter />), in Chromium, with the vendor's real loader 5.2.2 and with the emulator's.
// (The Next.js App Router's recipe runs in test/package/nextjs.test.ts, in the app it builds.) The vendor's loader collects once per page run
// (docs/vendor-contract.md#one-collection-per-page-run), so each recipe makes the checkout load
// fully its framework's documented way: each order then carries its own final blackbox (B's is
// not A's) and the endpoint starts one transaction per blackbox. Without the recipe's line, the
// package reloads checkout B itself (docs/browser.md#one-blackbox-per-checkout), with the same
// result; with reload="false" on the element, B's capture ends blackbox_used and nothing is
// posted. The script tag (the UMD file) in the checkout page's <head>: Turbo runs each
// checkout's tag, and the package reloads B; htmx drops the new head, and the endpoint refuses
// the orders' empty blackbox. And the measure of the way the docs turned down: a fresh
// same-origin iframe running the loader again (what it costs, what the collection scripts see there).
//
// Turbo, htmx, React Router and Astro are not devDependencies: installed from their committed
// lockfile into the user cache once per lockfile (test/support/cached-install.ts), as the other
// framework tests do, with the packed package beside them; React Router's app is built by the
// project's Vite, Astro's by its own build, once for every case. The test is skipped, named,
// when the registry cannot be reached (with CI set, that fails it). About 110 s on two cores
// with the toolchains cached (the first run installs them, a few minutes).
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cachedInstall, SITES } from '../support/cached-install.js';
import {
  FINAL_SOURCES,
  launchChromium,
  onNewPage,
  sourcesOf,
  startFrameworkSite,
  type FrameworkSite,
} from '../support/framework-site.js';
import { realLoaderSource } from '../support/real-loader.mjs';
import { snippet } from '../support/readme.js';
import { ROOT, writerIn } from '../support/tarball.js';

/** Turbo, htmx, React Router and Astro (test/package/sites/navigation), kept between runs outside the clone. */
const toolchain = cachedInstall(join(SITES, 'navigation'));
const { dir: CACHE, installed } = toolchain;

/**
 * A navigation model: the shop's pages for it. `recipe` false is the control: the recipe's
 * line taken out (a page served so, or the built app's `/control` copy of the cart).
 */
interface Model {
  name:
    'turbo' | 'htmx' | 'react-router' | 'astro' | 'turbo, the script tag in <head>' | 'htmx, the script tag in <head>';
  /** A page of the model (a GET), or undefined. */
  page(url: URL, recipe: boolean): string | Buffer | undefined;
  /** The cart's path. */
  cart(recipe: boolean): string;
  /** Where Pay's form post (POST /order) sends the browser: the cart again, saying the order was placed. */
  placed(cart: string, recipe: boolean): string;
  /** The checkout's path for `cart`. */
  checkout(cart: string, recipe: boolean): string;
  /** Whether the order carries the element's `blackbox-outcome` field. */
  outcomeField: boolean;
  /** Waits, before Pay, for what the page's capture gives (the element and the hook hold Pay themselves). */
  settle?(page: Page): Promise<void>;
}

/** `<%= @cart.id %>` rendered, as Rails renders the snippet's ERB. */
const erb = (template: string, cart: string) => template.replaceAll('<%= @cart.id %>', cart);

const asset = (file: string) => () => readFileSync(join(CACHE, 'node_modules', file));
const turboScript = asset('@hotwired/turbo/dist/turbo.es2017-esm.js');
const htmxScript = asset('htmx.org/dist/htmx.min.js');

/** Turbo and htmx: pages the server renders, around the snippets. */
const SERVER_PAGES: Model[] = [
  {
    name: 'turbo',
    page(url, recipe) {
      if (url.pathname === '/assets/turbo.js') return turboScript();
      if (url.pathname === '/cart')
        return (
          '<!doctype html><html><head><script type="module" src="/assets/turbo.js"></script></head><body>' +
          placedLine(url) +
          '<a id="to-A" href="/checkout?cart=A">Checkout A</a> <a id="to-B" href="/checkout?cart=B">Checkout B</a>' +
          '</body></html>'
        );
      if (url.pathname !== '/checkout') return undefined;
      const page = erb(snippet('turbo-checkout').code, url.searchParams.get('cart')!);
      return recipe ? page : page.replace(/\s*<meta name="turbo-visit-control" content="reload" \/>/, '');
    },
    cart: () => '/cart',
    placed: (cart) => `/cart?placed=${cart}`,
    checkout: (cart) => `/checkout?cart=${cart}`,
    outcomeField: true,
  },
  {
    name: 'htmx',
    page(url, recipe) {
      if (url.pathname === '/assets/htmx.js') return htmxScript();
      // The element's entry in every page's head, as a layout has it: htmx keeps the first page's head.
      const head =
        '<!doctype html><html><head><script src="/assets/htmx.js"></script>' +
        '<script type="module" src="/assets/blackbox-capture/element.js"></script></head><body hx-boost="true">';
      if (url.pathname === '/cart') {
        const links = ['A', 'B']
          .map((cart) =>
            snippet('htmx-cart').code.trim().replaceAll('{{cart}}', cart).replace('<a ', `<a id="to-${cart}" `),
          )
          .join(' ');
        return head + placedLine(url) + (recipe ? links : links.replaceAll(' hx-boost="false"', '')) + '</body></html>';
      }
      if (url.pathname !== '/checkout') return undefined;
      const cart = url.searchParams.get('cart')!;
      return (
        head +
        `<form action="/order" method="post"><input type="hidden" name="cart" value="${cart}" />` +
        `<blackbox-capture name="blackbox" loader-url="/static/vendor/loader.js" post-url="/device-risk" checkout-id="${cart}"></blackbox-capture>` +
        '<button>Pay</button></form></body></html>'
      );
    },
    cart: () => '/cart',
    placed: (cart) => `/cart?placed=${cart}`,
    checkout: (cart) => `/checkout?cart=${cart}`,
    outcomeField: true,
  },
];

/**
 * The script tag (the UMD file) in the checkout page's `<head>`, with `data-checkout-id`, and the
 * field it fills in the form: Turbo runs the tag of each new checkout (its attributes differ), and
 * the package reloads checkout B; htmx's boost drops a new page's head, so the tag never runs.
 */
function scriptTagInHead(
  name: 'turbo' | 'htmx',
  file = 'blackbox-capture.umd.js',
  place: 'head' | 'body' = 'head',
  withCheckoutId = true,
): Model {
  const framework =
    name === 'turbo'
      ? '<script type="module" src="/assets/turbo.js"></script>'
      : '<script src="/assets/htmx.js"></script>';
  const body = name === 'turbo' ? '<body>' : '<body hx-boost="true">';
  return {
    name: `${name}, the script tag in <head>`,
    page(url) {
      if (url.pathname === '/assets/turbo.js') return turboScript();
      if (url.pathname === '/assets/htmx.js') return htmxScript();
      if (url.pathname === '/cart')
        return (
          `<!doctype html><html><head>${framework}</head>${body}${placedLine(url)}` +
          '<a id="to-A" href="/checkout?cart=A">Checkout A</a> <a id="to-B" href="/checkout?cart=B">Checkout B</a>' +
          '</body></html>'
        );
      if (url.pathname !== '/checkout') return undefined;
      const cart = url.searchParams.get('cart')!;
      const tag =
        `<script src="/assets/blackbox-capture/${file}" data-loader-url="/static/vendor/loader.js"` +
        ` data-post-url="/device-risk" data-field="blackbox"${withCheckoutId ? ` data-checkout-id="${cart}"` : ''}></script>`;
      return (
        `<!doctype html><html><head>${framework}${place === 'head' ? tag : ''}</head>${body}` +
        `<form action="/order" method="post"><input type="hidden" name="cart" value="${cart}" />` +
        '<input type="hidden" id="blackbox" name="blackbox" /><button>Pay</button></form>' +
        `${place === 'body' ? tag : ''}</body></html>`
      );
    },
    cart: () => '/cart',
    placed: (cart) => `/cart?placed=${cart}`,
    checkout: (cart) => `/checkout?cart=${cart}`,
    outcomeField: false,
    // The tag holds no submit: Pay once its capture has ended (its `ready`).
    async settle(page) {
      await page.waitForFunction(() => !!(window as { BlackboxCapture?: { ready?: unknown } }).BlackboxCapture?.ready);
      // Settled, lived or not (a refused delivery is the page's blackboxerror).
      await page.evaluate(() =>
        (window as unknown as { BlackboxCapture: { ready: Promise<string> } }).BlackboxCapture.ready.catch(() => ''),
      );
    },
  };
}

const placedLine = (url: URL) => {
  const placed = url.searchParams.get('placed');
  return placed ? `<p>Order ${placed} placed</p>` : '';
};

/**
 * React Router 7 (declarative routes, built by Vite): the cart's links are the snippet
 * (`/control` has them without `reloadDocument`); the checkout awaits the hook's `ready` in its
 * submit handler and goes back to the cart on the client.
 */
const REACT_ROUTER_MAIN = `import type { FormEvent } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter, Route, Routes, useNavigate, useParams, useSearchParams } from 'react-router';
import { useBlackbox } from 'blackbox-capture/react';
import { CheckoutLink } from './cart';
import { CheckoutLink as ControlLink } from './control-cart';

function Cart({ Link }: { Link: typeof CheckoutLink }) {
  const [params] = useSearchParams();
  const placed = params.get('placed');
  return (
    <main>
      {placed && <p>Order {placed} placed</p>}
      <Link cart="A" /> <Link cart="B" />
    </main>
  );
}

function Checkout({ base }: { base: string }) {
  const { cart = '' } = useParams();
  const navigate = useNavigate();
  const { ready } = useBlackbox({ loaderUrl: '/static/vendor/loader.js', post: '/device-risk', checkoutId: cart });
  async function pay(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const order = new FormData(event.currentTarget);
    order.set('blackbox', await ready);
    await fetch('/order', { method: 'POST', body: order, redirect: 'manual' });
    navigate(base + '/cart?placed=' + cart);
  }
  return (
    <form onSubmit={pay}>
      <input type="hidden" name="cart" value={cart} />
      <button>Pay</button>
    </form>
  );
}

createRoot(document.getElementById('root')!).render(
  <BrowserRouter>
    <Routes>
      <Route path="/cart" element={<Cart Link={CheckoutLink} />} />
      <Route path="/checkout/:cart" element={<Checkout base="" />} />
      <Route path="/control/cart" element={<Cart Link={ControlLink} />} />
      <Route path="/control/checkout/:cart" element={<Checkout base="/control" />} />
    </Routes>
  </BrowserRouter>,
);
`;

const REACT_ROUTER_APP = join(CACHE, 'app-react-router');

/** Builds the React Router app (Vite, in the toolchain's folder, the package packed beside it). */
function buildReactRouter() {
  rmSync(REACT_ROUTER_APP, { recursive: true, force: true });
  const write = writerIn(REACT_ROUTER_APP);
  write(
    'index.html',
    '<!doctype html><html><body><div id="root"></div><script type="module" src="/src/main.tsx"></script></body></html>\n',
  );
  write('src/main.tsx', REACT_ROUTER_MAIN);
  const link = snippet('react-router-cart').code;
  write('src/cart.tsx', link);
  write(
    'src/control-cart.tsx',
    link.replace(' reloadDocument to=', ' to=').replace('to={`/checkout/', 'to={`/control/checkout/'),
  );
  execFileSync(process.execPath, [join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'], {
    cwd: REACT_ROUTER_APP,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

const REACT_ROUTER_MODEL: Model = {
  name: 'react-router',
  page(url) {
    const dist = join(REACT_ROUTER_APP, 'dist');
    if (url.pathname.startsWith('/assets/') && /^\/assets\/[\w.-]+\.js$/.test(url.pathname))
      return readFileSync(join(dist, url.pathname));
    // A single-page app: every route is its index.html.
    if (/^(\/control)?\/(cart|checkout\/[AB])$/.test(url.pathname))
      return readFileSync(join(dist, 'index.html'), 'utf8');
    return undefined;
  },
  cart: (recipe) => (recipe ? '/cart' : '/control/cart'),
  placed: (cart, recipe) => `${recipe ? '' : '/control'}/cart?placed=${cart}`,
  checkout: (cart, recipe) => `${recipe ? '' : '/control'}/checkout/${cart}`,
  outcomeField: false,
};

/**
 * Astro 7 with `<ClientRouter />` (a static build): the cart's links are the snippet (`/control`
 * has them without `data-astro-reload`); the checkout is the element in a form the router posts.
 */
const ASTRO_APP = join(CACHE, 'app-astro');

function buildAstro() {
  rmSync(ASTRO_APP, { recursive: true, force: true });
  const write = writerIn(ASTRO_APP);
  write('package.json', JSON.stringify({ name: 'shop', private: true, type: 'module' }));
  write('astro.config.mjs', "export default { build: { format: 'file' }, telemetry: false };\n");
  write(
    'src/layouts/Shop.astro',
    "---\nimport { ClientRouter } from 'astro:transitions';\n---\n\n" +
      '<html><head><ClientRouter /></head><body><slot /></body></html>\n',
  );
  const link = snippet('astro-cart').code;
  write('src/components/CheckoutLink.astro', link);
  write(
    'src/components/ControlLink.astro',
    link.replace(' data-astro-reload>', '>').replace('href={`/checkout/', 'href={`/control/checkout/'),
  );
  const paths = "export const getStaticPaths = () => [{ params: { cart: 'A' } }, { params: { cart: 'B' } }];\n";
  for (const [prefix, component] of [
    ['', 'CheckoutLink'],
    ['control/', 'ControlLink'],
  ] as const) {
    const up = prefix ? '../../' : '../';
    const imports = `import Shop from '${up}layouts/Shop.astro';\nimport Link from '${up}components/${component}.astro';\n`;
    const links = '<Link cart="A" /> <Link cart="B" />';
    write(`src/pages/${prefix}cart.astro`, `---\n${imports}---\n\n<Shop>${links}</Shop>\n`);
    write(
      `src/pages/${prefix}placed/[cart].astro`,
      `---\n${imports.replaceAll(up, up + '../')}${paths}const { cart } = Astro.params;\n---\n\n` +
        `<Shop><p>Order {cart} placed</p>${links}</Shop>\n`,
    );
    write(
      `src/pages/${prefix}checkout/[cart].astro`,
      `---\nimport Shop from '${up}../layouts/Shop.astro';\n${paths}const { cart } = Astro.params;\n---\n\n` +
        '<Shop>\n<form action="/order" method="post"><input type="hidden" name="cart" value={cart} />\n' +
        '<blackbox-capture name="blackbox" loader-url="/static/vendor/loader.js" post-url="/device-risk" checkout-id={cart}></blackbox-capture>\n' +
        "<button>Pay</button></form>\n<script>import 'blackbox-capture/element';</script>\n</Shop>\n",
    );
  }
  execFileSync(process.execPath, [join(CACHE, 'node_modules/astro/bin/astro.mjs'), 'build', '--silent'], {
    cwd: ASTRO_APP,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ASTRO_TELEMETRY_DISABLED: '1' },
  });
}

const ASTRO_MODEL: Model = {
  name: 'astro',
  page(url) {
    const dist = join(ASTRO_APP, 'dist');
    if (/^\/_astro\/[\w.-]+\.js$/.test(url.pathname)) return readFileSync(join(dist, url.pathname));
    if (/^(\/control)?\/(cart|(checkout|placed)\/[AB])$/.test(url.pathname))
      return readFileSync(join(dist, `${url.pathname}.html`), 'utf8');
    return undefined;
  },
  cart: (recipe) => (recipe ? '/cart' : '/control/cart'),
  placed: (cart, recipe) => `${recipe ? '' : '/control'}/placed/${cart}`,
  checkout: (cart, recipe) => `${recipe ? '' : '/control'}/checkout/${cart}`,
  outcomeField: true,
};

const MODELS: Model[] = [...SERVER_PAGES, REACT_ROUTER_MODEL, ASTRO_MODEL];

const LOADERS = [
  ['the real loader 5.2.2', realLoaderSource()],
  ["the emulator's loader", undefined],
] as const;

/** The shop of one case: the pages of `model`, the orders it took, the package's files from dist/. */
async function shop(model: Model, loaderSource: string | undefined, recipe: boolean, optOut = false) {
  const orders: Array<Record<string, string>> = [];
  const site = await startFrameworkSite(
    async (request) => {
      const url = new URL(request.url);
      if (url.pathname.startsWith('/assets/blackbox-capture/')) {
        const file = url.pathname.slice('/assets/blackbox-capture/'.length);
        if (!/^[\w.-]+\.js$/.test(file)) return new Response('not found', { status: 404 });
        return new Response(readFileSync(join(ROOT, 'dist', file)), {
          headers: { 'content-type': 'text/javascript' },
        });
      }
      if (url.pathname === '/fresh-frame') return html(FRESH_FRAME);
      if (url.pathname === '/order' && request.method === 'POST') {
        const fields = Object.fromEntries(
          [...(await request.formData())].map(([name, value]) => [
            name,
            typeof value === 'string' ? value : value.name,
          ]),
        ) as Record<string, string>;
        orders.push(fields);
        // As Rails answers a form: see the cart (Turbo and htmx follow it without a full load).
        return new Response(null, { status: 303, headers: { location: model.placed(fields.cart!, recipe) } });
      }
      const page = request.method === 'GET' ? model.page(url, recipe) : undefined;
      if (page === undefined) return new Response('not found', { status: 404 });
      return typeof page === 'string'
        ? // reload="false": the shop opted out of the package's reload (the element's attribute).
          html(optOut ? page.replace(/<blackbox-capture(?=\s)/g, '<blackbox-capture reload="false"') : page)
        : new Response(new Uint8Array(page), { headers: { 'content-type': 'text/javascript' } });
    },
    loaderSource === undefined ? {} : { loaderSource },
  );
  return { site, orders };
}

const html = (text: string) => new Response(text, { headers: { 'content-type': 'text/html; charset=utf-8' } });

/** Marks the page run: a full load forgets it, a navigation that replaces the page keeps it. */
const markRun = (page: Page, mark: string) => page.evaluate((m) => ((window as { run?: string }).run = m), mark);
const runOf = (page: Page) => page.evaluate(() => (window as { run?: string }).run ?? 'new');

/** Waits for a new page run (the mark gone), through the navigation that replaces this one. */
async function newRun(page: Page) {
  await expect.poll(() => runOf(page).catch(() => 'navigating'), { timeout: 20_000, interval: 50 }).toBe('new');
}

/**
 * cart → checkout A → Pay → cart → checkout B → Pay; the page run seen at each checkout. The
 * checkouts of `fullLoads` are awaited in a page run of their own (the recipe's full load, or
 * the package's reload).
 */
async function twoCheckouts(
  page: Page,
  site: FrameworkSite,
  model: Model,
  recipe: boolean,
  fullLoads = recipe ? ['A', 'B'] : [],
) {
  await page.goto(site.origin + model.cart(recipe));
  const runs: string[] = [];
  for (const cart of ['A', 'B']) {
    await markRun(page, `before ${cart}`);
    await page.locator(`#to-${cart}`).click();
    await page.waitForURL(site.origin + model.checkout(cart, recipe));
    if (fullLoads.includes(cart)) await newRun(page);
    // Turbo's reload comes after its visit rendered nothing: wait for the page that stays.
    await page.getByRole('button', { name: 'Pay' }).waitFor();
    await page.waitForLoadState('load');
    // The capture has started (the element defined, or the hook's effect run).
    await page.waitForFunction(() => (window as { IGLOO?: { loader?: unknown } }).IGLOO?.loader);
    await model.settle?.(page);
    runs.push(await runOf(page));
    await page.getByRole('button', { name: 'Pay' }).click();
    await page.getByText(`Order ${cart} placed`).waitFor();
  }
  return runs;
}

let browser: Browser;
beforeAll(async () => {
  if (!installed) return;
  toolchain.installPackage();
  buildReactRouter();
  buildAstro();
  browser = await launchChromium();
}, 300_000);
afterAll(async () => {
  await browser?.close();
});

describe.skipIf(!installed)('one collection per page run: the checkout loads fully (docs/frameworks.md)', () => {
  describe.each(LOADERS)('%s', (_loader, loaderSource) => {
    it.each(MODELS.map((model) => [model.name, model] as const))(
      '%s: two checkouts in one visit, each order its own final blackbox, one transaction each',
      async (_name, model) => {
        const { site, orders } = await shop(model, loaderSource, true);
        await onNewPage(browser, site, async (page, problems) => {
          // Each checkout a page run of its own: the recipe's full load.
          expect(await twoCheckouts(page, site, model, true)).toEqual(['new', 'new']);
          await ordersCarryTheirOwn(site, orders, model);
          expect(problems).toEqual([]);
        });
      },
      60_000,
    );
  });

  it.each(MODELS.map((model) => [model.name, model] as const))(
    "%s without the recipe's line: checkout B loads fully by the package's own doing, its own final blackbox",
    async (_name, model) => {
      const { site, orders } = await shop(model, realLoaderSource(), false);
      await onNewPage(browser, site, async (page, problems) => {
        // Checkout B met the page run of the cart: the package reloaded it (docs/browser.md#one-blackbox-per-checkout).
        // Checkout A had the cart's page run; B was reloaded: a page run of its own.
        expect(await twoCheckouts(page, site, model, false, ['B'])).toEqual(['before A', 'new']);
        await ordersCarryTheirOwn(site, orders, model);
        expect(problems).toEqual([]);
      });
    },
    60_000,
  );

  it.each(MODELS.filter((model) => model.name !== 'react-router').map((model) => [model.name, model] as const))(
    '%s without the recipe\'s line, reload="false": checkout B\'s capture ends blackbox_used in the page, nothing posted, one transaction',
    async (_name, model) => {
      const { site, orders } = await shop(model, realLoaderSource(), false, true);
      await onNewPage(browser, site, async (page) => {
        // Checkout B in the page run of the cart: no new collection.
        const runs = await twoCheckouts(page, site, model, false);
        expect(runs[1]).not.toBe('new');
        // The page run's blackbox went to checkout A: the package refuses it to B
        // (docs/browser.md#one-blackbox-per-checkout), so order B carries none, never A's.
        const [a, b] = orders.map((order) => order.blackbox ?? '');
        expect(a).not.toBe('');
        expect(b).toBe('');
        await new Promise((resolve) => setTimeout(resolve, 300)); // a second POST would have started by now
        expect(site.posts.map((post) => post.code ?? post.status)).toEqual([202]);
        const used = () => site.emulator.inspect.transactions().filter((tx) => tx.blackboxes.length > 0);
        await expect.poll(() => used().length, { timeout: 20_000 }).toBe(1);
      });
    },
    60_000,
  );
});

/** Each order its own final blackbox (B's is not A's), one transaction each, no post refused. */
async function ordersCarryTheirOwn(site: FrameworkSite, orders: Array<Record<string, string>>, model: Model) {
  expect(orders.map((order) => [order.cart, model.outcomeField ? order['blackbox-outcome'] : 'none'])).toEqual([
    ['A', model.outcomeField ? 'complete' : 'none'],
    ['B', model.outcomeField ? 'complete' : 'none'],
  ]);
  const [a, b] = orders.map((order) => order.blackbox!);
  expect([sourcesOf(a), sourcesOf(b)]).toEqual([FINAL_SOURCES, FINAL_SOURCES]);
  expect(b).not.toBe(a);
  const used = () => site.emulator.inspect.transactions().filter((tx) => tx.blackboxes.length > 0);
  await expect.poll(() => used().length, { timeout: 20_000 }).toBe(2);
  expect(used().map((tx) => tx.blackboxes)).toEqual([[a], [b]]);
  expect(site.posts.map((post) => [post.checkout, post.status])).toEqual([
    ['A', 202],
    ['B', 202],
  ]);
}

describe.skipIf(!installed)(
  "the script tag in the checkout page's <head> (docs/browser.md#one-blackbox-per-checkout)",
  () => {
    it("Turbo runs each checkout's tag; checkout B loads fully by the package's own doing, its own final blackbox", async () => {
      const model = scriptTagInHead('turbo');
      const { site, orders } = await shop(model, realLoaderSource(), false);
      await onNewPage(browser, site, async (page, problems) => {
        // A runs in the cart's page run (Turbo adds the new head script); B was reloaded.
        expect(await twoCheckouts(page, site, model, false, ['B'])).toEqual(['before A', 'new']);
        await ordersCarryTheirOwn(site, orders, model);
        expect(problems).toEqual([]);
      });
    }, 60_000);

    // Both builds warn (issue #68): the text comes from the messages chunk beside the file.
    it.each(['blackbox-capture.development.umd.js', 'blackbox-capture.umd.js'])(
      'Turbo, the same tag on every checkout (no data-checkout-id): it runs once; %s says what to do',
      async (file) => {
        const model = scriptTagInHead('turbo', file, 'head', false);
        const { site, orders } = await shop(model, realLoaderSource(), false);
        await onNewPage(browser, site, async (page, problems) => {
          await page.goto(site.origin + model.cart(false));
          for (const cart of ['A', 'B']) {
            await page.locator(`#to-${cart}`).click();
            await page.getByRole('button', { name: 'Pay' }).waitFor();
            if (cart === 'A') await model.settle!(page);
            else await expect.poll(() => problems.length, { timeout: 20_000 }).toBe(1);
            await page.getByRole('button', { name: 'Pay' }).click();
            await page.getByText(`Order ${cart} placed`).waitFor();
          }
          // Checkout B: the tag did not run again, its field stayed empty; the console says why and what to do.
          expect(
            orders.map((order) => [order.cart, order.blackbox === '' ? 'none' : sourcesOf(order.blackbox)]),
          ).toEqual([
            ['A', FINAL_SOURCES],
            ['B', 'none'],
          ]);
          expect(problems).toEqual([
            expect.stringMatching(
              /^warning: \[blackbox-capture\] The field #blackbox of this page stays empty: the script tag in <head> ran once .*data-checkout-id/,
            ),
          ]);
          expect(site.posts.map((post) => post.status)).toEqual([202]);
        });
      },
      60_000,
    );

    it("the development build's tag in <body>, run again by Turbo for the same checkout: no warning of a tag of the page's", async () => {
      const model = scriptTagInHead('turbo', 'blackbox-capture.development.umd.js', 'body');
      const { site, orders } = await shop(model, realLoaderSource(), false);
      await onNewPage(browser, site, async (page, problems) => {
        await page.goto(site.origin + model.cart(false));
        await markRun(page, 'cart');
        for (let visit = 0; visit < 2; visit++) {
          await page.locator('#to-A').click();
          await page.getByRole('button', { name: 'Pay' }).waitFor();
          await model.settle!(page);
          await page.getByRole('button', { name: 'Pay' }).click();
          await page.getByText('Order A placed').waitFor();
        }
        // One page run: the second copy of the package joined the first one's run and its loader tag.
        expect(await runOf(page)).toBe('cart');
        expect(orders.map((order) => sourcesOf(order.blackbox))).toEqual([FINAL_SOURCES, FINAL_SOURCES]);
        expect(orders[1]!.blackbox).toBe(orders[0]!.blackbox);
        // No warning of "a tag for …loader.js" of the page's: the tag was the package's own
        // (src/browser/warnings.ts); the console's one line is the refused POST's.
        expect(problems).toEqual(['error: Failed to load resource: the server responded with a status of 422 ()']);
        // The second copy posts the same checkout's blackbox under a key of its own: the endpoint refuses
        // the reuse (422 blackbox_reused), and the transaction stays the first one.
        expect(site.posts.map((post) => [post.checkout, post.code ?? post.status])).toEqual([
          ['A', 202],
          ['A', 'blackbox_reused'],
        ]);
      });
    }, 60_000);

    it("htmx's boost drops the checkout's head: the tag never runs, the orders carry no blackbox, and the endpoint refuses an empty one", async () => {
      const model = scriptTagInHead('htmx');
      const { site, orders } = await shop(model, realLoaderSource(), false);
      await onNewPage(browser, site, async (page) => {
        await page.goto(site.origin + model.cart(false));
        for (const cart of ['A', 'B']) {
          await page.locator(`#to-${cart}`).click();
          await page.getByRole('button', { name: 'Pay' }).waitFor();
          // The package never ran: the page cannot say anything (docs/browser.md#one-blackbox-per-checkout).
          expect(await page.evaluate(() => typeof (window as { BlackboxCapture?: unknown }).BlackboxCapture)).toBe(
            'undefined',
          );
          await page.getByRole('button', { name: 'Pay' }).click();
          await page.getByText(`Order ${cart} placed`).waitFor();
        }
        expect(orders.map((order) => [order.cart, order.blackbox])).toEqual([
          ['A', ''],
          ['B', ''],
        ]);
        expect(site.posts).toEqual([]);
        // The typed answer is the server's: an order's empty blackbox, passed on, is refused.
        const answer = await fetch(`${site.origin}/device-risk`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin: site.origin, 'idempotency-key': 'order-A' },
          body: JSON.stringify({ blackbox: orders[0]!.blackbox }),
        });
        expect([answer.status, ((await answer.json()) as { error: { code: string } }).error.code]).toEqual([
          400,
          'invalid_blackbox',
        ]);
      });
    }, 60_000);
  },
);

/** A same-origin frame that runs the package's capture (the UMD) and tells its parent what it got and saw. */
const FRESH_FRAME = `<!doctype html><html><head>
<script src="/assets/blackbox-capture/blackbox-capture.umd.js"></script>
<script>
  const started = performance.now();
  BlackboxCapture.captureBlackbox({ loaderUrl: '/static/vendor/loader.js' }).then((blackbox) =>
    parent.postMessage({ blackbox, ms: performance.now() - started, framed: top !== self, width: innerWidth, height: innerHeight }, '*'),
  );
</script></head><body></body></html>`;

describe.skipIf(!installed)('the way turned down: a fresh same-origin iframe runs the loader again', () => {
  it('a new blackbox, at the cost of a second collection, collected in a framed window (the figures are printed)', async () => {
    const { site } = await shop(SERVER_PAGES[0]!, realLoaderSource(), true);
    await onNewPage(browser, site, async (page) => {
      await page.goto(`${site.origin}/checkout?cart=A`);
      const first = await page
        .locator('blackbox-capture')
        .evaluate((e: Element) => (e as HTMLElement & { ready: Promise<string> }).ready);
      const collector: Array<{ url: string; bytes: number; referer: string | undefined }> = [];
      page.on('requestfinished', (request) => {
        if (!/\/iojs\/|wdp\.js/.test(request.url())) return;
        const referer = request.headers().referer;
        void request
          .sizes()
          .then((sizes) => collector.push({ url: request.url(), bytes: sizes.responseBodySize, referer }));
      });
      const fresh = await page.evaluate(
        () =>
          new Promise<{ blackbox: string; ms: number; framed: boolean; width: number; height: number }>((resolve) => {
            addEventListener('message', (event) => resolve(event.data), { once: true });
            const frame = document.createElement('iframe');
            // Hidden, as a page would keep it: the collection sees a window of 0 × 0.
            frame.style.cssText = 'width: 0; height: 0; border: 0; position: absolute';
            frame.src = '/fresh-frame';
            document.body.append(frame);
          }),
      );
      const top = await page.evaluate(() => ({ width: innerWidth, height: innerHeight }));
      await expect.poll(() => collector.length).toBeGreaterThanOrEqual(3);
      const figures = {
        ms: Math.round(fresh.ms),
        requests: collector.length,
        bytes: collector.reduce((sum, request) => sum + request.bytes, 0),
        framed: fresh.framed,
        frameWindow: `${fresh.width}x${fresh.height}`,
        topWindow: `${top.width}x${top.height}`,
        // The first-party ones (the third party, cross-origin, hears the origin alone).
        referers: [
          ...new Set(
            collector
              .filter((request) => new URL(request.url).pathname.startsWith('/iojs/'))
              .map((request) => new URL(request.referer ?? 'none:').pathname),
          ),
        ],
      };
      console.log('a fresh same-origin iframe:', JSON.stringify(figures));
      // A new collection: another blackbox, final.
      expect(sourcesOf(fresh.blackbox)).toEqual(FINAL_SOURCES);
      expect(fresh.blackbox).not.toBe(first);
      // What the vendor's scripts ran in: a framed window of its own size, not the shopper's page.
      expect([figures.framed, figures.frameWindow]).toEqual([true, '0x0']);
      expect(figures.topWindow).not.toBe('0x0');
      // And the vendor's first-party host hears the frame's address, not the checkout's.
      expect(figures.referers).toEqual(['/fresh-frame']);
    });
  }, 60_000);
});
