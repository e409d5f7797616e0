// @vitest-environment happy-dom
// One blackbox per checkout (issue #54): the page run's blackbox is the first checkout id's,
// whatever copy of the package asks.
import { beforeEach, describe, expect, it, vi } from 'vitest';

const OWNER = Symbol.for('blackbox-capture.checkout');
beforeEach(() => {
  delete (window as unknown as Record<symbol, unknown>)[OWNER];
  vi.resetModules();
});

const claim = async () => (await import('../../src/browser/checkout.js')).claimCheckout;
const codeOf = (run: () => void) => {
  try {
    run();
    return 'claimed';
  } catch (error) {
    return (error as { code: string }).code;
  }
};

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
