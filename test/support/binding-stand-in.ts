// A stand-in for the bindings' shared capture (src/browser/binding.ts's watchCapture), for the
// tests of the framework bindings: each capture the binding starts is recorded in `watches`,
// with its options, a way to tell it updates, and whether the binding stopped it. Used from
// a vi.mock factory: `watchCapture: (await import('../support/binding-stand-in.js')).watchCapture`.
import type { BlackboxBindingOptions, BlackboxState } from '../../src/browser/binding.js';

export interface Watch {
  options: BlackboxBindingOptions;
  change(update: Partial<BlackboxState>): void;
  /** The binding's `ended`: the blackbox once the capture has ended, lived or not. */
  ended(blackbox: string): void;
  stopped: boolean;
}

/** The captures started so far; a test's afterEach empties it. */
export const watches: Watch[] = [];

export function watchCapture(
  options: BlackboxBindingOptions,
  change: Watch['change'],
  ended: Watch['ended'] = () => {},
): () => void {
  const watch: Watch = { options, change, ended, stopped: false };
  watches.push(watch);
  return () => void (watch.stopped = true);
}
