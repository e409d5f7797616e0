// docs/frameworks.md's Svelte snippets, as written, in a hand-written SvelteKit app (its Vite
// plugin, @sveltejs/adapter-node) on the packed package, in Chromium against the emulator
// (test/support/framework-site.ts, in front of the app's own Node server): server rendering
// imports the entries cleanly, a `use:enhance` submit made while the capture collects reaches
// the form action with the final blackbox, and remounts make one Device Risk transaction per
// cart. SvelteKit is not a devDependency (its TypeScript peer range is not the project's): it
// is installed from its committed lockfile into the user cache once per lockfile, as Nuxt is (the test
// is skipped, named, when the registry cannot be reached; with CI set, that fails it). The app
// is built once for every case.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/processes.mjs';
import { cachedInstall, SITES } from '../support/cached-install.js';
import {
  consoleProblems,
  countFrom,
  expectNewPageRun,
  forwardTo,
  launchChromium,
  payBeforeChecked,
  payWhileCollecting,
  reportRemovals,
  startFrameworkSite,
  submitListened,
  type FrameworkSite,
} from '../support/framework-site.js';
import { realLoaderSource } from '../support/real-loader.mjs';
import { snippet } from '../support/readme.js';

/** SvelteKit's packages (test/package/sites/sveltekit), kept between runs outside the clone; the app beside them. */
const toolchain = cachedInstall(join(SITES, 'sveltekit'));
const { dir: CACHE, app: APP, installed: haveKit, write } = toolchain;
const KIT_VERSION = toolchain.versions['@sveltejs/kit'];

/** The test's own page around the snippets: the element or the store, a cart, and a remount on call. */
const REMOUNTS_PAGE = `<script lang="ts">
  import 'blackbox-capture/element';
  import { tick } from 'svelte';
  import { replaceState } from '$app/navigation';
  import { page } from '$app/state';
  import DeviceCheck from '#lib/DeviceCheck.svelte';

  const view = page.url.searchParams.get('view');
  let cart = $state(page.url.searchParams.get('cart') ?? 'cart-1');
  let shown = $state(true);
  $effect(() => {
    Object.assign(window, {
      async remount(id: string) {
        shown = false;
        await tick();
        // As a router does: the checkout's URL first, then its page.
        replaceState('?view=' + view + '&cart=' + id, {});
        cart = id;
        shown = true;
        await tick();
      },
    });
  });
</script>

{#if shown}
  {#if view === 'checkout'}
    <form>
      <blackbox-capture name="blackbox" loader-url="/static/vendor/loader.js" post-url="/device-risk" checkout-id={cart}
      ></blackbox-capture>
    </form>
  {:else}
    <DeviceCheck cartId={cart} />
  {/if}
{/if}
`;

let site: FrameworkSite;
/** The same app behind a shop whose /static/vendor/loader.js is the vendor's real loader 5.2.2. */
let realSite: FrameworkSite;
let server: ChildProcess | undefined;
let serverOutput = '';
let browser: Browser;

beforeAll(async () => {
  if (!haveKit) return;
  toolchain.clearApp();
  // SvelteKit 3's #lib: the app's own subpath imports.
  write(
    'package.json',
    JSON.stringify({
      name: 'shop',
      private: true,
      type: 'module',
      imports: { '#lib': './src/lib', '#lib/*': './src/lib/*' },
    }),
  );
  write('vite.config.ts', snippet('sveltekit-vite-config').code);
  write(
    'src/app.html',
    '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8" />\n%sveltekit.head%\n</head>\n' +
      '<body data-sveltekit-preload-data="off">\n<div style="display: contents">%sveltekit.body%</div>\n</body>\n</html>\n',
  );
  write('src/routes/checkout/+page.svelte', snippet('sveltekit-checkout').code);
  write('src/routes/checkout/+page.server.ts', snippet('sveltekit-action').code);
  write('src/lib/DeviceCheck.svelte', snippet('svelte-store').code);
  write('src/routes/remounts/+page.svelte', REMOUNTS_PAGE);
  // The snippet's "yours": the order goes to the shop's recorder.
  write(
    'src/lib/orders.ts',
    'export async function placeOrder(order: Record<string, string>): Promise<void> {\n' +
      "  const answer = await fetch(`${process.env.SHOP_ORIGIN}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(order) });\n" +
      '  if (!answer.ok) throw new Error(`the shop answered ${answer.status}`);\n}\n',
  );
  // The package as npm users get it, beside SvelteKit's packages.
  toolchain.installPackage();
  execFileSync(process.execPath, [join(CACHE, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'], {
    cwd: APP,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_ENV: 'production' },
  });
  // The shop in front of the app's own server (adapter-node's build): every other path goes to it.
  // The app's port is taken once the shops listen: a port freed for the app and then handed by
  // the OS to a shop's own listener was EADDRINUSE for the app (a busy CI run).
  let upstream = '';
  const forward = (request: Request) => forwardTo(upstream)(request);
  site = await startFrameworkSite(forward);
  realSite = await startFrameworkSite(forward, { loaderSource: realLoaderSource() });
  const port = await freePort();
  upstream = `http://127.0.0.1:${port}`;
  const { VITEST: _vitest, NODE_ENV: _mode, ...env } = process.env;
  server = spawn(process.execPath, ['build/index.js'], {
    cwd: APP,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...env,
      HOST: '127.0.0.1',
      PORT: String(port),
      // The shop's address, from its proxy's headers (adapter-node's settings).
      PROTOCOL_HEADER: 'x-forwarded-proto',
      HOST_HEADER: 'x-forwarded-host',
      SHOP_ORIGIN: site.origin,
    },
  });
  server.stdout!.on('data', (chunk) => (serverOutput += chunk));
  server.stderr!.on('data', (chunk) => (serverOutput += chunk));
  // Serving once /checkout answers; its output says why not, if it exits first.
  for (const started = Date.now(); ;) {
    if (server.exitCode !== null) throw new Error(`the app's server exited ${server.exitCode}:\n${serverOutput}`);
    if (Date.now() - started > 60_000) throw new Error(`the app's server did not answer in 60 s:\n${serverOutput}`);
    const status = await fetch(`${upstream}/checkout`).then(
      (answer) => answer.status,
      () => 0,
    );
    if (status === 200) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  browser = await launchChromium();
}, 300_000);

afterAll(async () => {
  await browser?.close();
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server!.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
  await site?.close();
  await realSite?.close();
  toolchain.clearApp();
});

async function open(path: string, { remounts = false, on = site } = {}): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage();
  const problems = consoleProblems(page);
  if (!remounts) await reportRemovals(page);
  await page.goto(on.origin + path);
  return { page, problems };
}

const remount = (page: Page, id: string) =>
  page.evaluate((cart) => (window as unknown as { remount(id: string): Promise<void> }).remount(cart), id);

describe.skipIf(!haveKit)(`SvelteKit ${KIT_VERSION}: docs/frameworks.md, built by its Vite plugin`, () => {
  it("'sveltekit-checkout', 'sveltekit-action': rendered on the server, use:enhance at once reaches the action with the final blackbox", async () => {
    // Server rendering imported the element's entry and rendered the tag, untouched.
    const html = await fetch(`${site.origin}/checkout?cart=cart-sk`).then((r) => r.text());
    expect(html).toMatch(
      /<blackbox-capture name="blackbox" loader-url="\/static\/vendor\/loader.js"[^>]*checkout-id="cart-sk"/,
    );
    const { page, problems } = await open('/checkout?cart=cart-sk');
    const element = page.locator('blackbox-capture');
    // Hydrated: enhance's submit listener is on the form (a click before would post natively).
    await submitListened(page);
    const order = await payWhileCollecting(page, site, 'outcome');
    expect(order.order).toBe('o-1');
    // No full page load: enhance posted it (a native post would have reloaded the page).
    expect(await element.evaluate((e: Element) => (e as HTMLElement & { state: string }).state)).toBe('complete');
    expect(problems).toEqual([]);
    // The server logged nothing but where it listens: no error rendering or in the action.
    expect(serverOutput.replace(/^Listening on \S+\n/, '')).toBe('');
    await page.close();
  });

  it.each([
    ["the emulator's loader", () => site],
    ['the real loader 5.2.2', () => realSite],
  ])(
    "'svelte-store', %s: a use:enhance Pay while collecting awaits ready; the action gets the final blackbox",
    async (_loader, on) => {
      const { page, problems } = await open('/remounts?view=store&cart=cart-ready', { remounts: true, on: on() });
      await page.getByText('Checking your device…').waitFor();
      // Hydrated: enhance's submit listener is on the form (a click before would post natively).
      await submitListened(page);
      // The action's order goes to the first shop's recorder (SHOP_ORIGIN), whichever shop served the page.
      expect((await payBeforeChecked(page, site, on())).order).toBe('o-2');
      expect(problems).toEqual([]);
      await page.close();
    },
  );

  it.each([
    ['sveltekit-checkout', 'checkout'],
    ['svelte-store', 'store'],
  ])(
    "'%s': three mounts in one page run make one transaction; a second cart reloads its page, a transaction of its own",
    async (_name, view) => {
      const cart = `cart-${view}`;
      const counts = countFrom(site);
      const { page, problems } = await open(`/remounts?view=${view}&cart=${cart}-1`, { remounts: true });
      const ended = async () => {
        // The element's capture ends complete; the store says so.
        // The element renders nothing: attached, not visible.
        if (view === 'checkout') await page.locator('blackbox-capture:state(complete)').waitFor({ state: 'attached' });
        else await page.getByText('Device checked').waitFor();
      };
      await page.waitForFunction(() => 'remount' in window);
      await ended();
      for (const id of [`${cart}-1`, `${cart}-1`]) {
        await remount(page, id);
        await ended();
      }
      // The second cart's page run is a new one: the package reloaded its URL
      // (docs/browser.md#one-blackbox-per-checkout).
      await expectNewPageRun(page, () => remount(page, `${cart}-2`).catch(() => {})); // the page may be going already
      await ended();
      await counts.expectOnePerCheckout([`${cart}-1`, `${cart}-2`]);
      expect(problems.filter((problem) => !/blackbox_used|went to checkout/.test(problem))).toEqual([]);
      await page.close();
    },
  );
});
