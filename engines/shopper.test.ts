/**
 * What a shopper's browser must do, in every engine (Chromium, Firefox ESR, WebKitGTK) and
 * with both loaders (the emulator's and the vendor's real loader 5.2.2), on the built dist/
 * files: one spec, run through test/support/engines.mjs. Faults are made by the servers
 * (a dropped connection, a proxy answering HTML), never by a browser's request interception,
 * so that each engine meets them as it would on a real network.
 */
import { expect, it } from 'vitest';
import { decodeBlackbox } from '../src/emulator/index.js';
import type { EnginePage } from '../test/support/engines.mjs';
import { startSite } from '../e2e/support/site.js';
import { inEveryEngine, loaderOptions } from './support/matrix.js';
import { doc, FINAL, sourcesOf } from './support/page-parts.js';

/** A time limit long enough that "well before it" (a quarter) holds on a busy machine. */
const LIMIT_MS = 60_000;

/**
 * A module script that runs captureBlackbox from the ESM build (the full entry, or `lean.js`)
 * and keeps its outcome as `window.outcome`.
 */
const esmCapture = (options: string, nonce = '', entry = 'index.js') => `
<script type="module"${nonce ? ` nonce="${nonce}"` : ''}>
  import { captureBlackbox } from '/dist/${entry}';
  const started = performance.now();
  window.outcome = captureBlackbox(${options}).then(
    (blackbox) => ({ blackbox, ms: performance.now() - started }),
    (error) => ({ code: error.code, message: error.message, blackbox: error.blackbox, ms: performance.now() - started }),
  );
</script>`;

/** Records the page's CSP violations (the standard event, in every engine). */
const violationLog = (nonce: string) => `<script nonce="${nonce}">
  window.violations = [];
  document.addEventListener('securitypolicyviolation', (e) => window.violations.push(e.violatedDirective + ' ' + e.blockedURI));
</script>`;

interface Outcome {
  blackbox?: string;
  code?: string;
  message?: string;
  ms: number;
}

const outcome = (page: EnginePage) => page.evaluate(() => (window as unknown as { outcome: Promise<Outcome> }).outcome);

inEveryEngine((cell) => {
  it('the ES import resolves with the final blackbox, fills the field and delivers it once', async () => {
    const { page, site } = cell();
    await page.goto(
      site.page(
        '/esm.html',
        doc(
          esmCapture(
            `{ loaderUrl: ${JSON.stringify(site.loaderUrl)}, uriHook: '/iojs', field: 'bb', post: '/device-risk' }`,
          ),
          '<input id="bb" type="hidden">',
        ),
      ),
    );
    const { blackbox, code } = await outcome(page);
    expect(code).toBeUndefined();
    // Final: every collection script is in it (a partial one has fewer).
    expect(sourcesOf(blackbox)).toEqual(FINAL);
    // The dynamic first-party script ran through the proxy and saw this engine's user agent.
    expect(decodeBlackbox(blackbox!)?.embedded.fp_dyn?.ua).toBe(await page.evaluate(() => navigator.userAgent));
    expect(await page.evaluate(() => (document.getElementById('bb') as HTMLInputElement).value)).toBe(blackbox);
    await expect.poll(() => site.deliveries.length).toBe(1);
    expect(site.deliveries[0]).toMatchObject({ body: { blackbox }, contentType: 'application/json' });
  });

  it('the POST is retried on 503 with one Idempotency-Key, and delivered', async () => {
    const { page, site } = cell();
    site.failDeliveries(2, 503);
    await page.goto(
      site.page(
        '/retry.html',
        doc(esmCapture(`{ loaderUrl: ${JSON.stringify(site.loaderUrl)}, uriHook: '/iojs', post: '/device-risk' }`)),
      ),
    );
    const { blackbox, code } = await outcome(page);
    expect(code).toBeUndefined();
    await expect.poll(() => site.deliveries.length).toBe(1);
    expect(site.deliveries[0]!.body).toMatchObject({ blackbox });
    expect(site.deliveries[0]!.idempotencyKey).toMatch(/^[0-9a-f-]{32,36}$/);
  });

  it('a proxy answering HTML and a third party that drops the connection: collection_failed at once, naming the proxy', async () => {
    const { page, site, engine } = cell();
    site.override(/\/iojs\//, 200, '<!doctype html><html><body>SPA</body></html>', 'text/html');
    // Every attempt: Firefox asks again when a connection drops before an answer (below).
    site.emulator.faults.fail('thirdParty', { drop: true, times: 100 });
    await page.goto(
      site.page(
        '/failed.html',
        doc(esmCapture(`{ loaderUrl: ${JSON.stringify(site.loaderUrl)}, uriHook: '/iojs', timeoutMs: ${LIMIT_MS} }`)),
      ),
    );
    const result = await outcome(page);
    expect(result.code).toBe('collection_failed');
    // Firefox tries a request whose connection drops before an answer 10 times (its
    // network.http.request.max-attempts), at once; the others once.
    expect(site.emulator.inspect.requests('thirdParty')).toBe(engine === 'firefox' ? 10 : 1);
    expect(result.message).toMatch(/reverse proxy at "\/iojs"/);
    expect(result.ms).toBeLessThan(LIMIT_MS / 4);
  });

  it('one dropped connection of the third party: Firefox asks again and completes; the others degrade', async () => {
    const { page, site, engine } = cell();
    site.emulator.faults.fail('thirdParty', { drop: true, times: 1 });
    await page.goto(
      site.page(
        '/drop-once.html',
        doc(esmCapture(`{ loaderUrl: ${JSON.stringify(site.loaderUrl)}, uriHook: '/iojs' }`)),
      ),
    );
    const result = await outcome(page);
    expect(result.code).toBeUndefined();
    const retried = engine === 'firefox';
    expect(site.emulator.inspect.requests('thirdParty')).toBe(retried ? 2 : 1);
    expect(sourcesOf(result.blackbox)).toEqual(retried ? FINAL : ['fp_dyn', 'fp_static']);
  });

  // Capture outcomes: a broken side ends after the grace with what the other side produced.
  it.each([
    ['nothing broken', 'none', 'complete', []],
    ['the proxy answering 404', 'proxy404', 'degraded-first-party', ['fp_static_wdp']],
    ['the proxy answering HTML', 'proxyHtml', 'degraded-first-party', ['fp_static_wdp', 'fp_dyn_wdp']],
    ['the third party dropping every connection', 'tpDropped', 'degraded-third-party', ['io_wdp']],
  ] as const)('outcome with %s: %s, well before the time limit', async (_, fault, kind, scripts) => {
    const { page, site } = cell();
    if (fault === 'proxy404') site.override(/\/iojs\//, 404, 'not found', 'text/plain');
    if (fault === 'proxyHtml')
      site.override(/\/iojs\//, 200, '<!doctype html><html><body>SPA</body></html>', 'text/html');
    if (fault === 'tpDropped') site.emulator.faults.fail('thirdParty', { drop: true, times: 100 });
    const options = `{ loaderUrl: ${JSON.stringify(site.loaderUrl)}, uriHook: '/iojs', timeoutMs: ${LIMIT_MS}, degradedGraceMs: 500, onOutcome: (o) => (window.told = o) }`;
    await page.goto(site.page('/outcome.html', doc(esmCapture(options))));
    const result = await outcome(page);
    const told = await page.evaluate(() => (window as unknown as { told: unknown }).told);
    expect([result.code, told]).toEqual([undefined, { outcome: kind, scripts, durationMs: expect.any(Number) }]);
    expect(result.ms).toBeLessThan(LIMIT_MS / 4);
  });

  it('the time limit keeps the partial blackbox: timeout, with the third party in it', async () => {
    const { page, site } = cell();
    site.override(/\/iojs\//, 200, '<!doctype html><html><body>SPA</body></html>', 'text/html');
    await page.goto(
      site.page(
        '/partial.html',
        doc(
          esmCapture(
            `{ loaderUrl: ${JSON.stringify(site.loaderUrl)}, uriHook: '/iojs', timeoutMs: 4000, degradedGraceMs: 600000 }`,
          ),
        ),
      ),
    );
    const result = await outcome(page);
    expect(result.code).toBe('timeout');
    expect(sourcesOf(result.blackbox)).toEqual(['tp']);
  });

  it.each(['index.js', 'lean.js'])(
    'CSP with a nonce and strict-dynamic (dist/%s): the nonce goes on the loader tag, no violation, a final blackbox',
    async (entry) => {
      const { page, site } = cell();
      const csp = "script-src 'nonce-r4nd0m' 'strict-dynamic'; object-src 'none'; base-uri 'none'";
      await page.goto(
        site.page(
          '/csp.html',
          doc(
            violationLog('r4nd0m') +
              esmCapture(`{ loaderUrl: ${JSON.stringify(site.loaderUrl)}, uriHook: '/iojs' }`, 'r4nd0m', entry),
          ),
          { 'content-security-policy': csp },
        ),
      );
      const result = await outcome(page);
      expect(result.code).toBeUndefined();
      expect(sourcesOf(result.blackbox)).toEqual(FINAL);
      const seen = await page.evaluate(() => [
        document.querySelector<HTMLScriptElement>('script[src$="/loader.js"]')?.nonce,
        (window as unknown as { violations: string[] }).violations,
      ]);
      expect(seen).toEqual(['r4nd0m', []]);
    },
  );

  it("CSP with a nonce but without strict-dynamic: the vendor's scripts are refused, collection_failed at once", async () => {
    const { page, site } = cell();
    // The loader's tag carries the nonce; the scripts it adds do not, and nothing else is allowed.
    const csp = "script-src 'nonce-r4nd0m'";
    await page.goto(
      site.page(
        '/csp-blocked.html',
        doc(
          violationLog('r4nd0m') +
            esmCapture(
              `{ loaderUrl: ${JSON.stringify(site.loaderUrl)}, uriHook: '/iojs', timeoutMs: ${LIMIT_MS} }`,
              'r4nd0m',
            ),
        ),
        { 'content-security-policy': csp },
      ),
    );
    const result = await outcome(page);
    expect(result.code).toBe('collection_failed');
    expect(result.ms).toBeLessThan(LIMIT_MS / 4);
    const violations = await page.evaluate(() => (window as unknown as { violations: string[] }).violations);
    expect(violations.length).toBeGreaterThan(0);
    expect(site.emulator.inspect.requests('thirdParty')).toBe(0);
  });

  it('<blackbox-capture> in a form: a submit made at once is held, then posts the final blackbox and its outcome', async () => {
    const { page, site } = cell();
    // The submit comes from the page itself, right after the element is defined: the capture
    // has only started (a test driver's click would come after the load event, too late to tell).
    await page.goto(
      site.page(
        '/form.html',
        doc(
          '<script type="module" src="/dist/element.js"></script>',
          `<form method="post" action="/form"><input name="order" value="o-1">
              <blackbox-capture name="blackbox" loader-url="${site.loaderUrl}" uri-hook="/iojs" max-wait-ms="${LIMIT_MS}"></blackbox-capture>
              <button id="pay">Pay</button></form>
           <script type="module">
             sessionStorage.stateAtSubmit = document.querySelector('blackbox-capture').state;
             document.getElementById('pay').click();
           </script>`,
        ),
      ),
    );
    await expect.poll(() => site.forms.length, { timeout: 30_000 }).toBe(1);
    const posted = site.forms[0]!;
    expect(posted.order).toBe('o-1');
    expect(posted['blackbox-outcome']).toBe('complete');
    expect(sourcesOf(posted.blackbox)).toEqual(FINAL);
    // The page after the post is on the same origin: it reads what the submit met.
    await expect.poll(() => page.evaluate(() => sessionStorage.stateAtSubmit as string | undefined)).toBe('collecting');
  });

  it("<blackbox-capture>: a submit the page's own listeners take (preventDefault, before and after the element) reads the final blackbox", async () => {
    const { loader } = cell();
    // The final collection script comes late, so that the submit meets a capture still collecting.
    const site = await startSite({ ...loaderOptions(loader), delays: { fp_dyn: [1500] } });
    try {
      // The page posts the form itself, as a framework's handler does (Vue's @submit.prevent,
      // Angular's ngSubmit, SvelteKit's enhance): one listener added before the element is
      // defined, one after; the second clicks Pay at once.
      await cell().page.goto(
        site.page(
          '/spa.html',
          doc(
            '',
            `<form id="checkout"><blackbox-capture name="blackbox" loader-url="${site.loaderUrl}" uri-hook="/iojs" max-wait-ms="${LIMIT_MS}"></blackbox-capture>
              <button id="pay">Pay</button></form>
             <script>
               window.seen = [];
               document.getElementById('checkout').addEventListener('submit', (event) => {
                 event.preventDefault();
                 window.seen.push('before:' + document.querySelector('blackbox-capture').state);
               });
             </script>
             <script type="module" src="/dist/element.js"></script>
             <script type="module">
               const form = document.getElementById('checkout');
               const element = document.querySelector('blackbox-capture');
               form.addEventListener('submit', (event) => {
                 event.preventDefault();
                 window.seen.push('after:' + element.state);
                 const data = new FormData(form);
                 fetch('/device-risk', {
                   method: 'POST',
                   headers: { 'content-type': 'application/json' },
                   body: JSON.stringify({ blackbox: data.get('blackbox'), outcome: data.get('blackbox-outcome') }),
                 });
               });
               window.stateAtSubmit = element.state;
               document.getElementById('pay').click();
               window.awaited = element.ready;
             </script>`,
          ),
        ),
      );
      await expect.poll(() => site.deliveries.length, { timeout: 30_000 }).toBe(1);
      const posted = site.deliveries[0]!.body as { blackbox: string; outcome: string };
      expect(posted.outcome).toBe('complete');
      expect(sourcesOf(posted.blackbox)).toEqual(FINAL);
      const page = cell().page;
      const seen = await page.evaluate(async () => {
        const w = window as unknown as { seen: string[]; stateAtSubmit: string; awaited: Promise<string> };
        return { seen: w.seen, stateAtSubmit: w.stateAtSubmit, awaited: await w.awaited };
      });
      expect(seen).toEqual({
        seen: ['before:complete', 'after:complete'],
        stateAtSubmit: 'collecting',
        awaited: posted.blackbox,
      });
    } finally {
      await site.close();
    }
  });

  it('<blackbox-capture>: FormData carries the value, :state(complete) matches, the event reaches the document, nothing renders', async () => {
    const { page, site } = cell();
    await page.goto(
      site.page(
        '/state.html',
        doc(
          `<script>document.addEventListener('blackbox', (e) => (window.heard = e.detail));</script>
           <script type="module" src="/dist/element.js"></script>`,
          `<form><blackbox-capture name="blackbox" loader-url="${site.loaderUrl}" uri-hook="/iojs"></blackbox-capture></form>`,
        ),
      ),
    );
    const seen = await page.evaluate(async () => {
      const element = document.querySelector('blackbox-capture') as HTMLElement & { value: string; state: string };
      if (element.state !== 'complete')
        await new Promise((resolve) => document.addEventListener('blackbox', resolve, { once: true }));
      return {
        value: element.value,
        fromForm: new FormData(document.querySelector('form')!).get('blackbox'),
        heard: (window as unknown as { heard?: string }).heard,
        state: element.state,
        matches: element.matches(':state(complete)'),
        rendered: [element.getBoundingClientRect().width, element.textContent, element.shadowRoot],
      };
    });
    expect([seen.fromForm, seen.heard]).toEqual([seen.value, seen.value]);
    expect([seen.state, seen.matches]).toEqual(['complete', true]);
    expect(seen.rendered).toEqual([0, '', null]);
    expect(sourcesOf(seen.value)).toEqual(FINAL);
  });
});
