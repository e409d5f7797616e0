/**
 * The kit's one clock. Time of day comes from `now` (injected by tests as an option named
 * `now`); waiting comes from `sleep`, a timer that an abort signal cuts short. Nothing in the
 * kit reads `Date.now()` directly: a wait that must end in real time ends by a timer
 * (`deadline()`), not by comparing clock readings.
 */
export type Now = () => number;

export const systemNow: Now = () => Date.now();

/**
 * `timer`, made to keep no process alive: a wait of the kit's own (a poll, a renewal, a time
 * limit) never holds a process up. Node's timers have `unref`; other runtimes' are numbers.
 */
export const unrefd = <T>(timer: T): T => {
  // Stryker disable next-line OptionalChaining: Node's timers have unref; edge runtimes' numbers do not
  (timer as { unref?: () => void }).unref?.();
  return timer;
};

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** Resolves after `ms`; rejects with the signal's reason as soon as `signal` aborts. */
export const sleep: Sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      // Stryker disable next-line ObjectLiteral,BooleanLiteral: a signal aborts once; `once` only frees the listener sooner
      { once: true },
    );
  });
