/**
 * blackbox-capture/react in every engine and with both loaders: the README's hook in a React
 * 19 StrictMode app built by Vite (e2e/support/react-app.ts), rendered on the client and
 * hydrated over its server rendering. React's warnings and the page's errors fail the test.
 */
import { beforeAll, expect, it } from 'vitest';
import { buildReactApp, type ReactApp } from '../e2e/support/react-app.js';
import type { EnginePage } from '../test/support/engines.mjs';
import { FINAL, sourcesOf } from './support/page-parts.js';
import { inEveryEngine, type Cell } from './support/matrix.js';

let app: ReactApp;
beforeAll(() => {
  app = buildReactApp();
});

/** Before any other script: keeps console errors and warnings, and uncaught errors, in `window.problems`. */
const RECORDER = `<script>
  window.problems = [];
  for (const level of ['error', 'warn']) {
    const original = console[level];
    console[level] = (...args) => { problems.push(args.map(String).join(' ')); original.apply(console, args); };
  }
  addEventListener('error', (e) => problems.push(e.message));
  addEventListener('unhandledrejection', (e) => problems.push(String(e.reason)));
</script>`;

function serve({ site }: Cell, path: string, html: string): string {
  for (const [name, code] of app.assets)
    site.file(`/app/assets/${name}`, code, name.endsWith('.css') ? 'text/css' : 'text/javascript');
  return site.page(path, html.replace('<head>', `<head>${RECORDER}`));
}

/** The form once the hook has the final blackbox (the Pay button is enabled then). */
async function completed(page: EnginePage) {
  await expect
    .poll(() => page.evaluate(() => document.querySelector<HTMLButtonElement>('form button')?.disabled === false), {
      timeout: 30_000,
    })
    .toBe(true);
  return page.evaluate(() => ({
    blackbox: document.querySelector<HTMLInputElement>('input[name=blackbox]')!.value,
    loaderTags: document.querySelectorAll('script[src$="/static/vendor/loader.js"]').length,
    problems: (window as unknown as { problems: string[] }).problems,
  }));
}

inEveryEngine((cell) => {
  it("the README's hook ('react-hook') under StrictMode: one loader tag, the controlled input fills, the form posts the final blackbox", async () => {
    const { page, site } = cell();
    await page.goto(serve(cell(), '/app/', app.html));
    const { blackbox, loaderTags, problems } = await completed(page);
    expect(sourcesOf(blackbox)).toEqual(FINAL);
    expect(loaderTags).toBe(1);
    await page.evaluate(() => document.querySelector<HTMLButtonElement>('form button')!.click());
    await expect.poll(() => site.forms.length, { timeout: 30_000 }).toBe(1);
    expect(site.forms[0]).toEqual({ blackbox, 'blackbox-outcome': 'complete' });
    expect(problems).toEqual([]);
  });

  it('hydrated over its server rendering: no mismatch, then the same capture', async () => {
    const { page } = cell();
    expect(app.serverHtml).toContain('name="blackbox"');
    await page.goto(serve(cell(), '/app/hydrate.html', app.hydrateHtml.replace('<!--ssr-->', app.serverHtml)));
    const { blackbox, problems } = await completed(page);
    expect(sourcesOf(blackbox)).toEqual(FINAL);
    expect(problems).toEqual([]);
  });
});
