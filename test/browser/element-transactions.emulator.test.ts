// @vitest-environment happy-dom
// <blackbox-capture post-url> against the server kit's endpoint and the emulated service: one
// Device Risk transaction per page run and checkout, however often the element is mounted.
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { closeEndpoint, endpoint, SHOP } from '../support/page-endpoint.js';
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
  it('three mounts in one page run (remounts, a hot reload, StrictMode) make one transaction, under one key', async () => {
    const { emulator, posts } = await endpoint();
    const tag = await freshTag();
    for (let i = 0; i < 3; i++) expect((await mount(tag, '')).state).toBe('complete');
    await vi.waitFor(() => expect(emulator.inspect.requests('accountCreate')).toBe(1));
    await new Promise((r) => setTimeout(r, 100));
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
    expect(posts).toEqual([{ key: expect.any(String), checkout: null }]);
  });

  it('with consent="tcf:<id>" (a consent function of its own on every mount): three mounts, one transaction', async () => {
    const { emulator, posts } = await endpoint();
    const tag = await freshTag();
    // A CMP that has the user's choice stored: every listener hears it at once.
    (window as unknown as { __tcfapi: unknown }).__tcfapi = (
      command: string,
      _version: number,
      callback: (data: unknown, success: boolean) => void,
    ) =>
      command === 'addEventListener' &&
      callback(
        {
          gdprApplies: true,
          eventStatus: 'tcloaded',
          listenerId: 1,
          vendor: { consents: { 810: true } },
          purpose: { consents: { 1: true } },
        },
        true,
      );
    for (let i = 0; i < 3; i++) expect((await mount(tag, 'consent="tcf:810"')).state).toBe('complete');
    await vi.waitFor(() => expect(emulator.inspect.requests('accountCreate')).toBe(1));
    await new Promise((r) => setTimeout(r, 100));
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
    expect(posts).toEqual([{ key: expect.any(String), checkout: null }]);
  });

  it('checkout-id scopes it: the same checkout id never two; another id, in the same page run, is refused', async () => {
    const { emulator, posts } = await endpoint();
    const tag = await freshTag();
    const states: string[] = [];
    for (const id of ['cart-1', 'cart-1', 'cart-2', 'cart-1'])
      states.push((await mount(tag, `checkout-id="${id}"`)).state);
    // One collection per page run (docs/vendor-contract.md#one-collection-per-page-run): cart-2
    // brings cart-1's blackbox, which the endpoint refuses (422 blackbox_reused).
    expect(states).toEqual(['complete', 'complete', 'failed', 'complete']);
    await vi.waitFor(() => expect(emulator.inspect.requests('accountCreate')).toBe(1));
    await new Promise((r) => setTimeout(r, 100));
    expect(emulator.inspect.requests('accountCreate')).toBe(1);
    expect(posts.map((post) => post.checkout)).toEqual(['cart-1', 'cart-2']);
    expect(new Set(posts.map((post) => post.key)).size).toBe(2);
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
