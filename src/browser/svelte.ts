/**
 * `blackbox-capture/svelte`: `blackboxStore(options)`, a Svelte store (`$store` in Svelte 5
 * and 4 components; docs/frameworks.md#svelte-5-and-sveltekit). It follows the store
 * contract alone, so nothing here imports Svelte. The capture starts with the first
 * subscriber in a browser and is no longer heard after the last one leaves; on a server
 * (SvelteKit's rendering) the store holds the initial state and starts nothing, so hydration
 * matches what the server rendered.
 */
import { INITIAL, watchCapture, type BlackboxBindingOptions, type BlackboxState } from './binding.js';

export type { BlackboxState } from './binding.js';
export type BlackboxStoreOptions = BlackboxBindingOptions;

/** Svelte's store contract (`svelte/store`'s `Readable`), written out so that no Svelte type is needed. */
export interface BlackboxStore {
  subscribe(run: (state: BlackboxState) => void): () => void;
}

export function blackboxStore(options: BlackboxStoreOptions): BlackboxStore {
  let state = INITIAL;
  const subscribers = new Set<(state: BlackboxState) => void>();
  let stop: (() => void) | undefined;
  return {
    subscribe(run) {
      subscribers.add(run);
      run(state);
      if (subscribers.size === 1 && typeof document !== 'undefined')
        stop = watchCapture(options, (update) => {
          state = { ...state, ...update };
          for (const subscriber of subscribers) subscriber(state);
        });
      return () => {
        if (!subscribers.delete(run) || subscribers.size > 0) return;
        stop?.();
        stop = undefined;
      };
    },
  };
}
