/**
 * The integrations a checkout page uses, in every engine and with both loaders: the script
 * tag with no page code, Trusted Types where the engine enforces them, and consent from a
 * TCF v2 CMP before anything is collected.
 */
import { expect, it } from 'vitest';
import { CMP_STUB } from '../e2e/support/cmp.js';
import { doc, FINAL, sourcesOf } from './support/page-parts.js';
import { inEveryEngine } from './support/matrix.js';

interface Told {
  blackbox?: string;
  code?: string;
  outcome?: string;
}

/** Listens to the script tag's events; `window.told` settles with the first of blackbox and blackboxerror. */
const listen = (nonce = '') => `<script${nonce ? ` nonce="${nonce}"` : ''}>
  window.told = new Promise((resolve) => {
    let outcome;
    document.addEventListener('blackboxoutcome', (e) => (outcome = e.detail.outcome));
    document.addEventListener('blackbox', (e) => resolve({ blackbox: e.detail, outcome }));
    document.addEventListener('blackboxerror', (e) => resolve({ code: e.detail.code, blackbox: e.detail.blackbox }));
  });
</script>`;

inEveryEngine((cell) => {
  it('the script tag starts by itself: the field, one POST and the events', async () => {
    const { page, site } = cell();
    await page.goto(
      site.page(
        '/umd.html',
        doc(
          listen() +
            `<script src="/dist/blackbox-capture.umd.js" data-loader-url="${site.loaderUrl}" data-uri-hook="/iojs" data-field="bb" data-post-url="/device-risk"></script>`,
          '<form><input id="bb" name="blackbox" type="hidden"></form>',
        ),
      ),
    );
    const told = await page.evaluate(() => (window as unknown as { told: Promise<Told> }).told);
    expect([told.code, told.outcome, sourcesOf(told.blackbox)]).toEqual([undefined, 'complete', FINAL]);
    expect(await page.evaluate(() => document.querySelector<HTMLInputElement>('#bb')!.value)).toBe(told.blackbox);
    await expect.poll(() => site.deliveries.length).toBe(1);
    expect(site.deliveries[0]!.body).toMatchObject({ blackbox: told.blackbox, outcome: { outcome: 'complete' } });
  });

  it("Trusted Types required: our loader tag goes through our policy, the vendor's through the default one", async () => {
    const { page, site } = cell();
    const csp =
      "script-src 'nonce-r4nd0m' 'strict-dynamic'; require-trusted-types-for 'script'; trusted-types blackbox-capture default";
    // The vendor's loader sets script src from plain strings: a page that enforces Trusted Types
    // needs a default policy for the vendor's child scripts (docs/browser.md).
    const defaultPolicy = `<script nonce="r4nd0m">
      window.seenByDefault = [];
      window.violations = [];
      document.addEventListener('securitypolicyviolation', (e) => violations.push(e.violatedDirective));
      trustedTypes.createPolicy('default', { createScriptURL: (url) => (seenByDefault.push(url), url) });
    </script>`;
    await page.goto(
      site.page(
        '/tt.html',
        doc(
          defaultPolicy +
            listen('r4nd0m') +
            `<script nonce="r4nd0m" src="/dist/blackbox-capture.umd.js" data-loader-url="${site.loaderUrl}" data-uri-hook="/iojs"></script>`,
        ),
        { 'content-security-policy': csp },
      ),
    );
    const told = await page.evaluate(() => (window as unknown as { told: Promise<Told> }).told);
    expect([told.code, sourcesOf(told.blackbox)]).toEqual([undefined, FINAL]);
    const { enforced, seenByDefault, violations } = await page.evaluate(() => {
      let refused = false;
      try {
        document.createElement('script').src = '/plain-string.js';
      } catch {
        refused = true;
      }
      const w = window as unknown as { seenByDefault: string[]; violations: string[] };
      // The probe above went through the default policy, which lets it pass: it is the one string it logged last.
      return {
        enforced: w.seenByDefault.includes('/plain-string.js') || refused,
        seenByDefault: w.seenByDefault,
        violations: w.violations,
      };
    });
    expect(enforced).toBe(true);
    expect(seenByDefault.some((url) => url.includes('static_wdp.js'))).toBe(true); // the vendor's children
    expect(seenByDefault).not.toContain(site.loaderUrl); // ours used its own policy
    expect(violations).toEqual([]);
  });

  it('consent from a TCF CMP (data-consent): nothing is loaded before the choice, then the capture', async () => {
    const { page, site } = cell();
    const tag = `<script src="/dist/blackbox-capture.umd.js" data-loader-url="${site.loaderUrl}" data-uri-hook="/iojs" data-consent="tcf:810"></script>`;
    await page.goto(site.page('/consent.html', doc(CMP_STUB + listen() + tag)));
    // The adapter and the CMP have answered (the UI is shown): still no loader and no config object.
    const before = await page.evaluate(async () => {
      await new Promise((resolve) => setTimeout(resolve, 0));
      return [
        document.querySelectorAll('script[src$="loader.js"]').length,
        typeof (window as { IGLOO?: unknown }).IGLOO,
      ];
    });
    expect(before).toEqual([0, 'undefined']);
    expect(site.emulator.inspect.requests('loader')).toBe(0);
    await page.evaluate(() => (window as unknown as { choose(vendor: boolean): void }).choose(true));
    const told = await page.evaluate(() => (window as unknown as { told: Promise<Told> }).told);
    expect([told.code, sourcesOf(told.blackbox)]).toEqual([undefined, FINAL]);
  });

  it('consent refused in the CMP: consent_denied, and the loader never requested', async () => {
    const { page, site } = cell();
    const cmp = `<script>
      window.__tcfapi = (command, version, callback) => {
        if (command === 'addEventListener')
          callback({ gdprApplies: true, eventStatus: 'useractioncomplete', listenerId: 1, vendor: { consents: { 810: false } }, purpose: { consents: { 1: true } } }, true);
        if (command === 'removeEventListener') callback(true);
      };
    </script>`;
    const tag = `<script src="/dist/blackbox-capture.umd.js" data-loader-url="${site.loaderUrl}" data-consent="tcf:810"></script>`;
    await page.goto(site.page('/refused.html', doc(cmp + listen() + tag)));
    const told = await page.evaluate(() => (window as unknown as { told: Promise<Told> }).told);
    expect(told.code).toBe('consent_denied');
    expect(site.emulator.inspect.requests('loader')).toBe(0);
  });
});
