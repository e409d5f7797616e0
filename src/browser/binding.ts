/**
 * What the Vue composable (`blackbox-capture/vue`) and the Svelte store
 * (`blackbox-capture/svelte`) share: one capture started for a mounted component and heard
 * until it unmounts, as the React hook does it (docs/frameworks.md). Framework-free: each
 * binding only holds the state its framework renders. With `post`, every mount in the page run
 * with the same options (and `checkoutId`) joins one delivery: one POST under one
 * Idempotency-Key, whatever remounts.
 */
import type { CaptureOutcome } from '../shared/types.js';
import { captureJoined, keyOf, type JoinedOptions } from './joined.js';

export { keyOf };

export interface BlackboxState {
  /** The latest blackbox: partial while `complete` is false. */
  blackbox: string | undefined;
  complete: boolean;
  outcome: CaptureOutcome | undefined;
  /** The capture's error (a BlackboxCaptureError), if it failed. */
  error: unknown;
}

/** The capture's options, with `checkoutId` (joined.ts). */
export type BlackboxBindingOptions = JoinedOptions;

export const INITIAL: BlackboxState = Object.freeze({
  blackbox: undefined,
  complete: false,
  outcome: undefined,
  error: undefined,
});

/**
 * A capture's `ready`, as React's hook and Angular's `injectBlackbox` have it: the blackbox once
 * the capture has ended (and, with `post`, been delivered), or what there was when it failed
 * (`''` for none). Never rejects: a submit handler awaits it (docs/frameworks.md).
 */
export interface Ready {
  promise: Promise<string>;
  settle: (blackbox: string) => void;
}

export function ready(): Ready {
  let settle!: (blackbox: string) => void;
  const promise = new Promise<string>((resolve) => (settle = resolve));
  return { promise, settle };
}

/**
 * Starts (or joins) the capture of `options` and tells `change` what changes, and `ended` the
 * blackbox once it has ended, lived or not; the returned function stops telling `change` (an
 * unmounted component hears nothing more). The capture itself runs on: the package runs the
 * loader once per page.
 */
export function watchCapture(
  options: BlackboxBindingOptions,
  change: (update: Partial<BlackboxState>) => void,
  ended: (blackbox: string) => void = () => {},
): () => void {
  return captureJoined(options, {
    update: (blackbox, complete) => change({ blackbox, complete }),
    outcome: (outcome) => change({ outcome }),
    ended(blackbox, error, live) {
      if (live) change(error === undefined ? { blackbox, complete: true, error: undefined } : { error });
      // After the state's change: a handler that awaited `ready` reads the final state too.
      ended(blackbox);
    },
  });
}
