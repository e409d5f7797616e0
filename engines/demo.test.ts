/**
 * The demo's checkouts end to end in every engine and with both loaders, under the demo's
 * strict CSP (a nonce and strict-dynamic): the capture, the form post, the server kit, the
 * emulated service, and the decision shown on the result page.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { configFromEnvironment } from '../demo/config.js';
import { startDemo, type Demo } from '../demo/app.js';
import type { EnginePage } from '../test/support/engines.mjs';
import { FINAL, sourcesOf } from './support/page-parts.js';
import { inEveryEngine, loaderOptions } from './support/matrix.js';

/** The text of `selector` once it contains `text`. */
async function textOnceIn(page: EnginePage, selector: string, text: string): Promise<string> {
  let seen = '';
  await expect
    .poll(
      async () =>
        (seen = await page
          .evaluate((s: string) => document.querySelector(s)?.textContent ?? '', selector)
          .catch(() => '')),
      { timeout: 30_000 },
    )
    .toContain(text);
  return seen;
}

inEveryEngine((cell) => {
  let demo: Demo;
  beforeAll(async () => {
    demo = await startDemo(
      { ...configFromEnvironment({}), port: 0 },
      {
        delays: { fp_static: [20], fp_dyn: [40, 80], tp: [30, 60] },
        clientMaxAttempts: 1,
        ...loaderOptions(cell().loader),
      },
    );
  });
  afterAll(async () => {
    await demo?.close();
  });

  it('the checkout: the field fills, the post reaches PROCESSED with the final blackbox', async () => {
    const { page } = cell();
    await page.goto(`${demo.url}/checkout`);
    await expect
      .poll(() => page.evaluate(() => document.getElementById('capture-state')?.dataset.state), { timeout: 30_000 })
      .toBe('complete');
    const blackbox = await page.evaluate(() => document.querySelector<HTMLInputElement>('#blackbox')!.value);
    expect(sourcesOf(blackbox)).toEqual(FINAL);
    await page.evaluate(() => document.getElementById('pay')!.click());
    expect(await textOnceIn(page, '#result', '"status": "PROCESSED"')).toContain('PROCESSED');
    const transactions = demo.emulator!.inspect.transactions().filter((t) => t.blackboxes.includes(blackbox));
    expect(transactions).toMatchObject([{ status: 'PROCESSED' }]);
  });

  it('the checkout with <blackbox-capture>: a submit made at once is held, then PROCESSED', async () => {
    const { page } = cell();
    await page.goto(`${demo.url}/checkout-element`);
    // At once once the element is there: a submit before its module has run is a plain form post
    // (on a busy machine WebKit can be that quick), which the element cannot see.
    await expect
      .poll(() => page.evaluate(() => customElements.get('blackbox-capture') !== undefined), { timeout: 30_000 })
      .toBe(true);
    await page.evaluate(() => document.getElementById('pay')!.click());
    await textOnceIn(page, '#result', '"status": "PROCESSED"');
    expect(await textOnceIn(page, '#outcome', 'complete')).toContain('complete');
  });
});
