/**
 * One blackbox per checkout (issue #54). The vendor's loader collects once per page run: a
 * second run in the same page does nothing (docs/vendor-contract.md), so in a page that
 * navigates without a full load (Turbo, htmx boost, an SPA router) a second checkout would
 * get the first one's blackbox. A page run's blackbox therefore belongs to the first checkout
 * id that asks for it (page-run.ts); another id is never given it: the element and the
 * bindings make that checkout load fully (a reload of its URL, once), or, where the page opted
 * out (`reload` false) or the reload would loop, refuse it with `blackbox_used` before
 * anything is posted (docs/browser.md#one-blackbox-per-checkout).
 */
import { fault, invalidOption } from './errors.js';
import { claimRun } from './page-run.js';

/**
 * Claims this page run's blackbox for `checkoutId`: true when it is this checkout's, false
 * when the page reloads for it (run nothing, post nothing); throws `blackbox_used` when it is
 * refused (page-run.ts says when).
 */
export function claimCheckout(checkoutId: string, reload = false): boolean {
  const claimed = claimRun(checkoutId, reload);
  if (typeof claimed === 'string') throw fault('blackbox_used', [claimed, checkoutId]);
  return claimed;
}

/**
 * The `reload` option (the element's `reload` attribute): true unless false; `"false"` in an
 * attribute is false, `"true"` and `""` true; anything else is `invalid_option`.
 */
export function reloadOption(value: unknown, name = 'reload'): boolean {
  if (value === undefined || value === null || value === true || value === 'true' || value === '') return true;
  if (value === false || value === 'false') return false;
  return invalidOption(name, value);
}
