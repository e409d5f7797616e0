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
import { captureJoined, keyOf, type JoinedOptions } from './joined.js';

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

/** The hook's options: the capture's, and `checkoutId`. */
export type BlackboxHookOptions = JoinedOptions;

type HookState = Omit<BlackboxState, 'ready'>;

const INITIAL: HookState = { blackbox: undefined, complete: false, outcome: undefined, error: undefined };

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
  useEffect(
    () =>
      // Its stop is the cleanup: StrictMode's first mount, an unmounted component hear nothing more.
      captureJoined(latest.current, {
        update: (blackbox, complete) => setState((previous) => ({ ...previous, blackbox, complete })),
        outcome: (outcome) => setState((previous) => ({ ...previous, outcome })),
        ended(blackbox, error, live) {
          ended.resolve(blackbox);
          if (live)
            setState((previous) =>
              error === undefined
                ? { ...previous, blackbox, complete: true, error: undefined }
                : { ...previous, error },
            );
        },
      }),
    [key],
  );
  return { ...state, ready: ended.promise };
}
