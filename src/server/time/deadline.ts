/**
 * Time limits that fire. `AbortSignal.timeout()` inside `AbortSignal.any()` can be
 * garbage-collected before it fires on Node 20 (the combined signal holds its
 * sources weakly), and then a hanging upstream is never given up on. A deadline
 * holds its own timer and controller, and is cleared when the work is done.
 */
export interface Deadline {
  /** Aborts when the time is up or when any parent signal aborts. */
  readonly signal: AbortSignal;
  /** True once the time limit (not a parent) aborted the signal. */
  readonly expired: boolean;
  /** Stops the timer and the parent listeners; call it when the work ends. */
  clear(): void;
}

export function deadline(ms: number, ...parents: Array<AbortSignal | undefined>): Deadline {
  const controller = new AbortController();
  let expired = false;
  const sources = parents.filter((s): s is AbortSignal => s !== undefined);
  const onParentAbort = function (this: AbortSignal) {
    controller.abort(this.reason);
  };
  for (const source of sources) {
    if (source.aborted) controller.abort(source.reason);
    else source.addEventListener('abort', onParentAbort); // removed by clear(); a signal aborts once
  }
  // Node's setTimeout accepts at most 2^31-1 ms; a longer one would fire after 1 ms.
  const timer = setTimeout(
    () => {
      expired = true;
      controller.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError'));
    },
    Math.min(Math.max(0, ms), 2 ** 31 - 1),
  );
  return {
    signal: controller.signal,
    get expired() {
      return expired;
    },
    clear() {
      clearTimeout(timer);
      for (const source of sources) source.removeEventListener('abort', onParentAbort);
    },
  };
}

/**
 * `work`, unless `signal` aborts first: then its reason. For reads of a fetch body, which
 * undici can leave pending after the abort (Node 20: a body that claims gzip and is not
 * never settles), so that a time limit holds whatever the body.
 */
export function within<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => {});
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
