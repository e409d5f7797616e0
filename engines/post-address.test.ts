/**
 * The production build keeps the post address rule (issue #57), in every engine and with both
 * loaders, on the built dist/ files: a post address that is neither the page's origin nor
 * https (plain http to another host, `data:`) is refused with invalid_option before anything
 * is sent, by captureBlackbox, the element's `post-url` and the script tag's `data-post-url`;
 * and a body over the browsers' keep-alive limit still arrives.
 */
import { expect, it } from 'vitest';
import type { EnginePage } from '../test/support/engines.mjs';
import { inEveryEngine } from './support/matrix.js';
import { doc, sourcesOf } from './support/page-parts.js';

interface Told {
  blackbox?: string;
  code?: string;
  message?: string;
  loaderTags?: number;
}

/**
 * What the page's script told, once it has: a module script may still be on its way when an
 * engine's WebDriver says the page has loaded (WebKitGTK on a busy machine).
 */
const told = (page: EnginePage) =>
  page.evaluate(
    () =>
      new Promise<Told[]>((resolve) => {
        const page = window as unknown as { told?: Promise<Told[]> };
        const look = () => (page.told ? resolve(page.told) : setTimeout(look, 20));
        look();
      }),
  );

/** Where a blackbox must never go: another host over plain http, and nowhere (`data:`). */
const REFUSED = ['http://evil.example/collect', 'data:,'];

inEveryEngine((cell) => {
  it('captureBlackbox: a plain-http address on another host and data: are invalid_option, nothing loaded or sent', async () => {
    const { page, site } = cell();
    await page.goto(
      site.page(
        '/esm-refused.html',
        doc(`<script type="module">
          import { captureBlackbox } from '/dist/index.js';
          window.told = Promise.all(${JSON.stringify(REFUSED)}.map((post) =>
            captureBlackbox({ loaderUrl: ${JSON.stringify(site.loaderUrl)}, uriHook: '/iojs', post }).then(
              (blackbox) => ({ blackbox }),
              (error) => ({ code: error.code, message: error.message }),
            ),
          )).then((results) => results.map((result) => ({ ...result, loaderTags: document.querySelectorAll('script[src*="loader"]').length })));
        </script>`),
      ),
    );
    const results = await told(page);
    expect(results.map((result) => [result.code, result.loaderTags])).toEqual([
      ['invalid_option', 0],
      ['invalid_option', 0],
    ]);
    expect(results[0]!.message).toMatch(/"post\.url".*https URL or a path on the page's origin.*evil\.example/);
    expect(site.emulator.inspect.requests('thirdParty')).toBe(0);
    expect(site.deliveries).toEqual([]);
  });

  it('the script tag: data-post-url to another host over plain http is a blackboxerror invalid_option', async () => {
    const { page, site } = cell();
    await page.goto(
      site.page(
        '/umd-refused.html',
        doc(
          `<script>window.told = new Promise((resolve) => {
             document.addEventListener('blackbox', (e) => resolve([{ blackbox: e.detail }]));
             document.addEventListener('blackboxerror', (e) => resolve([{ code: e.detail.code }]));
           });</script>
           <script src="/dist/blackbox-capture.umd.js" data-loader-url="${site.loaderUrl}" data-uri-hook="/iojs" data-post-url="${REFUSED[0]}"></script>`,
        ),
      ),
    );
    expect(await told(page)).toEqual([{ code: 'invalid_option' }]);
    expect(site.deliveries).toEqual([]);
  });

  it('<blackbox-capture post-url>: data: is a blackboxerror invalid_option, and nothing is posted', async () => {
    const { page, site } = cell();
    await page.goto(
      site.page(
        '/element-refused.html',
        doc(
          `<script>window.told = new Promise((resolve) => {
             document.addEventListener('blackbox', (e) => resolve([{ blackbox: e.detail }]));
             document.addEventListener('blackboxerror', (e) => resolve([{ code: e.detail.code }]));
           });</script>
           <script type="module" src="/dist/element.js"></script>`,
          `<form><blackbox-capture name="blackbox" loader-url="${site.loaderUrl}" uri-hook="/iojs" post-url="data:,"></blackbox-capture></form>`,
        ),
      ),
    );
    expect(await told(page)).toEqual([{ code: 'invalid_option' }]);
    expect(site.deliveries).toEqual([]);
  });

  it('a 1 MB body (over the 64 KiB keep-alive limit) is posted without keep-alive and arrives whole', async () => {
    const { page, site } = cell();
    await page.goto(
      site.page(
        '/large.html',
        doc(`<script type="module">
          import { captureBlackbox } from '/dist/index.js';
          const body = (blackbox, outcome) => ({ blackbox, outcome, padding: 'x'.repeat(1_000_000) });
          window.told = captureBlackbox({ loaderUrl: ${JSON.stringify(site.loaderUrl)}, uriHook: '/iojs', post: { url: '/device-risk', body } }).then(
            (blackbox) => [{ blackbox }],
            (error) => [{ code: error.code, message: error.message }],
          );
        </script>`),
      ),
    );
    const [result] = await told(page);
    expect(result!.code).toBeUndefined();
    expect(sourcesOf(result!.blackbox)?.length).toBeGreaterThan(0);
    expect(site.deliveries).toHaveLength(1);
    const body = site.deliveries[0]!.body as { blackbox: string; padding: string };
    expect([body.blackbox, body.padding.length]).toEqual([result!.blackbox, 1_000_000]);
  });
});
