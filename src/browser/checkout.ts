/**
 * One blackbox per checkout (issue #54). The vendor's loader collects once per page run: a
 * second run in the same page does nothing (docs/vendor-contract.md), so in a page that
 * navigates without a full load (Turbo, htmx boost, an SPA router) a second checkout would
 * get the first one's blackbox. A page run's blackbox therefore belongs to the first checkout
 * id that asks for it; a capture for another id is refused with `blackbox_used` before
 * anything is posted, and the page loads that checkout fully (docs/browser.md#one-blackbox-per-checkout).
 * The owner is kept on the window, as the loader's own run-once mark is: every copy of the
 * package on the page (the element's entry, a binding's) sees the same one.
 */
import { fault } from './errors.js';

const OWNER = Symbol.for('blackbox-capture.checkout');

/** Claims this page run's blackbox for `checkoutId`; throws `blackbox_used` when another checkout has it. */
export function claimCheckout(checkoutId: string): void {
  const page = window as unknown as Record<symbol, string | undefined>;
  const owner = (page[OWNER] ??= checkoutId);
  if (owner !== checkoutId) throw fault('blackbox_used', [owner, checkoutId]);
}
