/**
 * `blackbox-capture/svelte`: `blackboxStore(options)`, a Svelte store (`$store` in Svelte 5
 * and 4 components; docs/frameworks.md#svelte-5-and-sveltekit). It follows the store
 * contract alone, so nothing here imports Svelte. The capture starts with the first
 * subscriber in a browser and is no longer heard after the last one leaves; on a server
 * (SvelteKit's rendering) the store holds the initial state and starts nothing, so hydration
 * matches what the server rendered.
 */
import { INITIAL, ready, watchCapture, type BlackboxBindingOptions, type BlackboxState } from './binding.js';

export type { BlackboxState } from './binding.js';
export type BlackboxStoreOptions = BlackboxBindingOptions;

/** Svelte's store contract (`svelte/store`'s `Readable`), written out so that no Svelte type is needed. */
export interface BlackboxStore {
  subscribe(run: (state: BlackboxState) => void): () => void;
  /**
   * The blackbox once the capture (started by the first subscriber: `$capture` in a component)
   * has ended and, with `post`, been delivered; what a submit handler awaits. Never rejects;
   * on a server it never settles.
   */
  readonly ready: Promise<string>;
}

export function blackboxStore(options: BlackboxStoreOptions): BlackboxStore {
  let state = INITIAL;
  const subscribers = new Set<(state: BlackboxState) => void>();
  let stop: (() => void) | undefined;
  // One capture per store (its options are fixed): subscribed again, it joins the same one.
  const ended = ready();
  return {
    ready: ended.promise,
    subscribe(run) {
      subscribers.add(run);
      run(state);
      if (subscribers.size === 1 && typeof document !== 'undefined')
        stop = watchCapture(
          options,
          (update) => {
            state = { ...state, ...update };
            for (const subscriber of subscribers) subscriber(state);
          },
          ended.settle,
        );
      return () => {
        if (!subscribers.delete(run) || subscribers.size > 0) return;
        stop?.();
        stop = undefined;
      };
    },
  };
}
