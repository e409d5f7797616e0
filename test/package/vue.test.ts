// docs/frameworks.md's Vue snippets, as written, built by Vite with @vitejs/plugin-vue on the
// packed package, in Chromium against the emulator (test/support/framework-site.ts): a
// `@submit.prevent` handler posts the final blackbox while the capture was still collecting
// at the click, `v-model` on the element holds the blackbox without a warning, and remounts
// make one Device Risk transaction per cart. The app is built once for every case.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  consoleProblems,
  countFrom,
  expectNewPageRun,
  launchChromium,
  payBeforeChecked,
  payWhileCollecting,
  startFrameworkSite,
  type FrameworkSite,
} from '../support/framework-site.js';
import { realLoaderSource } from '../support/real-loader.mjs';
import { snippet } from '../support/readme.js';
import { installPackedTarball, ROOT, writerIn } from '../support/tarball.js';

let app: string;
let site: FrameworkSite;
/** The same app with the vendor's real loader 5.2.2 at /static/vendor/loader.js. */
let realSite: FrameworkSite;
let browser: Browser;

/** The test's own shell around the snippets: which component, which cart, and a remount on call. */
const APP_VUE = `<script setup lang="ts">
import { nextTick, ref } from 'vue';
import Checkout from './Checkout.vue';
import DeviceCheck from './DeviceCheck.vue';

const params = new URLSearchParams(location.search);
const view = params.get('view');
const cart = ref(params.get('cart') ?? 'cart-1');
const shown = ref(true);
Object.assign(window, {
  async remount(id: string) {
    shown.value = false;
    await nextTick();
    // As a router does: the checkout's URL first, then its page.
    history.replaceState(null, '', '?view=' + view + '&cart=' + id);
    cart.value = id;
    shown.value = true;
    await nextTick();
  },
});
</script>

<template>
  <template v-if="shown">
    <Checkout v-if="view === 'checkout'" :cart-id="cart" />
    <DeviceCheck v-else :cart-id="cart" />
  </template>
</template>
`;

beforeAll(async () => {
  app = installPackedTarball('vue-app-').dir;
  for (const name of ['vue', '@vitejs/plugin-vue', 'vite']) {
    mkdirSync(dirname(join(app, 'node_modules', name)), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules', name), join(app, 'node_modules', name));
  }
  const write = writerIn(app);
  write('package.json', JSON.stringify({ name: 'shop', private: true, type: 'module' }));
  write('vite.config.ts', snippet('vue-vite-config').code);
  write('src/Checkout.vue', snippet('vue-checkout').code);
  write('src/DeviceCheck.vue', snippet('vue-composable').code);
  write('src/App.vue', APP_VUE);
  write(
    'src/main.ts',
    "import { createApp } from 'vue';\nimport App from './App.vue';\n\ncreateApp(App).mount('#app');\n",
  );
  write(
    'index.html',
    '<!doctype html><html><head><meta charset="utf-8"><title>shop</title></head>' +
      '<body><div id="app"></div><script type="module" src="/src/main.ts"></script></body></html>\n',
  );
  execFileSync(process.execPath, [join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'], {
    cwd: app,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };
  const serve = async (request: Request) => {
    const path = new URL(request.url).pathname;
    const file = join(app, 'dist', path === '/' ? 'index.html' : path);
    try {
      return new Response(readFileSync(file), { headers: { 'content-type': types[extname(file)] ?? 'text/plain' } });
    } catch {
      return new Response('not found', { status: 404 });
    }
  };
  site = await startFrameworkSite(serve);
  realSite = await startFrameworkSite(serve, { loaderSource: realLoaderSource() });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await site?.close();
  await realSite?.close();
  rmSync(app, { recursive: true, force: true });
});

/** A fresh page of the app; its console's warnings and errors. */
async function open(query: string, on = site): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage();
  const problems = consoleProblems(page);
  await page.goto(`${on.origin}/?${query}`);
  return { page, problems };
}

/** Remounts the component (`v-if` off and on) with the cart `id`, as a route change does. */
const remount = (page: Page, id: string) =>
  page.evaluate((cart) => (window as unknown as { remount(id: string): Promise<void> }).remount(cart), id);

describe('Vue 3: docs/frameworks.md, built by Vite', () => {
  it("'vue-checkout': @submit.prevent at once posts the final blackbox, outcome complete; v-model holds it", async () => {
    const { page, problems } = await open('view=checkout&cart=cart-a');
    const element = page.locator('blackbox-capture');
    await element.waitFor({ state: 'attached' });
    const order = await payWhileCollecting(page, site, 'blackbox-outcome');
    expect(order.order).toBe('o-1');
    // v-model took the value (the hint is gone) and wrote nothing back that the element refused.
    expect(await page.getByText('Checking your device…').count()).toBe(0);
    expect(await element.evaluate((e: Element) => (e as HTMLInputElement).value)).toBe(order.blackbox);
    expect(problems).toEqual([]);
    await page.close();
  });

  it.each([
    ["the emulator's loader", () => site],
    ['the real loader 5.2.2', () => realSite],
  ])(
    "'vue-composable', %s: Pay pressed while collecting awaits ready; the order has the final blackbox",
    async (_loader, on) => {
      const { page, problems } = await open('view=composable&cart=cart-ready', on());
      await page.getByText('Checking your device…').waitFor();
      // Mounted: the capture runs (a click before would find no handler).
      await page.waitForFunction(() => (window as { IGLOO?: { loader?: unknown } }).IGLOO?.loader);
      expect((await payBeforeChecked(page, on(), on())).order).toBe('o-2');
      expect(problems).toEqual([]);
      await page.close();
    },
  );

  it.each([
    ['vue-checkout', 'checkout'],
    ['vue-composable', 'composable'],
  ])(
    "'%s': three mounts in one page run make one transaction; a second cart reloads its page, a transaction of its own",
    async (_name, view) => {
      const cart = `cart-${view}`;
      const counts = countFrom(site);
      const { page, problems } = await open(`view=${view}&cart=${cart}-1`);
      const complete =
        view === 'checkout' ? page.locator('p', { hasText: 'Checking' }) : page.getByText('Device checked');
      for (let mount = 1; mount <= 3; mount++) {
        if (mount > 1) await remount(page, `${cart}-1`);
        if (view === 'checkout') await complete.waitFor({ state: 'detached' });
        else await complete.waitFor();
      }
      // The first cart's capture delivered (the element's state says so once its POST is done).
      if (view === 'checkout') await page.locator('blackbox-capture:state(complete)').waitFor({ state: 'attached' });
      // The second cart's page run is a new one: the package reloaded its URL
      // (docs/browser.md#one-blackbox-per-checkout).
      await expectNewPageRun(page, () => remount(page, `${cart}-2`).catch(() => {})); // the page may be going already
      if (view === 'checkout') await page.locator('blackbox-capture:state(complete)').waitFor({ state: 'attached' });
      else await complete.waitFor();
      await counts.expectOnePerCheckout([`${cart}-1`, `${cart}-2`]);
      expect(problems.filter((problem) => !/blackbox_used|went to checkout/.test(problem))).toEqual([]);
      await page.close();
    },
  );
});
