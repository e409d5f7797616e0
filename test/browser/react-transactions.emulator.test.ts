// @vitest-environment happy-dom
// useBlackbox with `post` against the server kit's endpoint and the emulated service: one
// Device Risk transaction per page run and checkout id, whatever StrictMode and remounts do.
import { createElement as h, StrictMode } from 'react';
import { flushSync } from 'react-dom';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BlackboxHookOptions, BlackboxState } from '../../src/browser/react.js';
import { closeEndpoint, endpoint, expectOneTransaction, SHOP } from '../support/page-endpoint.js';
import { freshPage, LOADER_URL } from '../support/vendor-dom.js';

let root: Root | undefined;
afterEach(async () => {
  root?.unmount();
  root = undefined;
  await closeEndpoint();
});

/** Renders a checkout in StrictMode with `options`; the returned list records the hook's states. */
async function checkout(options: () => BlackboxHookOptions) {
  await freshPage();
  const { useBlackbox } = await import('../../src/browser/react.js');
  document.body.innerHTML = '<div id="app"></div>';
  root = createRoot(document.getElementById('app')!);
  const states: BlackboxState[] = [];
  function Checkout() {
    states.push(useBlackbox(options()));
    return null;
  }
  const render = () => flushSync(() => root!.render(h(StrictMode, null, h(Checkout))));
  /** Unmounts and mounts the checkout again (a single-page app coming back to it). */
  const remount = () => {
    flushSync(() => root!.render(null));
    render();
  };
  render();
  return { states, remount, render };
}
const completed = (states: BlackboxState[]) =>
  vi.waitFor(() => expect(states[states.length - 1]!.complete).toBe(true), { timeout: 5000 });

describe('useBlackbox({ post }): one transaction per checkout', () => {
  it('StrictMode and two remounts in one page run: one transaction, under one key', async () => {
    const { emulator, posts } = await endpoint();
    const { states, remount } = await checkout(() => ({ loaderUrl: LOADER_URL, post: `${SHOP}/device-risk` }));
    await completed(states);
    remount();
    remount();
    await completed(states);
    // `complete` comes with the final value; the delivery follows it.
    await expectOneTransaction(emulator);
    expect(posts).toEqual([{ key: expect.any(String), checkout: null }]);
  });

  it('with consent (a new function on every render): StrictMode and two remounts, one transaction', async () => {
    const { emulator, posts } = await endpoint();
    const { states, remount } = await checkout(() => ({
      loaderUrl: LOADER_URL,
      post: `${SHOP}/device-risk`,
      consent: () => new Promise((resolve) => setTimeout(() => resolve(true), 10)),
    }));
    await completed(states);
    remount();
    remount();
    await expectOneTransaction(emulator);
    expect(posts).toEqual([{ key: expect.any(String), checkout: null }]);
  });

  it('checkoutId: another cart in the page run reloads the page, once; never posted, no error', async () => {
    const { emulator, posts } = await endpoint();
    const reload = vi.spyOn(window.location, 'reload').mockImplementation(() => {});
    let cart = 'cart-1';
    const { states, render } = await checkout(() => ({
      loaderUrl: LOADER_URL,
      post: { url: `${SHOP}/device-risk` },
      checkoutId: cart,
    }));
    await completed(states);
    expect(reload).not.toHaveBeenCalled();
    cart = 'cart-2';
    render();
    await vi.waitFor(() => expect(reload).toHaveBeenCalled());
    await new Promise((r) => setTimeout(r, 200));
    reload.mockRestore();
    expect(states.map((state) => state.error)).not.toContainEqual(expect.anything());
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
    expect(posts.map((post) => post.checkout)).toEqual(['cart-1']);
  });

  it('checkoutId with reload: false: the same cart never two transactions; another cart is blackbox_used, never posted', async () => {
    const { emulator, posts } = await endpoint();
    let cart = 'cart-1';
    const { states, render, remount } = await checkout(() => ({
      loaderUrl: LOADER_URL,
      post: { url: `${SHOP}/device-risk` },
      checkoutId: cart,
      reload: false,
    }));
    await completed(states);
    remount();
    cart = 'cart-2';
    render();
    // The loader collects once per page run: cart-2 would get cart-1's blackbox (issue #54).
    await vi.waitFor(() => expect((states[states.length - 1]!.error as { code?: string })?.code).toBe('blackbox_used'));
    cart = 'cart-1';
    render();
    await expectOneTransaction(emulator);
    expect(posts.map((post) => post.checkout)).toEqual(['cart-1']);
    expect(states[states.length - 1]!.error).toBeUndefined();
  });
});
