// useBlackbox on a server: renderToString renders the initial state and starts nothing (no
// window, no document, no capture), so hydration in the browser finds the same markup.
import { createElement as h } from 'react';
import { renderToString } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { useBlackbox } from '../../src/browser/react.js';

describe('useBlackbox on a server', () => {
  it('renders the initial state and runs nothing', () => {
    let seen: unknown;
    function Checkout() {
      seen = useBlackbox({ loaderUrl: '/static/vendor/loader.js' });
      return h('input', { name: 'blackbox', value: (seen as { blackbox?: string }).blackbox ?? '', readOnly: true });
    }
    expect(typeof window).toBe('undefined');
    expect(renderToString(h(Checkout))).toMatch(/^<input [^>]*name="blackbox"[^>]*value=""\/>$/);
    expect(seen).toEqual({
      blackbox: undefined,
      complete: false,
      outcome: undefined,
      error: undefined,
      ready: expect.any(Promise),
    });
  });
});
