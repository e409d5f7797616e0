/**
 * One blackbox per checkout (issue #54). The vendor's loader collects once per page run: a
 * second run in the same page does nothing (docs/vendor-contract.md), so in a page that
 * navigates without a full load (Turbo, htmx boost, an SPA router) a second checkout would
 * get the first one's blackbox. A page run's blackbox therefore belongs to the first checkout
 * id that asks for it; another id is never given it: the element, the script tag and the
 * bindings make that checkout load fully (a reload of its URL, once), or, where the page opted
 * out or the reload would loop, refuse it with `blackbox_used` before anything is posted
 * (docs/browser.md#one-blackbox-per-checkout).
 * The owner is kept on the window, as the loader's own run-once mark is: every copy of the
 * package on the page (the element's entry, a binding's, the script tag's) sees the same one.
 */
import { fault, invalidOption } from './errors.js';

const OWNER = Symbol.for('blackbox-capture.checkout');
/** The checkout id this page run was reloaded for, if it was (read once, at its first claim). */
const RELOADED = Symbol.for('blackbox-capture.reloaded');
/** sessionStorage's record of a reload the package made: `<checkout id> <url>`. */
const MARK = 'blackbox-capture.reload';

type Page = Record<symbol, string | undefined>;

/** The reload mark left for this URL by the package in the page run before, taken (read and removed). */
function takeMark(): string | undefined {
  try {
    const mark = sessionStorage.getItem(MARK);
    sessionStorage.removeItem(MARK);
    const space = mark?.indexOf(' ') ?? -1;
    return mark && mark.slice(space + 1) === location.href ? mark.slice(0, space) : undefined;
  } catch {
    return undefined; // no storage (a sandboxed frame, storage blocked): no mark
  }
}

/**
 * Claims this page run's blackbox for `checkoutId`: true when it is this checkout's. When
 * another checkout has it, with `reload` the page loads this checkout fully (a reload of its
 * URL) and false says so (run nothing, post nothing: the page is going); without `reload`, or
 * when this page run is already that reload (the same refusal again would loop), or when the
 * reload cannot be recorded (no sessionStorage), it throws `blackbox_used`.
 */
export function claimCheckout(checkoutId: string, reload = false): boolean {
  const page = window as unknown as Page;
  if (page[OWNER] === undefined) {
    page[OWNER] = checkoutId;
    page[RELOADED] = takeMark();
  }
  const owner = page[OWNER];
  if (owner === checkoutId) return true;
  if (reload && page[RELOADED] !== checkoutId) {
    try {
      sessionStorage.setItem(MARK, `${checkoutId} ${location.href}`);
      location.reload();
      return false;
    } catch {
      // No storage to guard the loop with: refused instead.
    }
  }
  throw fault('blackbox_used', [owner, checkoutId]);
}

/**
 * The `reload` option (`reload` attribute, `data-reload`): true unless false; `"false"` in an
 * attribute is false, `"true"` and `""` true; anything else is `invalid_option`.
 */
export function reloadOption(value: unknown, name = 'reload'): boolean {
  if (value === undefined || value === null || value === true || value === 'true' || value === '') return true;
  if (value === false || value === 'false') return false;
  return invalidOption(name, value);
}
