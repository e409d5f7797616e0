/**
 * blackbox-capture/lean: captureBlackbox() for the smallest call, on the same page run as the
 * full entry (loader-run.ts), with every production safety rule (docs/browser.md#the-lean-entry):
 * the URL rules, the config object, inject with the CSP nonce and Trusted Types, the time
 * limit, typed errors, one blackbox per run. Its options are the loader's and the time limit;
 * any other option is refused by name (`invalid_option`), never ignored: a call that needs
 * `field`, `post`, callbacks, a signal or consent imports `blackbox-capture`. Importing it
 * touches no window or document.
 */
import { explain, explained, fault } from './errors.js';
import { LEAN_RULES, type NormalizedOptions } from './options.js';
import { checked, LEAN_KEYS } from './rules.js';
import {
  complete,
  config,
  enter,
  joined,
  latest,
  leave,
  running,
  startRun,
  timedOut,
  type Listener,
} from './loader-run.js';

export { BlackboxCaptureError, isBlackboxCaptureError } from './errors.js';
export type { BlackboxCaptureErrorCode, BlackboxCaptureErrorDetails } from './errors.js';

/** The lean call's options: a subset of the full entry's (CaptureOptions), with the same meaning and defaults. */
export interface LeanCaptureOptions {
  /** The vendor's loader script: an https URL, or a path on the page's origin. Required. */
  loaderUrl: string;
  /** Path of the first-party reverse proxy (`loader.uri_hook`). Default `/iojs`. */
  uriHook?: string;
  /** Time limit for the final blackbox in ms. Default 15000. */
  timeoutMs?: number;
  /** CSP nonce for the injected loader tag. Default: taken from a `script[nonce]` on the page. */
  nonce?: string;
  /** Default true: inject the loader tag; false: the page's own tag runs the loader. */
  inject?: boolean;
}

/**
 * Captures the device blackbox with the lean options: writes the vendor's config object,
 * injects the loader once per page, and resolves with the final blackbox.
 */
export function captureBlackbox(options: LeanCaptureOptions): Promise<string> {
  try {
    // The production build's rules, or in development every rule of these options (options.ts).
    const normalized = checked(LEAN_RULES, options, 'options') as NormalizedOptions;
    for (const key in normalized)
      if (!LEAN_KEYS.includes(key) && normalized[key as keyof NormalizedOptions] !== undefined)
        throw fault('invalid_option', [key, LEAN_KEYS], {}, 'lean_option');
    // The defaults the full entry's calls have, so that the loader settings compare equal; and
    // the entry's mark, so that no call of the full entry shares this call's promise: a page
    // config's bbout_element_id fails this one and is written by that one.
    normalized.vendor = {};
    (normalized as { lean?: 1 }).lean = 1;
    normalized.timeoutMs ??= 15_000;
    if (typeof window === 'undefined' || typeof document === 'undefined') throw fault('not_browser');
    const repeat = joined(normalized);
    if (repeat) return repeat;
    if (!running) startRun(normalized, { uri_hook: normalized.uriHook });
    return subscribe(normalized);
  } catch (error) {
    return explained(error);
  }
}

/** The call: resolved by the run's final blackbox, rejected by its failure or the time limit. */
function subscribe(options: NormalizedOptions): Promise<string> {
  let resolve!: (blackbox: string) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<string>((...settle) => ([resolve, reject] = settle));
  const listener: Listener = (error) => {
    // The page config's bbout_element_id asks for a field write, which is the full entry's
    // (capture.ts): refused, never skipped. Looked up on every update, as the full entry does.
    const id = config.bbout_element_id;
    if (!error && id) error = fault('invalid_option', [id], { blackbox: latest }, 'lean_field');
    if (error || complete) clearTimeout(timer);
    if (error) {
      leave(options);
      void explain(error).then(reject);
    } else if (complete) resolve(latest!);
  };
  const timer = setTimeout(() => listener(timedOut(options.timeoutMs)), options.timeoutMs);
  enter([options, promise, listener]);
  return promise;
}
