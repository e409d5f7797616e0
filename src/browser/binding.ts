/**
 * What the Vue composable (`blackbox-capture/vue`) and the Svelte store
 * (`blackbox-capture/svelte`) share: one capture started for a mounted component and heard
 * until it unmounts, as the React hook does it (docs/frameworks.md). Framework-free: each
 * binding only holds the state its framework renders. With `post`, every mount in the page run
 * with the same options (and `checkoutId`) joins one delivery: one POST under one
 * Idempotency-Key, whatever remounts.
 */
import type { CaptureOutcome } from '../shared/types.js';
import { captureBlackbox, type CaptureOptions } from './index.js';

export interface BlackboxState {
  /** The latest blackbox: partial while `complete` is false. */
  blackbox: string | undefined;
  complete: boolean;
  outcome: CaptureOutcome | undefined;
  /** The capture's error (a BlackboxCaptureError), if it failed. */
  error: unknown;
}

export interface BlackboxBindingOptions extends CaptureOptions {
  /**
   * A checkout or cart id: with `post`, each id is posted once per page run (a new cart gets
   * a transaction of its own, the same cart never two), with a `checkout-id` request header.
   */
  checkoutId?: string;
}

export const INITIAL: BlackboxState = Object.freeze({
  blackbox: undefined,
  complete: false,
  outcome: undefined,
  error: undefined,
});

/** `post` with the checkout id as a request header. */
function scoped(post: NonNullable<CaptureOptions['post']>, checkoutId: string): CaptureOptions['post'] {
  const given = typeof post === 'string' ? { url: post } : post;
  return { ...given, headers: { ...given.headers, 'checkout-id': checkoutId } };
}

/** Identities of the objects in options that are no plain data (a field element). */
const identities = new WeakMap<object, number>();
let lastIdentity = 0;

/**
 * The options that start a new capture when they change. Functions and signals do not (they
 * are often new on every render). Other objects that are no plain data, such as a field
 * element, count by identity: a framework's own properties on a DOM node are circular.
 */
export function keyOf(options: BlackboxBindingOptions): string {
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

/**
 * Starts (or joins) the capture of `options` and tells `change` what changes; the returned
 * function stops telling (an unmounted component hears nothing more). The capture itself runs
 * on: the package runs the loader once per page.
 */
export function watchCapture(
  options: BlackboxBindingOptions,
  change: (update: Partial<BlackboxState>) => void,
): () => void {
  let active = true;
  const { checkoutId, ...given } = options;
  const { post, ...shared } = given;
  // The delivery holds none of this mount's functions (nor the field, which the mount's own call
  // writes), so that every mount's is the same call.
  const { onUpdate: _onUpdate, onOutcome: _onOutcome, field: _field, ...delivery } = shared;
  const delivered =
    post === undefined
      ? undefined
      : captureBlackbox({ ...delivery, post: checkoutId === undefined ? post : scoped(post, checkoutId) });
  delivered?.catch(() => {}); // its failure is this mount's error, below
  captureBlackbox({
    ...shared,
    onUpdate(blackbox, complete) {
      if (!active) return;
      change({ blackbox, complete });
      given.onUpdate?.(blackbox, complete);
    },
    onOutcome(outcome) {
      if (!active) return;
      change({ outcome });
      given.onOutcome?.(outcome);
    },
  })
    .then(async (blackbox) => {
      await delivered;
      return blackbox;
    })
    .then(
      (blackbox) => active && change({ blackbox, complete: true, error: undefined }),
      (error: unknown) => active && change({ error }),
    );
  return () => {
    active = false;
  };
}
