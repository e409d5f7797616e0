// @vitest-environment happy-dom
// One blackbox per checkout (issue #54): the page run's blackbox is the first checkout id's,
// whatever copy of the package asks.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { thrownCode } from '../support/vendor-dom.js';

const OWNER = Symbol.for('blackbox-capture.checkout');
const RELOADED = Symbol.for('blackbox-capture.reloaded');
const MARK = 'blackbox-capture.reload';
/** A new page run: the window's marks gone (sessionStorage keeps what it holds), a fresh copy of the module. */
const newPageRun = () => {
  delete (window as unknown as Record<symbol, unknown>)[OWNER];
  delete (window as unknown as Record<symbol, unknown>)[RELOADED];
  vi.resetModules();
};
beforeEach(() => {
  vi.restoreAllMocks();
  newPageRun();
  sessionStorage.clear();
});

const claim = async () => (await import('../../src/browser/checkout.js')).claimCheckout;
const codeOf = (run: () => unknown) => thrownCode(run, 'claimed');

describe('claimCheckout', () => {
  it('the first checkout id owns the page run; the same id again keeps it; another is blackbox_used', async () => {
    const claimCheckout = await claim();
    expect(['cart-1', 'cart-1', 'cart-2', 'cart-1'].map((id) => codeOf(() => claimCheckout(id)))).toEqual([
      'claimed',
      'claimed',
      'blackbox_used',
      'claimed',
    ]);
  });

  it('every copy of the package sees the same owner: it is kept on the window', async () => {
    (await claim())('cart-1');
    vi.resetModules();
    const second = await claim();
    expect([codeOf(() => second('cart-1')), codeOf(() => second('cart-2'))]).toEqual(['claimed', 'blackbox_used']);
  });

  it('the error says whose blackbox it is and what to do', async () => {
    const claimCheckout = await claim();
    claimCheckout('order-7');
    let error: unknown;
    try {
      claimCheckout('order-8');
    } catch (thrown) {
      // This copy's errors.ts: it wrote down the facts the message is written from.
      error = await (await import('../../src/browser/errors.js')).explain(thrown);
    }
    expect(error).toMatchObject({ name: 'BlackboxCaptureError', code: 'blackbox_used' });
    expect((error as Error).message).toMatch(
      /^\[blackbox-capture\] This page run's blackbox went to checkout "order-7".*checkout "order-8".*data-turbo="false"/,
    );
  });
});

describe('claimCheckout with reload: another checkout loads fully, once', () => {
  const reloads = () => vi.spyOn(window.location, 'reload').mockImplementation(() => {});

  it('another checkout id reloads the page (false: run nothing), recording the reload for its URL', async () => {
    const reload = reloads();
    const claimCheckout = await claim();
    expect(claimCheckout('cart-1', true)).toBe(true);
    expect(reload).not.toHaveBeenCalled();
    expect(claimCheckout('cart-2', true)).toBe(false);
    // A task later, at the URL the router has moved to by then.
    expect(reload).not.toHaveBeenCalled();
    history.pushState(null, '', '/checkout/cart-2');
    await vi.waitFor(() => expect(reload).toHaveBeenCalledTimes(1));
    expect(sessionStorage.getItem(MARK)).toBe(`cart-2 ${location.href}`);
    expect(location.pathname).toBe('/checkout/cart-2');
  });

  /** cart-1 claimed, then cart-2 in the same page run: reloaded once; the claim of the reloaded page run. */
  async function reloadedForCart2() {
    const reload = reloads();
    (await claim())('cart-1', true);
    (await claim())('cart-2', true);
    await vi.waitFor(() => expect(reload).toHaveBeenCalledTimes(1));
    newPageRun();
    return { reload, claimCheckout: await claim() };
  }

  it('the reloaded page run claims for that checkout and takes the mark; a later checkout reloads again', async () => {
    const { reload, claimCheckout } = await reloadedForCart2();
    expect(claimCheckout('cart-2', true)).toBe(true);
    expect(sessionStorage.getItem(MARK)).toBeNull();
    expect(claimCheckout('cart-3', true)).toBe(false);
    await vi.waitFor(() => expect(reload).toHaveBeenCalledTimes(2));
  });

  it('no loop: where the reloaded page run refuses the same checkout again (two checkouts in one page), blackbox_used', async () => {
    const { reload, claimCheckout } = await reloadedForCart2();
    expect(claimCheckout('cart-1', true)).toBe(true);
    expect(codeOf(() => claimCheckout('cart-2', true))).toBe('blackbox_used');
    expect(reload).toHaveBeenCalledTimes(1);
    // Another checkout than the one reloaded for still reloads.
    expect(claimCheckout('cart-3', true)).toBe(false);
    await vi.waitFor(() => expect(reload).toHaveBeenCalledTimes(2));
  });

  it("a mark left for another URL is not this page run's: it reloads", async () => {
    const reload = reloads();
    sessionStorage.setItem(MARK, 'cart-2 https://shop.example/elsewhere');
    const claimCheckout = await claim();
    claimCheckout('cart-1', true);
    expect(claimCheckout('cart-2', true)).toBe(false);
    await vi.waitFor(() => expect(reload).toHaveBeenCalledTimes(1));
  });

  it('without sessionStorage to guard the loop with, blackbox_used and no reload', async () => {
    const reload = reloads();
    // As a browser with storage blocked has it: reading window.sessionStorage throws.
    vi.spyOn(window, 'sessionStorage', 'get').mockImplementation(() => {
      throw new DOMException('blocked', 'SecurityError');
    });
    const claimCheckout = await claim();
    claimCheckout('cart-1', true);
    expect(codeOf(() => claimCheckout('cart-2', true))).toBe('blackbox_used');
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(reload).not.toHaveBeenCalled();
  });
});

describe('reloadOption', () => {
  it('true unless false; "false" in an attribute is false; anything else invalid_option', async () => {
    const { reloadOption } = await import('../../src/browser/checkout.js');
    expect([undefined, null, true, 'true', '', false, 'false'].map((value) => reloadOption(value))).toEqual([
      true,
      true,
      true,
      true,
      true,
      false,
      false,
    ]);
    expect(codeOf(() => reloadOption('no'))).toBe('invalid_option');
    expect(codeOf(() => reloadOption(0))).toBe('invalid_option');
  });
});
