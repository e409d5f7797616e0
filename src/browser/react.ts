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

/** The options that start a new capture when they change (functions and signals do not). */
function keyOf(options: CaptureOptions): string {
  return JSON.stringify(options, (_key, value: unknown) => (typeof value === 'function' || (value && typeof value === 'object' && 'aborted' in value) ? undefined : value));
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
