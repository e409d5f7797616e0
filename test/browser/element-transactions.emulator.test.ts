// @vitest-environment happy-dom
// <blackbox-capture post-url> against the server kit's endpoint and the emulated service: one
// Device Risk transaction per page run and checkout, however often the element is mounted.
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { closeEndpoint, endpoint, expectOneTransaction, SHOP } from '../support/page-endpoint.js';
import { consents, stubCmp } from '../support/tcf-cmp.js';
import { freshPage, LOADER_URL } from '../support/vendor-dom.js';

beforeAll(() => {
  // happy-dom has no ElementInternals: a stand-in that takes the form value.
  (HTMLElement.prototype as unknown as { attachInternals(): unknown }).attachInternals = () => ({
    form: null,
    setFormValue() {},
  });
});

afterEach(closeEndpoint);

let defined = 0;
async function freshTag(): Promise<string> {
  await freshPage();
  const { defineBlackboxCapture } = await import('../../src/browser/element.js');
  const tag = `blackbox-capture-tx-${++defined}`;
  defineBlackboxCapture(tag);
  return tag;
}

type CaptureElement = HTMLElement & { state: string; ready: Promise<string> };
/** Mounts the element (as a framework's render does), waits for its capture to end, unmounts it. */
async function mount(tag: string, attributes: string): Promise<CaptureElement> {
  const host = document.createElement('div');
  host.innerHTML = `<${tag} loader-url="${LOADER_URL}" post-url="${SHOP}/device-risk" ${attributes}></${tag}>`;
  document.body.append(host);
  const element = host.firstElementChild as CaptureElement;
  await element.ready;
  host.remove();
  return element;
}

describe('<blackbox-capture post-url>: one transaction per checkout', () => {
  it.each([
    [
      'three mounts in one page run (remounts, a hot reload, StrictMode) make one transaction, under one key',
      '',
      () => {},
    ],
    [
      'with consent="tcf:<id>" (a consent function of its own on every mount): three mounts, one transaction',
      'consent="tcf:810"',
      // A CMP that has the user's choice stored: every listener hears it at once.
      () => stubCmp({ gdprApplies: true, eventStatus: 'tcloaded', ...consents({ 810: true }, { 1: true }) }),
    ],
  ])('%s', async (_, attributes, arrange) => {
    const { emulator, posts } = await endpoint();
    const tag = await freshTag();
    arrange();
    for (let i = 0; i < 3; i++) expect((await mount(tag, attributes)).state).toBe('complete');
    await expectOneTransaction(emulator);
    expect(posts).toEqual([{ key: expect.any(String), checkout: null }]);
  });

  it('checkout-id: another checkout in the page run reloads the page, once; nothing posted, no error', async () => {
    const { emulator, posts } = await endpoint();
    const tag = await freshTag();
    const reload = vi.spyOn(window.location, 'reload').mockImplementation(() => {});
    const errors: unknown[] = [];
    const listener = (event: Event) => errors.push((event as CustomEvent).detail);
    document.addEventListener('blackboxerror', listener);
    try {
      expect((await mount(tag, 'checkout-id="cart-1"')).state).toBe('complete');
      expect(reload).not.toHaveBeenCalled();
      const host = document.createElement('div');
      host.innerHTML = `<${tag} loader-url="${LOADER_URL}" post-url="${SHOP}/device-risk" checkout-id="cart-2"></${tag}>`;
      document.body.append(host);
      await vi.waitFor(() => expect(reload).toHaveBeenCalledTimes(1));
      expect(sessionStorage.getItem('blackbox-capture.reload')).toBe(`cart-2 ${location.href}`);
      // The page is going: the element stays collecting (test/browser/element.test.ts: its submits held).
      expect((host.firstElementChild as CaptureElement).state).toBe('collecting');
      host.remove();
    } finally {
      document.removeEventListener('blackboxerror', listener);
      reload.mockRestore();
    }
    expect(errors).toEqual([]);
    await expectOneTransaction(emulator);
    expect(posts.map((post) => post.checkout)).toEqual(['cart-1']);
  });

  it('checkout-id with reload="false": the same checkout keeps its one POST; another checkout is blackbox_used, never posted', async () => {
    const { emulator, posts } = await endpoint();
    const tag = await freshTag();
    const reload = vi.spyOn(window.location, 'reload').mockImplementation(() => {});
    const errors: Array<{ code: string; message: string }> = [];
    const listener = (event: Event) => errors.push((event as CustomEvent<{ code: string; message: string }>).detail);
    document.addEventListener('blackboxerror', listener);
    try {
      const states = [];
      for (const id of ['cart-1', 'cart-1', 'cart-2', 'cart-1'])
        states.push((await mount(tag, `checkout-id="${id}" reload="false"`)).state);
      expect(reload).not.toHaveBeenCalled();
      // The loader collects once per page run: cart-2 would get cart-1's blackbox (issue #54).
      expect(states).toEqual(['complete', 'complete', 'failed', 'complete']);
      expect(errors).toEqual([expect.objectContaining({ code: 'blackbox_used' })]);
      expect(errors[0]!.message).toMatch(
        /went to checkout "cart-1".*checkout "cart-2".*load that checkout page fully/i,
      );
    } finally {
      document.removeEventListener('blackboxerror', listener);
      reload.mockRestore();
    }
    await expectOneTransaction(emulator);
    expect(posts.map((post) => post.checkout)).toEqual(['cart-1']);
  });

  it('a delivery refused fails the element with post_failed; a later mount delivers again', async () => {
    const { emulator, posts } = await endpoint();
    const tag = await freshTag();
    const withService = globalThis.fetch;
    globalThis.fetch = (async (input: string, init?: RequestInit) =>
      String(input).startsWith(SHOP)
        ? new Response('{"error":"bad_request"}', { status: 400 })
        : withService(input, init)) as typeof fetch;
    const errors: Array<{ code: string }> = [];
    const listener = (event: Event) => errors.push((event as CustomEvent<{ code: string }>).detail);
    document.addEventListener('blackboxerror', listener);
    try {
      expect((await mount(tag, '')).state).toBe('failed');
      expect(errors).toEqual([expect.objectContaining({ code: 'post_failed' })]);
      globalThis.fetch = withService;
      expect((await mount(tag, '')).state).toBe('complete');
      await vi.waitFor(() => expect(emulator.inspect.requests('accountCreate')).toBe(1));
      expect(posts).toHaveLength(1);
    } finally {
      document.removeEventListener('blackboxerror', listener);
    }
  });
});
