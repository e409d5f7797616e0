/**
 * `blackbox-capture/vue`: `useBlackbox(options)` for Vue 3 (docs/frameworks.md#vue-3).
 * Nothing runs during setup, so a server (Nuxt) renders the initial state and hydration
 * matches it; the capture starts once the component is mounted and a component that
 * unmounts stops hearing of it. Options given as a ref or a getter start a new capture when
 * they change (a new `checkoutId`); functions in them do not.
 */
import { onBeforeUnmount, onMounted, shallowRef, toValue, watch, type MaybeRefOrGetter, type ShallowRef } from 'vue';
import { INITIAL, keyOf, watchCapture, type BlackboxBindingOptions, type BlackboxState } from './binding.js';

export type { BlackboxState } from './binding.js';
export type BlackboxComposableOptions = BlackboxBindingOptions;

export function useBlackbox(options: MaybeRefOrGetter<BlackboxComposableOptions>): Readonly<ShallowRef<BlackboxState>> {
  const state = shallowRef<BlackboxState>(INITIAL);
  let stop: (() => void) | undefined;
  let mounted = false;
  const start = () => {
    stop?.();
    state.value = INITIAL;
    stop = watchCapture(toValue(options), (update) => (state.value = { ...state.value, ...update }));
  };
  onMounted(() => {
    mounted = true;
    start();
  });
  watch(
    () => keyOf(toValue(options)),
    () => mounted && start(),
  );
  onBeforeUnmount(() => {
    mounted = false;
    stop?.();
  });
  return state;
}
