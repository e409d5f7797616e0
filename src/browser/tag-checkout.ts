/**
 * The script tag's `data-checkout-id` (declarative.ts): a chunk of its own beside the UMD file
 * (dist/browser-claim.js), loaded only by a tag that carries one, so that other pages pay
 * no byte for it (docs/performance.md). Its errors are the UMD file's own, made by the `fault`
 * it is given: one error class and one message chunk for the page.
 */
import type { fault as makeFault } from './errors.js';
import { claimRun } from './page-run.js';

/**
 * Resolves once the tag's checkout has the page run's blackbox, with `options.post` (from
 * `data-post-url`) naming it; never while the page reloads for it (docs/browser.md#one-blackbox-per-checkout). Throws `blackbox_used` when it is refused,
 * `invalid_option` for a `data-reload` other than `true`, `false` or empty.
 */
export function claimTag(data: DOMStringMap, fault: typeof makeFault, options: { post?: unknown }): Promise<void> {
  const { checkoutId, reload, postUrl } = data;
  // The POST names its checkout, as the element's does (a `checkout-id` request header).
  if (postUrl !== undefined) options.post = { url: postUrl, headers: { 'checkout-id': checkoutId } };
  if (reload !== undefined && reload !== '' && reload !== 'true' && reload !== 'false')
    throw fault('invalid_option', ['data-reload', reload]);
  const claimed = claimRun(checkoutId!, reload !== 'false');
  if (claimed === false) return new Promise(() => {});
  if (claimed !== true) throw fault('blackbox_used', [claimed, checkoutId!]);
  return Promise.resolve();
}
