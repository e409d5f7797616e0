/**
 * Whose the page run's blackbox is (issue #54; docs/browser.md#one-blackbox-per-checkout), with
 * no error of its own: the element and the bindings turn a refusal into `blackbox_used`
 * (checkout.ts), and the script tag's chunk (tag-checkout.ts) into the UMD file's own error.
 * The owner is kept on the window, as the loader's own run-once mark is: every copy of the
 * package on the page sees the same one.
 */
const OWNER = Symbol.for('blackbox-capture.checkout');
/** The checkout id this page run was reloaded for, if it was (read once, at its first claim). */
// Stryker disable next-line StringLiteral: any key the copies share works; the name keeps it apart from others'
const RELOADED = Symbol.for('blackbox-capture.reloaded');
/** sessionStorage's record of a reload the package made: `<checkout id> <url>`. */
const MARK = 'blackbox-capture.reload';

type Page = Record<symbol, string | undefined>;

/** The reload mark left for this URL by the package in the page run before, taken (read and removed). */
function takeMark(): string | undefined {
  try {
    const mark = sessionStorage.getItem(MARK);
    sessionStorage.removeItem(MARK);
    // Stryker disable next-line OptionalChaining,UnaryOperator: without a mark the answer is undefined all the same (a throw is caught)
    const space = mark?.indexOf(' ') ?? -1;
    return mark && mark.slice(space + 1) === location.href ? mark.slice(0, space) : undefined;
  } catch {
    // No storage (a sandboxed frame, storage blocked): no mark.
  }
  return undefined;
}

/**
 * Claims this page run's blackbox for `checkoutId`: true when it is this checkout's. When
 * another checkout has it, with `reload` the page loads this checkout fully (a reload of its
 * URL, recorded in sessionStorage) and false says so: run nothing, post nothing, the page is
 * going. Otherwise the owner's id (refused): without `reload`, when this page run is already
 * that reload (the same refusal again would loop: two checkouts in one page), or when the
 * reload cannot be recorded (no sessionStorage to guard the loop with).
 */
export function claimRun(checkoutId: string, reload: boolean): boolean | string {
  const page = window as unknown as Page;
  if (page[OWNER] === undefined) {
    page[OWNER] = checkoutId;
    page[RELOADED] = takeMark();
  }
  const owner = page[OWNER];
  if (owner === checkoutId) return true;
  if (reload && page[RELOADED] !== checkoutId) {
    try {
      sessionStorage.setItem(MARK, checkoutId);
    } catch {
      return owner; // no storage to guard the loop with: refused instead
    }
    // A task later: a router may move to the checkout's URL only after rendering it (Astro's
    // ClientRouter a microtask later), and the reload is of the checkout's URL.
    setTimeout(() => {
      sessionStorage.setItem(MARK, `${checkoutId} ${location.href}`);
      location.reload();
    });
    return false;
  }
  return owner;
}
