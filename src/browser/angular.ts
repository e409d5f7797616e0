/**
 * `blackbox-capture/angular`: `injectBlackbox(options)`, the capture in an Angular component,
 * called in its injection context (a field initializer or the constructor). It returns
 * signals of the capture's state, `ready` (the blackbox once the capture has ended and been
 * delivered: what an `(ngSubmit)` handler awaits) and `control`, a FormControl that holds the
 * latest blackbox, for a reactive form.
 *
 * A function, not a directive or a component: those reach an app compiled by Angular's
 * compiler (partially compiled by ngc, then linked by the app's build), and tie the package to
 * Angular's compiler version; a function is plain JavaScript that `ng build` (AOT, no JIT
 * compiler in the bundle) consumes as it is, and no template names an element Angular does not
 * know (no NG8001, no CUSTOM_ELEMENTS_SCHEMA). Nothing runs on a server (`PLATFORM_ID`); the
 * capture stops being heard when the component is destroyed. With `post`, every component of
 * the page run with the same options (and `checkoutId`) joins one delivery: one POST under one
 * Idempotency-Key, whatever is created again (docs/frameworks.md#angular).
 */
import { DestroyRef, inject, PLATFORM_ID, signal, type Signal } from '@angular/core';
import { FormControl } from '@angular/forms';
import type { CaptureOutcome } from '../shared/types.js';
import { captureJoined, type JoinedOptions } from './joined.js';

export type BlackboxOptions = JoinedOptions;

export interface BlackboxCapture {
  /** The latest blackbox: partial while `complete()` is false. */
  blackbox: Signal<string | undefined>;
  complete: Signal<boolean>;
  outcome: Signal<CaptureOutcome | undefined>;
  /** The capture's error (a BlackboxCaptureError), if it failed. */
  error: Signal<unknown>;
  /**
   * The blackbox once the capture has ended (and, with `post`, been delivered): final, or what
   * there was when it failed (`''` for none; `error()` says why). Never rejects.
   */
  ready: Promise<string>;
  /** The latest blackbox as a form control: `new FormGroup({ blackbox: capture.control, … })`. */
  control: FormControl<string>;
}

export function injectBlackbox(options: BlackboxOptions): BlackboxCapture {
  const browser = inject(PLATFORM_ID) === 'browser';
  const destroyed = inject(DestroyRef);
  const blackbox = signal<string | undefined>(undefined);
  const complete = signal(false);
  const outcome = signal<CaptureOutcome | undefined>(undefined);
  const error = signal<unknown>(undefined);
  const control = new FormControl('', { nonNullable: true });
  const show = (value: string, done: boolean) => {
    blackbox.set(value);
    complete.set(done);
    control.setValue(value);
  };
  const ready = new Promise<string>((resolve) => {
    if (!browser) return;
    const stop = captureJoined(options, {
      update: show,
      outcome: (value) => outcome.set(value),
      ended(value, failure, live) {
        if (live) {
          if (failure === undefined) show(value, true);
          else error.set(failure);
        }
        resolve(value);
      },
    });
    destroyed.onDestroy(stop);
  });
  return {
    blackbox: blackbox.asReadonly(),
    complete: complete.asReadonly(),
    outcome: outcome.asReadonly(),
    error: error.asReadonly(),
    ready,
    control,
  };
}
