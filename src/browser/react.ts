/**
 * `blackbox-capture/react`: `useBlackbox(options)` for React 18 and 19. Nothing runs during
 * rendering, so a server renders the initial state and hydration matches it; the capture
 * starts in an effect. StrictMode's second effect joins the same loader run (the package
 * runs the loader once per page), and a component that unmounts stops hearing of it.
 * With `post`, every mount in the page run with the same options (and `checkoutId`) joins
 * one delivery: one POST under one Idempotency-Key, whatever remounts.
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import type { CaptureOutcome } from '../shared/types.js';
import { captureBlackbox, type CaptureOptions } from './index.js';

export interface BlackboxState {
  /** The latest blackbox: partial while `complete` is false. */
  blackbox: string | undefined;
  complete: boolean;
  outcome: CaptureOutcome | undefined;
  /** The capture's error (a BlackboxCaptureError), if it failed. */
  error: unknown;
  /**
   * The blackbox once the capture has ended (and, with `post`, been delivered): final, or what
   * there was when it failed (`''` for none; `error` says why). Never rejects, and stays the
   * same promise until the options change, so a submit handler that prevents the default can
   * await it: a state read at the submit may still be partial.
   */
  ready: Promise<string>;
}

type HookState = Omit<BlackboxState, 'ready'>;

export interface BlackboxHookOptions extends CaptureOptions {
  /**
   * A checkout or cart id: with `post`, each id is posted once per page run (a new cart gets
   * a transaction of its own, the same cart never two), with a `checkout-id` request header.
   */
  checkoutId?: string;
}

/** `post` with the checkout id as a request header. */
function scoped(post: NonNullable<CaptureOptions['post']>, checkoutId: string): CaptureOptions['post'] {
  const given = typeof post === 'string' ? { url: post } : post;
  return { ...given, headers: { ...given.headers, 'checkout-id': checkoutId } };
}

const INITIAL: HookState = { blackbox: undefined, complete: false, outcome: undefined, error: undefined };

/** Identities of the objects in options that are no plain data (a field element). */
const identities = new WeakMap<object, number>();
let lastIdentity = 0;

/**
 * The options that start a new capture when they change. Functions and signals do not (they
 * are often new on every render). Other objects that are no plain data, such as a field
 * element, count by identity: React's own properties on a DOM node are circular.
 */
function keyOf(options: BlackboxHookOptions): string {
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

/** A promise with its resolve function: `ready` for one capture. */
function deferred(): { promise: Promise<string>; resolve(blackbox: string): void } {
  let resolve!: (blackbox: string) => void;
  const promise = new Promise<string>((settle) => (resolve = settle));
  return { promise, resolve };
}

export function useBlackbox(options: BlackboxHookOptions): BlackboxState {
  const [state, setState] = useState<HookState>(INITIAL);
  // The latest options, for the effect: their callbacks may be new functions on every render.
  const latest = useRef(options);
  latest.current = options;
  const key = keyOf(options);
  // One per capture: a new one when the options start a new capture, never on other renders.
  const ended = useMemo(deferred, [key]);
  useEffect(() => {
    let active = true;
    const { checkoutId, ...given } = latest.current;
    const { post, ...shared } = given;
    // The delivery holds none of this effect's functions (nor the field, which the hook's own call
    // writes), so that every mount's is the same call.
    const { onUpdate: _onUpdate, onOutcome: _onOutcome, field: _field, ...delivery } = shared;
    const delivered =
      post === undefined
        ? undefined
        : captureBlackbox({ ...delivery, post: checkoutId === undefined ? post : scoped(post, checkoutId) });
    delivered?.catch(() => {}); // its failure is this hook's error, below
    captureBlackbox({
      ...shared,
      // An effect that was cleaned up (StrictMode's first, an unmounted component) hears nothing more.
      onUpdate(blackbox, complete) {
        if (!active) return;
        setState((previous) => ({ ...previous, blackbox, complete }));
        given.onUpdate?.(blackbox, complete);
      },
      onOutcome(outcome) {
        if (!active) return;
        setState((previous) => ({ ...previous, outcome }));
        given.onOutcome?.(outcome);
      },
    })
      .then(async (blackbox) => {
        await delivered;
        return blackbox;
      })
      .then(
        (blackbox) => {
          ended.resolve(blackbox);
          if (active) setState((previous) => ({ ...previous, blackbox, complete: true, error: undefined }));
        },
        (error: unknown) => {
          // What the capture had when it failed: a timeout's partial value, a failed delivery's final one.
          ended.resolve((error as { blackbox?: string } | undefined)?.blackbox ?? '');
          if (active) setState((previous) => ({ ...previous, error }));
        },
      );
    return () => {
      active = false;
    };
  }, [key]);
  return { ...state, ready: ended.promise };
}
