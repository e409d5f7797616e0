/**
 * What a fetch or a sleep that gets no answer does: settles only when its signal aborts,
 * rejecting with the signal's reason (or `reason()`), and at once when the signal is already
 * aborted, as the real ones do. A stub that only listens for the event hangs when the abort
 * lands first, which a busy machine makes happen.
 */
export function untilAborted(signal: AbortSignal | null | undefined, reason?: () => unknown): Promise<never> {
  return new Promise((_, reject) => {
    if (!signal) return;
    const abort = () => reject(reason ? reason() : signal.reason);
    if (signal.aborted) abort();
    else signal.addEventListener('abort', abort, { once: true });
  });
}
