/**
 * Time limits on calls that return a promise: settleWithin() for a store or queue call (which
 * cannot be cancelled), callWithin() for the integrator's `onResult`.
 *
 * The integrator's `onResult` under a time limit: a call that hangs would hold its lease
 * (renewed while held) and, on the endpoint, the browser's request for ever, and no other
 * instance could take the work over.
 */
import { unrefd } from './clock.js';
import { DeviceRiskError, ERR_RESULT_HANDLER_TIMEOUT } from '../errors.js';
import { timeLimitMessages } from '../messages.js';

/**
 * Runs `call` with a signal that aborts after `timeoutMs` or with `stop`; rejects then
 * (`result_handler_timeout`, or `stop`'s reason) without waiting for the call to notice.
 * Leaves nothing behind once settled: no timer, no listener on `stop`.
 */
export async function callWithin(
  call: (signal: AbortSignal) => void | Promise<void>,
  timeoutMs: number,
  stop: AbortSignal = new AbortController().signal,
): Promise<void> {
  const limit = new AbortController();
  const stopped = () => limit.abort(stop.reason);
  if (stop.aborted) stopped();
  else stop.addEventListener('abort', stopped);
  const timer = setTimeout(
    () =>
      limit.abort(
        new DeviceRiskError(ERR_RESULT_HANDLER_TIMEOUT, timeLimitMessages.onResultUnsettled(timeoutMs), {
          operation: 'onResult',
        }),
      ),
    timeoutMs,
  );
  // The limit ends the call's hold on the handler; it never holds the process up itself.
  unrefd(timer);
  const aborted = new Promise<never>((_, reject) => {
    if (limit.signal.aborted) reject(limit.signal.reason);
    limit.signal.addEventListener('abort', () => reject(limit.signal.reason));
  });
  try {
    await Promise.race([Promise.resolve().then(() => call(limit.signal)), aborted]);
  } finally {
    clearTimeout(timer);
    stop.removeEventListener('abort', stopped);
  }
}

/**
 * `work()`'s answer, or `late()`'s error once `timeoutMs` have passed first. Nothing cancels the
 * work: a store or queue call that answers late may still have done what it was asked, so the
 * caller's answer to a time-out says so. No timer is left behind once settled.
 */
export function settleWithin<T>(work: () => Promise<T>, timeoutMs: number, late: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), timeoutMs);
  });
  return Promise.race([Promise.resolve().then(work), expired]).finally(() => clearTimeout(timer));
}
