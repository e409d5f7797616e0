/**
 * What a call does beyond resolving with the final blackbox: it writes the field (its own, or
 * the page config's `bbout_element_id`), calls `onUpdate`, tells `onOutcome` and the endpoint
 * how the capture went, and delivers with `post`. A chunk of its own, fetched beside the loader
 * only by the calls that use one of these (capture.ts): the smallest call never loads it. It is
 * handed the core's parts as parameters, so that it imports nothing from the entry (the
 * minifier shortens parameter names, never property names).
 */
import type { CaptureOutcome, CaptureOutcomeKind, VendorConfig } from '../shared/types.js';
import { deliver, report, type DeliveryFailure } from './deliver.js';
import type { BlackboxCaptureError, FaultArgs } from './errors.js';
import { writeField } from './field.js';
import type { NormalizedOptions } from './options.js';

type Field = HTMLInputElement | HTMLTextAreaElement;
type Fault = (...fact: FaultArgs) => BlackboxCaptureError;

/** The outcome kind of an ending: a resolved call by what failed, a rejected one by its code. */
export function outcomeKind(failed: string[], error?: BlackboxCaptureError): CaptureOutcomeKind {
  if (error) return error.code === 'timeout' ? 'timeout-partial' : (error.code as CaptureOutcomeKind);
  return failed.some((name) => name.startsWith('fp_'))
    ? 'degraded-first-party'
    : failed.length
      ? 'degraded-third-party'
      : 'complete';
}

/**
 * Tells how a call ended: to `onOutcome`, and, for a capture that produced no final
 * blackbox, to the endpoint as an outcome alone (sent once, kept alive if the page goes).
 */
export function tell(
  { onOutcome, post }: NormalizedOptions,
  outcome: CaptureOutcome,
  safely: (callback: () => void) => void,
  unfinished?: unknown,
): void {
  if (onOutcome) safely(() => onOutcome(outcome));
  if (unfinished && post) report(post, outcome).catch(() => {});
}

/** The update and the ending of one call: `update` runs on every blackbox of the run, `end` once as the call ends. */
export type Follow = [
  update: (blackbox: string, complete: number | false) => void,
  end: (error?: BlackboxCaptureError) => void,
];

/**
 * One call's field, callbacks, outcome and delivery. `stop` ends the call's time limit and
 * updates, and answers whether the call has settled already (an abort from code the final
 * update runs wins); `finish` settles it.
 */
export function follow(
  options: NormalizedOptions,
  field: Field | null,
  config: VendorConfig,
  started: number,
  fault: Fault,
  safely: (callback: () => void) => void,
  isField: (element: Element | null) => element is Field,
  failedNow: () => string[],
  finish: (error?: BlackboxCaptureError, blackbox?: string) => void,
  stop: () => boolean,
  onAbort: () => void,
): Follow {
  const { signal, onUpdate, captureNonce, orderToken } = options;
  const post = options.post && { ...options.post, captureNonce, orderToken };
  /** How the capture went, as of now; `error` for one that failed. */
  const outcomeNow = (error?: BlackboxCaptureError): CaptureOutcome => {
    // A collection failure has cleared the loader's flags by now (for a later run): its error keeps the list.
    const scripts = error?.scripts ?? failedNow();
    return { outcome: outcomeKind(scripts, error), scripts, durationMs: Math.round(performance.now() - started) };
  };
  // Set when the capture reached its final value: a failed or aborted delivery does not change how it went.
  let outcome: CaptureOutcome | undefined;
  return [
    (blackbox, complete) => {
      // The page config's bbout_element_id is looked up on every write: the page may render it late.
      const id = config.bbout_element_id;
      const target = field ?? ((id && document.getElementById(id)) as Field | null);
      if (target) {
        // An element without a value (a <script>, a <div>) would throw inside the vendor's callback.
        if (!isField(target)) return finish(fault('invalid_option', ['bbout_element_id', target]));
        writeField(target, blackbox);
      }
      if (onUpdate) safely(() => onUpdate(blackbox, !!complete));
      if (!complete || stop()) return;
      outcome = outcomeNow();
      if (!post) return finish(undefined, blackbox);
      deliver(blackbox, post, outcome, signal, complete).then(
        () => finish(undefined, blackbox),
        (failure: DeliveryFailure) =>
          signal?.aborted
            ? onAbort()
            : finish(
                fault('post_failed', [post.url, failure.detail], {
                  blackbox,
                  url: post.url,
                  status: failure.status,
                  cause: failure.cause,
                }),
              ),
      );
    },
    (error) => {
      const produced = outcome !== undefined;
      tell(options, (outcome ??= outcomeNow(error)), safely, error && !produced);
    },
  ];
}
