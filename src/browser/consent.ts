/**
 * Consent before collection, loaded only by calls that give `consent`: waits for the
 * decision within the call's time limit, before anything is written to the page, then
 * starts the capture with what is left of the limit. The core hands in what this chunk
 * uses of it, so that the chunk imports nothing from the entry.
 */
import type { CaptureOutcome, CaptureOutcomeKind } from '../shared/types.js';
import type { BlackboxCaptureError, FaultArgs } from './errors.js';
import type { NormalizedOptions } from './options.js';

export interface Core {
  /** `timeoutMs`: what is left of the call's limit; the options stay the call's own, for matching. */
  start(options: NormalizedOptions, timeoutMs: number): Promise<string>;
  fault(...fact: FaultArgs): BlackboxCaptureError;
  tell(options: NormalizedOptions, outcome: CaptureOutcome, report?: boolean): void;
  outcomeKind(failed: string[], error: BlackboxCaptureError): CaptureOutcomeKind;
}

type Answer = { granted: true; waitedMs: number } | { granted: false; error: FaultArgs };

function awaitConsent({ consent, timeoutMs, signal }: NormalizedOptions): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve) => {
    const end = (answer: Answer) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(answer);
    };
    const denied = (cause?: unknown) => end({ granted: false, error: ['consent_denied', [], { cause }] });
    const onAbort = () => end({ granted: false, error: ['aborted', [], { cause: signal!.reason }] });
    const timer = setTimeout(
      () => end({ granted: false, error: ['timeout', [timeoutMs], {}, 'consent_timeout'] }),
      timeoutMs,
    );
    // Aborted while this chunk loaded: the event has gone by.
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort);
    // Only `true` grants: a CMP answering undefined, "yes" or an object has not said yes.
    Promise.resolve()
      .then(() => (typeof consent === 'function' ? consent() : consent))
      .then(
        (value) => (value === true ? end({ granted: true, waitedMs: performance.now() - started }) : denied()),
        denied,
      );
  });
}

/**
 * Starts the capture once consent is given; a denial, an undecided consent or an abort end
 * the call with their outcome. The core's parts come as parameters, not as one object:
 * the minifier shortens parameter names, never property names, and the core pays for them.
 */
export async function afterConsent(
  options: NormalizedOptions,
  start: Core['start'],
  fault: Core['fault'],
  tell: Core['tell'],
  outcomeKind: Core['outcomeKind'],
): Promise<string> {
  const answer = await awaitConsent(options);
  if (answer.granted) {
    // Without its consent (a new function on every mount) and with its limit unchanged, the
    // call matches the page run's other calls of the same options: one delivery, one
    // Idempotency-Key, whatever remounts (docs/browser.md#consent).
    const { consent: _granted, ...call } = options;
    return start(call, Math.max(1, Math.round(options.timeoutMs - answer.waitedMs)));
  }
  const error = fault(...answer.error);
  tell(options, { outcome: outcomeKind([], error), scripts: [], durationMs: 0 }, true);
  throw error;
}
