// @vitest-environment happy-dom
// The declarative start of the UMD file: data attributes only, events on document.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { decodeBlackbox } from '../../src/emulator/scripts/routes.js';
import { scriptedGlobalFetch } from '../support/scripted-fetch.js';
import { freshPage, LOADER_URL, requests, settings } from '../support/vendor-dom.js';

let start: typeof import('../../src/browser/declarative.js').startFromScriptTag;
beforeEach(async () => {
  await freshPage();
  start = (await import('../../src/browser/declarative.js')).startFromScriptTag;
});

function tag(attributes: Record<string, string>): HTMLScriptElement {
  const script = document.createElement('script');
  for (const [name, value] of Object.entries(attributes)) script.setAttribute(name, value);
  return script;
}

function nextEvent(type: string): Promise<CustomEvent> {
  return new Promise((resolve) => document.addEventListener(type, (e) => resolve(e as CustomEvent), { once: true }));
}

describe('declarative start', () => {
  it('does nothing without data-loader-url: nothing injected, nothing written', () => {
    expect(start(tag({ 'data-field': 'x' }))).toBeUndefined();
    expect(start(null)).toBeUndefined();
    expect(document.querySelectorAll('script')).toHaveLength(0);
    expect((window as unknown as Record<string, unknown>).IGLOO).toBeUndefined();
    expect(requests).toHaveLength(0);
  });

  it('starts from data attributes and dispatches a blackbox event; the field fills', async () => {
    document.body.innerHTML = '<input id="bb">';
    const event = nextEvent('blackbox');
    void start(
      tag({
        'data-loader-url': LOADER_URL,
        'data-global-name': 'CUSTOM_TAG',
        'data-uri-hook': '/iojs',
        'data-version': 'early5',
        'data-subkey': 'K',
        'data-field': 'bb',
        'data-timeout-ms': '5000',
        nonce: 'tag-nonce',
      }),
    );
    const { detail } = await event;
    expect(decodeBlackbox(detail)?.sources).toHaveLength(3);
    expect((document.getElementById('bb') as HTMLInputElement).value).toBe(detail);
    expect((window as any).CUSTOM_TAG.loader).toMatchObject({ version: 'early5', subkey: 'K' });
    const loader = document.querySelector<HTMLScriptElement>(`script[src="${LOADER_URL}"]`)!;
    expect(loader.nonce || loader.getAttribute('nonce')).toBe('tag-nonce');
  });

  it('data-inject="false" waits for the page\'s own loader tag', async () => {
    const event = nextEvent('blackbox');
    void start(tag({ 'data-loader-url': LOADER_URL, 'data-inject': 'false' }));
    expect(document.querySelector('script[src]')).toBeNull();
    const own = document.createElement('script');
    own.src = LOADER_URL;
    document.head.append(own);
    expect(decodeBlackbox((await event).detail)?.sources).toHaveLength(3);
  });

  it('posts to data-post-url', async () => {
    const { seen, restore } = scriptedGlobalFetch([200]);
    try {
      const event = nextEvent('blackbox');
      void start(tag({ 'data-loader-url': LOADER_URL, 'data-post-url': '/device-risk' }));
      await event;
      expect(seen.map((call) => call.url)).toEqual(['/device-risk']);
    } finally {
      restore();
    }
  });

  it.each(['abc', '', '-1'])('reports data-timeout-ms="%s" as invalid_option through blackboxerror', async (value) => {
    const event = nextEvent('blackboxerror');
    start(tag({ 'data-loader-url': LOADER_URL, 'data-timeout-ms': value }))!.catch(() => {});
    const { detail } = await event;
    expect(detail).toMatchObject({ code: 'invalid_option', name: 'BlackboxCaptureError' });
    expect(detail.message).toMatch(/timeoutMs/);
  });

  it('starts at once when its field is not parsed yet, and fills the field once it exists', async () => {
    const readyState = vi.spyOn(document, 'readyState', 'get').mockReturnValue('loading');
    settings.delays = { fp_static: [30], fp_dyn: [60], tp: [60] };
    const event = nextEvent('blackbox');
    void start(tag({ 'data-loader-url': LOADER_URL, 'data-field': 'late' }));
    readyState.mockRestore();
    expect(document.querySelector(`script[src="${LOADER_URL}"]`)).not.toBeNull(); // the loader did not wait
    document.body.innerHTML = '<input id="late">';
    const { detail } = await event;
    expect((document.getElementById('late') as HTMLInputElement).value).toBe(detail);
  });

  describe('data-checkout-id: one checkout per page run (docs/browser.md#one-blackbox-per-checkout)', () => {
    const reloads = () => vi.spyOn(window.location, 'reload').mockImplementation(() => {});

    it('the first checkout captures; a tag of another checkout in the page run reloads the page, silent, nothing injected', async () => {
      const reload = reloads();
      try {
        const first = nextEvent('blackbox');
        void start(tag({ 'data-loader-url': LOADER_URL, 'data-checkout-id': 'cart-1' }));
        expect(decodeBlackbox((await first).detail)?.sources).toHaveLength(3);
        const loaders = document.querySelectorAll('script[src]').length;
        const heard: string[] = [];
        for (const type of ['blackbox', 'blackboxerror']) document.addEventListener(type, () => heard.push(type));
        void start(tag({ 'data-loader-url': LOADER_URL, 'data-checkout-id': 'cart-2' }));
        await vi.waitFor(() => expect(reload).toHaveBeenCalledTimes(1));
        await new Promise((r) => setTimeout(r, 50));
        expect([heard, document.querySelectorAll('script[src]').length]).toEqual([[], loaders]);
        expect(sessionStorage.getItem('blackbox-capture.reload')).toBe(`cart-2 ${location.href}`);
      } finally {
        reload.mockRestore();
      }
    });

    it('data-post-url with data-checkout-id: the POST names its checkout in a checkout-id header', async () => {
      const heard: Array<string | null> = [];
      const original = globalThis.fetch;
      globalThis.fetch = (async (_url: string, init: RequestInit) => {
        heard.push(new Headers(init.headers).get('checkout-id'));
        return new Response(null, { status: 200 });
      }) as never;
      try {
        await start(
          tag({ 'data-loader-url': LOADER_URL, 'data-post-url': '/device-risk', 'data-checkout-id': 'cart-9' }),
        );
        expect(heard).toEqual(['cart-9']);
      } finally {
        globalThis.fetch = original;
      }
    });

    it('with data-reload="false", another checkout is blackbox_used through blackboxerror, with what to do', async () => {
      const reload = reloads();
      try {
        await start(tag({ 'data-loader-url': LOADER_URL, 'data-checkout-id': 'cart-1', 'data-reload': 'false' }));
        const event = nextEvent('blackboxerror');
        start(tag({ 'data-loader-url': LOADER_URL, 'data-checkout-id': 'cart-2', 'data-reload': 'false' }))!.catch(
          () => {},
        );
        const { detail } = await event;
        expect(detail).toMatchObject({ code: 'blackbox_used', name: 'BlackboxCaptureError' });
        expect(detail.message).toMatch(/went to checkout "cart-1".*checkout "cart-2".*load that checkout page fully/);
        expect(reload).not.toHaveBeenCalled();
      } finally {
        reload.mockRestore();
      }
    });

    it.each(['', 'true'])('data-reload="%s" reloads, as without it', async (value) => {
      const reload = reloads();
      try {
        await start(tag({ 'data-loader-url': LOADER_URL, 'data-checkout-id': 'cart-1' }));
        void start(tag({ 'data-loader-url': LOADER_URL, 'data-checkout-id': 'cart-2', 'data-reload': value }));
        await vi.waitFor(() => expect(reload).toHaveBeenCalledTimes(1));
      } finally {
        reload.mockRestore();
      }
    });

    it('data-reload="maybe" is invalid_option through blackboxerror, before any claim', async () => {
      const event = nextEvent('blackboxerror');
      start(tag({ 'data-loader-url': LOADER_URL, 'data-checkout-id': 'cart-1', 'data-reload': 'maybe' }))!.catch(
        () => {},
      );
      const { detail } = await event;
      expect(detail).toMatchObject({ code: 'invalid_option' });
      expect(detail.message).toMatch(/"data-reload": expected true or false, received "maybe"/);
      expect(document.querySelectorAll('script[src]')).toHaveLength(0);
    });
  });

  describe('the development build: a tag in <head> that Turbo keeps (docs/browser.md#one-blackbox-per-checkout)', () => {
    const headTag = (attributes: Record<string, string>) => {
      const script = tag(attributes);
      document.head.append(script);
      return script;
    };

    it('a page Turbo renders after the capture ended, its field empty: a warning that says what to do', async () => {
      const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
      try {
        document.body.innerHTML = '<input id="bb">';
        const started = start(headTag({ 'data-loader-url': LOADER_URL, 'data-field': 'bb' }))!;
        document.dispatchEvent(new Event('turbo:load')); // checkout A rendered, still collecting
        await started;
        document.dispatchEvent(new Event('turbo:load')); // A again: its field has the blackbox
        expect(warn.mock.calls.filter(([text]) => /stays empty/.test(String(text)))).toEqual([]);
        document.body.innerHTML = '<input id="bb">'; // checkout B, whose tag Turbo did not run
        document.dispatchEvent(new Event('turbo:load'));
        expect(warn.mock.calls.filter(([text]) => /stays empty/.test(String(text)))).toEqual([
          [expect.stringMatching(/field #bb of this page stays empty.*data-checkout-id/)],
        ]);
      } finally {
        warn.mockRestore();
      }
    });

    it('no warning for a tag with data-checkout-id (each checkout its own tag), nor for one in <body>', async () => {
      const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
      const reload = vi.spyOn(window.location, 'reload').mockImplementation(() => {});
      try {
        document.body.innerHTML = '<input id="bb">';
        await start(headTag({ 'data-loader-url': LOADER_URL, 'data-field': 'bb', 'data-checkout-id': 'cart-1' }));
        const inBody = tag({ 'data-loader-url': LOADER_URL, 'data-field': 'bb' });
        document.body.append(inBody);
        await start(inBody);
        document.body.innerHTML = '<input id="bb">';
        document.dispatchEvent(new Event('turbo:load'));
        expect(warn.mock.calls.filter(([text]) => /stays empty/.test(String(text)))).toEqual([]);
      } finally {
        warn.mockRestore();
        reload.mockRestore();
      }
    });
  });
});
