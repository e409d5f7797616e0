// @vitest-environment happy-dom
// injectBlackbox in an injection context, on the emulated vendor in a test DOM: an injector made
// by hand stands for a component's (its destroy() is the component's). The whole path, built by
// `ng build` and driven in Chromium, is test/package/angular.test.ts. Angular's own packages come
// here unlinked (partially compiled, as published): its JIT compiler links them on load, as in
// Angular's own unit tests; `ng build` links them ahead of time for the app.
import '@angular/compiler';
import { Injector, PLATFORM_ID, runInInjectionContext } from '@angular/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BlackboxOptions } from '../../src/browser/angular.js';
import { decodeBlackbox } from '../../src/emulator/scripts/routes.js';
import { freshPage, LOADER_URL, settings, w } from '../support/vendor-dom.js';

type Destroyable = Injector & { destroy(): void; destroyed: boolean };
const injectors: Destroyable[] = [];
afterEach(() => {
  for (const injector of injectors.splice(0)) if (!injector.destroyed) injector.destroy();
});

/** A fresh copy of the package; `mount` calls injectBlackbox in a new injector of the platform. */
async function fresh() {
  await freshPage();
  const { injectBlackbox } = await import('../../src/browser/angular.js');
  return (options: BlackboxOptions, platform = 'browser') => {
    const injector = Injector.create({ providers: [{ provide: PLATFORM_ID, useValue: platform }] }) as Destroyable;
    injectors.push(injector);
    return { capture: runInInjectionContext(injector, () => injectBlackbox(options)), injector };
  };
}
const until = (check: () => void) => vi.waitFor(check, { timeout: 5000 });

describe('injectBlackbox', () => {
  it('signals and the form control follow the capture; ready resolves with the final blackbox', async () => {
    const mount = await fresh();
    settings.delays = { fp_static: [5], fp_dyn: [5], tp: [5, 300] };
    const { capture } = mount({ loaderUrl: LOADER_URL });
    expect([capture.blackbox(), capture.complete(), capture.control.value]).toEqual([undefined, false, '']);
    await until(() => expect(capture.blackbox()).toBeDefined());
    expect(capture.complete()).toBe(false);
    expect(capture.control.value).toBe(capture.blackbox()); // partial, as it is
    const final = await capture.ready;
    // When ready resolves, what an (ngSubmit) handler reads is final already.
    expect([capture.blackbox(), capture.complete(), capture.control.value]).toEqual([final, true, final]);
    expect(decodeBlackbox(final)?.sources.sort()).toEqual(['fp_dyn', 'fp_static', 'tp']);
    expect(capture.outcome()).toMatchObject({ outcome: 'complete' });
    expect(capture.error()).toBeUndefined();
    capture.control.reset(); // a form's reset: back to '', never null
    expect(capture.control.value).toBe('');
  });

  it('on a server platform nothing runs: no config object, no loader', async () => {
    const mount = await fresh();
    const { capture } = mount({ loaderUrl: LOADER_URL }, 'server');
    const settled = await Promise.race([capture.ready, new Promise((r) => setTimeout(() => r('pending'), 300))]);
    expect(settled).toBe('pending');
    expect(w().IGLOO).toBeUndefined();
    expect(capture.blackbox()).toBeUndefined();
  });

  it('destroyed before completion: the signals hear nothing more, ready still resolves', async () => {
    const mount = await fresh();
    settings.delays = { fp_static: [5], fp_dyn: [5], tp: [5, 300] };
    const outcomes: string[] = [];
    const { capture, injector } = mount({ loaderUrl: LOADER_URL, onOutcome: (o) => outcomes.push(o.outcome) });
    await until(() => expect(capture.blackbox()).toBeDefined());
    const partial = capture.blackbox();
    injector.destroy();
    const final = await capture.ready;
    expect(final).not.toBe(partial);
    expect([capture.blackbox(), capture.complete(), capture.control.value]).toEqual([partial, false, partial]);
    expect(capture.outcome()).toBeUndefined();
    expect(outcomes).toEqual([]);
  });

  it("a failed capture: error() is the typed error, ready resolves with what there was ('')", async () => {
    const mount = await fresh();
    const { capture } = mount({ loaderUrl: 'http://evil.example/loader.js' });
    expect(await capture.ready).toBe('');
    expect(capture.error()).toMatchObject({ name: 'BlackboxCaptureError', code: 'invalid_option' });
    expect(capture.complete()).toBe(false);
  });

  it('with post, checkoutId and reload: false: components of one cart post once, another cart never (blackbox_used)', async () => {
    const mount = await fresh();
    const carts: Array<string | null> = [];
    const fetch = (async (_: string, init: RequestInit) => {
      carts.push(new Headers(init.headers).get('checkout-id'));
      return new Response('{}', { status: 200 });
    }) as unknown as typeof globalThis.fetch;
    const post = { url: '/device-risk', fetch };
    const codes: Array<string | undefined> = [];
    for (const cart of ['cart-1', 'cart-1', 'cart-2', 'cart-1']) {
      const { capture, injector } = mount({ loaderUrl: LOADER_URL, post, checkoutId: cart, reload: false });
      await capture.ready;
      codes.push((capture.error() as { code?: string } | undefined)?.code);
      injector.destroy();
    }
    expect(codes).toEqual([undefined, undefined, 'blackbox_used', undefined]);
    expect(carts).toEqual(['cart-1']);
  });
});
