/**
 * `blackbox-capture/vue`: for Vue 3 (docs/frameworks.md#vue-3).
 * - `useBlackbox(options)`: the capture without a form. Nothing runs during setup, so a
 *   server (Nuxt) renders the initial state and hydration matches it; the capture starts once
 *   the component is mounted and a component that unmounts stops hearing of it. Options given
 *   as a ref or a getter start a new capture when they change (a new `checkoutId`); functions
 *   in them do not.
 * - `<BlackboxCapture>`: the form element as a Vue component, for `v-model` where Vue's
 *   server compiler refuses it on a custom element (Nuxt): it renders `<blackbox-capture>`
 *   with the attributes given and loads `blackbox-capture/element` once mounted.
 */
import {
  type DefineComponent,
  defineComponent,
  h,
  onBeforeUnmount,
  onMounted,
  shallowRef,
  toValue,
  watch,
  type MaybeRefOrGetter,
  type ShallowRef,
} from 'vue';
import {
  INITIAL,
  keyOf,
  ready,
  watchCapture,
  type BlackboxBindingOptions,
  type BlackboxState,
  type Ready,
} from './binding.js';
import type { BlackboxCaptureAttributes } from './element-attributes.js';

/** `loader-url` → `loaderUrl`. */
type Camel<Name extends string> = Name extends `${infer Head}-${infer Tail}`
  ? `${Head}${Capitalize<Camel<Tail>>}`
  : Name;

/**
 * The element's attributes and events as Vue's templates write them (`@blackbox`, `v-model`),
 * camel-cased: vue-tsc checks a template's `loader-url="…"` as the prop `loaderUrl`
 * (test/package/template-types.test.ts).
 */
export type BlackboxCaptureProps = {
  // Over keyof itself (a homomorphic map), so that optional attributes stay optional.
  [
    Name in keyof BlackboxCaptureAttributes as Name extends `on${string}` ? never : Camel<Name>
  ]: BlackboxCaptureAttributes[Name];
} & {
  modelValue?: string;
  onBlackbox?: BlackboxCaptureAttributes['onblackbox'];
  onBlackboxoutcome?: BlackboxCaptureAttributes['onblackboxoutcome'];
  onBlackboxerror?: BlackboxCaptureAttributes['onblackboxerror'];
};

// The tag in Vue's templates, for vue-tsc: here, not in the element's entry, whose types must
// not need Vue's (docs/frameworks.md#vue-3).
declare module 'vue' {
  interface GlobalComponents {
    'blackbox-capture': DefineComponent<BlackboxCaptureProps>;
  }
}

export type { BlackboxState } from './binding.js';
export type BlackboxComposableOptions = BlackboxBindingOptions;

/**
 * The composable's state as a ref, and `ready`: the blackbox once the capture has ended (and,
 * with `post`, been delivered), what a submit handler awaits (`await capture.ready`); the
 * same promise until the options start a new capture. On a server it never settles.
 */
export type BlackboxComposable = Readonly<ShallowRef<BlackboxState>> & { readonly ready: Promise<string> };

export function useBlackbox(options: MaybeRefOrGetter<BlackboxComposableOptions>): BlackboxComposable {
  const state = shallowRef<BlackboxState>(INITIAL);
  let stop: (() => void) | undefined;
  // Made at setup, so that a handler can hold it before mount; the first capture settles it.
  let ended: Ready | undefined = ready();
  let current = ended.promise;
  const start = () => {
    stop?.();
    state.value = INITIAL;
    const now = ended ?? ready();
    ended = undefined;
    current = now.promise;
    stop = watchCapture(toValue(options), (update) => (state.value = { ...state.value, ...update }), now.settle);
  };
  onMounted(start);
  // Not on a server (Vue runs no watcher there); Vue stops it with the component.
  watch(() => keyOf(toValue(options)), start);
  onBeforeUnmount(() => {
    // Stryker disable next-line OptionalChaining: only a component unmounted before it mounted (a Suspense given up) has none
    stop?.();
  });
  return Object.defineProperty(state, 'ready', { get: () => current }) as BlackboxComposable;
}

/**
 * `<BlackboxCapture v-model="blackbox" name="blackbox" loader-url="…">`: `v-model` reads the
 * blackbox as it grows (the element's `input` events); the attributes are the element's.
 */
export const BlackboxCapture = defineComponent({
  // Stryker disable next-line StringLiteral: the name shows only in Vue's devtools and warnings
  name: 'BlackboxCapture',
  // A prop, so that v-model's value is not written on the element as an attribute.
  props: { modelValue: String },
  // Stryker disable next-line all: the declaration types the event for templates; Vue calls a v-model's listener either way
  emits: { 'update:modelValue': (value: string) => typeof value === 'string' },
  setup(_props, { emit }) {
    // The element's own entry, loaded in the browser only: the tag upgrades when it arrives.
    onMounted(() => import('./element.js'));
    return () =>
      h('blackbox-capture', {
        onInput: (event: Event) => emit('update:modelValue', (event.target as HTMLInputElement).value),
      });
  },
});
