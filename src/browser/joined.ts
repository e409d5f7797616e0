/**
 * A framework binding's capture: the mount's own call (its field, its callbacks, heard only
 * while the mount lives) beside one delivery call that holds none of the mount's functions, so
 * that every mount of a page run makes the same delivery call and joins the first one's POST:
 * one Idempotency-Key whatever remounts (docs/browser.md#react-useblackbox). Used by the React
 * hook, the Angular functions, the Vue composable and the Svelte store (binding.ts), each
 * bundled into its own entry.
 */
import type { CaptureOutcome } from '../shared/types.js';
import { claimCheckout, reloadOption } from './checkout.js';
import { explain } from './errors.js';
import { captureBlackbox, type CaptureOptions } from './index.js';

export interface JoinedOptions extends CaptureOptions {
  /**
   * A checkout or cart id: with `post`, it is posted once per page run, with a `checkout-id`
   * request header.
   * The page run's blackbox is the first id's: another id makes the page load fully (a reload of
   * its URL, once; checkout.ts), the same id re-rendered keeps it.
   */
  checkoutId?: string;
  /**
   * `false`: another checkout in the page run is refused with `blackbox_used` instead of
   * reloading the page (the page then loads it fully its own way). Default `true`.
   */
  reload?: boolean;
}

/**
 * What a mount hears while it lives. `ended` comes once, lived or not (`live` says), with the
 * error when the capture failed.
 */
export interface MountListener {
  update(blackbox: string, complete: boolean): void;
  outcome(outcome: CaptureOutcome): void;
  ended(blackbox: string, error: unknown, live: boolean): void;
}

/** Identities of the objects in options that are no plain data (a field element). */
const identities = new WeakMap<object, number>();
let lastIdentity = 0;

/**
 * The options that start a new capture when they change. Functions and signals do not (they
 * are often new on every render). Other objects that are no plain data, such as a field
 * element, count by identity: a framework's own properties on a DOM node are circular.
 */
export function keyOf(options: JoinedOptions): string {
  return JSON.stringify(options, (_key, value: unknown) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
    if ('aborted' in value) return undefined;
    const prototype = Object.getPrototypeOf(value) as object | null;
    if (prototype === Object.prototype || prototype === null) return value;
    let identity = identities.get(value);
    if (identity === undefined) {
      // Stryker disable next-line UpdateOperator: counting down gives distinct identities as well
      identity = ++lastIdentity;
      identities.set(value, identity);
    }
    return `#object ${identity}`;
  });
}

/** `post` with the checkout id as a request header. */
function scoped(post: NonNullable<CaptureOptions['post']>, checkoutId: string): CaptureOptions['post'] {
  const given = typeof post === 'string' ? { url: post } : post;
  return { ...given, headers: { ...given.headers, 'checkout-id': checkoutId } };
}

/**
 * Starts (or joins) the capture for one mount; `ended` hears the blackbox once the capture
 * has ended and been delivered, or what there was when it failed ('' for none), whether or
 * not the mount still lives. Returns the mount's stop: it hears no update or outcome after it.
 */
export function captureJoined(options: JoinedOptions, listener: MountListener): () => void {
  let active = true;
  const stop = () => {
    active = false;
  };
  const { checkoutId, reload, ...given } = options;
  try {
    // Another checkout than the page run's first: before anything runs or is posted, the page
    // loads it fully (nothing more is heard: the page is going), or, with reload: false, it is refused.
    const fullLoad = reloadOption(reload);
    if (checkoutId !== undefined && !claimCheckout(checkoutId, fullLoad)) return stop;
  } catch (error) {
    void explain(error).then((explained) => listener.ended('', explained, active));
    return stop;
  }
  const { post, ...shared } = given;
  // Nor the field, which the mount's own call writes; nor its signal: every mount of the
  // checkout joins one delivery under one key (a mount aborted rejects its own call, not it).
  const { onUpdate: _onUpdate, onOutcome: _onOutcome, field: _field, signal: _signal, ...delivery } = shared;
  const delivered =
    post === undefined
      ? undefined
      : captureBlackbox({ ...delivery, post: checkoutId === undefined ? post : scoped(post, checkoutId) });
  delivered?.catch(() => {}); // its failure is the mount's error, below
  captureBlackbox({
    ...shared,
    onUpdate(blackbox, complete) {
      if (!active) return;
      listener.update(blackbox, complete);
      given.onUpdate?.(blackbox, complete);
    },
    onOutcome(outcome) {
      if (!active) return;
      listener.outcome(outcome);
      given.onOutcome?.(outcome);
    },
  })
    .then(async (blackbox) => {
      await delivered;
      return blackbox;
    })
    .then(
      (blackbox) => listener.ended(blackbox, undefined, active),
      // What the capture had when it failed: a timeout's partial value, a failed delivery's final one.
      (error: unknown) => listener.ended((error as { blackbox?: string } | undefined)?.blackbox ?? '', error, active),
    );
  return stop;
}
