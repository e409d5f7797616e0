/**
 * `blackbox-capture/react-jsx`: `<blackbox-capture>` in React 19's JSX types (its
 * `React.JSX` namespace). Types only: its module is empty, so `import type {} from
 * 'blackbox-capture/react-jsx'` once in the app is enough. An entry of its own, so that a page
 * without React never needs @types/react. React 19 passes these props to the element as
 * attributes, and `on<event>` props as listeners of `<event>` (`onblackbox` hears `blackbox`).
 */
import type { Key, Ref } from 'react';
import type { BlackboxCaptureAttributes, BlackboxCaptureElement } from './element.js';

/** The tag's props in JSX: its attributes, and what React adds to every element. */
export interface BlackboxCaptureProps extends BlackboxCaptureAttributes {
  key?: Key | null;
  ref?: Ref<BlackboxCaptureElement>;
  className?: string;
}

declare module 'react' {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- React 19 reads its JSX types from this namespace
  namespace JSX {
    interface IntrinsicElements {
      'blackbox-capture': BlackboxCaptureProps;
    }
  }
}
