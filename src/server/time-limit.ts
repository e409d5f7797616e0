/**
 * The integrator's `onResult` under a time limit: a call that hangs would hold its lease
 * (renewed while held) and, on the endpoint, the browser's request for ever, and no other
 * instance could take the work over.
 */
import { DeviceRiskError, ERR_RESULT_HANDLER_TIMEOUT } from './errors.js';

/**
 * Runs `call` with a signal that aborts after `timeoutMs` or with `stop`; rejects then
 * (`result_handler_timeout`, or `stop`'s reason) without waiting for the call to notice.
 */
export async function callWithin(
  call: (signal: AbortSignal) => void | Promise<void>,
  timeoutMs: number,
  stop: AbortSignal = new AbortController().signal,
): Promise<void> {
  const limit = new AbortController();
  const timer = setTimeout(
    () =>
      limit.abort(
        new DeviceRiskError(ERR_RESULT_HANDLER_TIMEOUT, `onResult did not settle within ${timeoutMs} ms`, {
          operation: 'onResult',
        }),
      ),
    timeoutMs,
  );
  // The limit ends the call's hold on the handler; it never holds the process up itself.
  (timer as { unref?: () => void }).unref?.();
  const signal = AbortSignal.any([limit.signal, stop]);
  let unlisten = () => {};
  const aborted = new Promise<never>((_, reject) => {
    const abort = () => reject(signal.reason);
    if (signal.aborted) return abort();
    signal.addEventListener('abort', abort, { once: true });
    unlisten = () => signal.removeEventListener('abort', abort);
  });
  try {
    await Promise.race([Promise.resolve().then(() => call(signal)), aborted]);
  } finally {
    clearTimeout(timer);
    unlisten();
  }
}
