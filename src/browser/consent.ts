/**
 * Consent before collection, loaded only by calls that give `consent`: waits for the
 * decision within the call's time limit, before anything is written to the page, then
 * starts the capture with what is left of the limit. The core hands in what this chunk
 * uses of it, so that the chunk imports nothing from the entry.
 */
import type { CaptureOutcome } from '../shared/types.js';
import type { BlackboxCaptureError, BlackboxCaptureErrorCode, BlackboxCaptureErrorDetails } from './errors.js';
import type { NormalizedOptions } from './options.js';

export interface Core {
  start(options: NormalizedOptions): Promise<string>;
  fault(
    code: BlackboxCaptureErrorCode,
    args?: unknown[],
    details?: BlackboxCaptureErrorDetails,
    kind?: string,
  ): BlackboxCaptureError;
  tell(options: NormalizedOptions, outcome: CaptureOutcome, report?: boolean): void;
}

type Answer =
  | { granted: true; waitedMs: number }
  | { granted: false; error: [BlackboxCaptureErrorCode, unknown[], BlackboxCaptureErrorDetails, string] };

function awaitConsent({ consent, timeoutMs, signal }: NormalizedOptions): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve) => {
    const end = (answer: Answer) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(answer);
    };
    const denied = (cause?: unknown) =>
      end({ granted: false, error: ['consent_denied', [], { cause }, 'consent_denied'] });
    const onAbort = () => end({ granted: false, error: ['aborted', [], { cause: signal!.reason }, 'aborted'] });
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

/** Starts the capture once consent is given; a denial, an undecided consent or an abort end the call with their outcome. */
export async function afterConsent(options: NormalizedOptions, { start, fault, tell }: Core): Promise<string> {
  const answer = await awaitConsent(options);
  if (answer.granted)
    return start({ ...options, timeoutMs: Math.max(1, Math.round(options.timeoutMs - answer.waitedMs)) });
  const error = fault(...answer.error);
  const outcome = error.code === 'timeout' ? 'timeout-partial' : (error.code as 'consent_denied' | 'aborted');
  tell(options, { outcome, scripts: [], durationMs: 0 }, true);
  throw error;
}
