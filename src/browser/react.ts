/**
 * `blackbox-capture/react`: `useBlackbox(options)` for React 18 and 19. Nothing runs during
 * rendering, so a server renders the initial state and hydration matches it; the capture
 * starts in an effect. StrictMode's second effect joins the same loader run (the package
 * runs the loader once per page), and a component that unmounts stops hearing of it.
 */
import { useEffect, useRef, useState } from 'react';
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

const INITIAL: BlackboxState = { blackbox: undefined, complete: false, outcome: undefined, error: undefined };

/** Identities of the objects in options that are no plain data (a field element). */
const identities = new WeakMap<object, number>();
let lastIdentity = 0;

/**
 * The options that start a new capture when they change. Functions and signals do not (they
 * are often new on every render). Other objects that are no plain data, such as a field
 * element, count by identity: React's own properties on a DOM node are circular.
 */
function keyOf(options: CaptureOptions): string {
  return JSON.stringify(options, (_key, value: unknown) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
    if ('aborted' in value) return undefined;
    const prototype = Object.getPrototypeOf(value) as object | null;
    if (prototype === Object.prototype || prototype === null) return value;
    let identity = identities.get(value);
    if (identity === undefined) {
      identity = ++lastIdentity;
      identities.set(value, identity);
    }
    return `#object ${identity}`;
  });
}

export function useBlackbox(options: CaptureOptions): BlackboxState {
  const [state, setState] = useState<BlackboxState>(INITIAL);
  // The latest options, for the effect: their callbacks may be new functions on every render.
  const latest = useRef(options);
  latest.current = options;
  const key = keyOf(options);
  useEffect(() => {
    let active = true;
    const given = latest.current;
    captureBlackbox({
      ...given,
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
    }).then(
      (blackbox) => active && setState((previous) => ({ ...previous, blackbox, complete: true, error: undefined })),
      (error: unknown) => active && setState((previous) => ({ ...previous, error })),
    );
    return () => {
      active = false;
    };
  }, [key]);
  return state;
}
