// @vitest-environment happy-dom
// The part the Vue composable and the Svelte store share (src/browser/binding.ts), on a
// stand-in for the capture: which calls it makes, what it tells, and that a stopped mount
// hears nothing more. The real capture runs in test/package/vue.test.ts and dist-sveltekit.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { CaptureOptions } from '../../src/browser/index.js';

interface Call {
  options: CaptureOptions;
  resolve(value: string): void;
  reject(error: unknown): void;
}
let calls: Call[] = [];
vi.mock('../../src/browser/index.js', () => ({
  captureBlackbox: (options: CaptureOptions) =>
    new Promise<string>((resolve, reject) => calls.push({ options, resolve, reject })),
}));
const { INITIAL, keyOf, watchCapture } = await import('../../src/browser/binding.js');

afterEach(() => {
  calls = [];
});

const outcome = { outcome: 'complete' as const, scripts: [], durationMs: 5 };
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('watchCapture', () => {
  it('without post: one call; its updates, its outcome, then complete', async () => {
    const changes: unknown[] = [];
    const onUpdate = vi.fn();
    const onOutcome = vi.fn();
    watchCapture({ loaderUrl: '/l.js', onUpdate, onOutcome }, (change) => changes.push(change));
    expect(calls).toHaveLength(1);
    calls[0]!.options.onUpdate!('bb-1', false);
    calls[0]!.options.onOutcome!(outcome);
    calls[0]!.resolve('bb-2');
    await settle();
    expect(changes).toEqual([
      { blackbox: 'bb-1', complete: false },
      { outcome },
      { blackbox: 'bb-2', complete: true, error: undefined },
    ]);
    expect(onUpdate).toHaveBeenCalledWith('bb-1', false);
    expect(onOutcome).toHaveBeenCalledWith(outcome);
  });

  it("without the page's own handlers: its updates and outcome are told all the same", async () => {
    const changes: unknown[] = [];
    watchCapture({ loaderUrl: '/l.js' }, (change) => changes.push(change));
    calls[0]!.options.onUpdate!('bb-1', false);
    calls[0]!.options.onOutcome!(outcome);
    expect(changes).toEqual([{ blackbox: 'bb-1', complete: false }, { outcome }]);
  });

  it("a failed capture is the state's error", async () => {
    const changes: unknown[] = [];
    watchCapture({ loaderUrl: '/l.js' }, (change) => changes.push(change));
    const error = Object.assign(new Error('no'), { code: 'loader_failed' });
    calls[0]!.reject(error);
    await settle();
    expect(changes).toEqual([{ error }]);
  });

  it('stopped (an unmounted component): nothing more is told, to the state or the page', async () => {
    const changes: unknown[] = [];
    const onUpdate = vi.fn();
    const onOutcome = vi.fn();
    const stop = watchCapture({ loaderUrl: '/l.js', onUpdate, onOutcome }, (change) => changes.push(change));
    stop();
    calls[0]!.options.onUpdate!('bb-1', false);
    calls[0]!.options.onOutcome!(outcome);
    calls[0]!.resolve('bb-2');
    await settle();
    expect([changes, onUpdate.mock.calls, onOutcome.mock.calls]).toEqual([[], [], []]);
  });

  it('stopped before a failure: the failure is not told either', async () => {
    const changes: unknown[] = [];
    watchCapture({ loaderUrl: '/l.js' }, (change) => changes.push(change))();
    calls[0]!.reject(new Error('late'));
    await settle();
    expect(changes).toEqual([]);
  });

  it("with post: a delivery call that holds none of the mount's functions nor its field, then the mount's own", async () => {
    const field = document.createElement('input');
    const changes: unknown[] = [];
    watchCapture(
      { loaderUrl: '/l.js', post: '/risk', field, onUpdate() {}, onOutcome() {}, timeoutMs: 900 },
      (change) => changes.push(change),
    );
    expect(calls).toHaveLength(2);
    expect(calls[0]!.options).toEqual({ loaderUrl: '/l.js', post: '/risk', timeoutMs: 900 });
    expect(calls[1]!.options).toMatchObject({ loaderUrl: '/l.js', field, timeoutMs: 900 });
    expect(calls[1]!.options).not.toHaveProperty('post');
    // Complete only once the delivery is done.
    calls[1]!.resolve('bb');
    await settle();
    expect(changes).toEqual([]);
    calls[0]!.resolve('bb');
    await settle();
    expect(changes).toEqual([{ blackbox: 'bb', complete: true, error: undefined }]);
  });

  it('ended: the delivered blackbox after the state changed, a failure’s partial value, also once stopped', async () => {
    const told: string[] = [];
    let stateAtEnd: unknown[] = [];
    const changes: unknown[] = [];
    watchCapture(
      { loaderUrl: '/l.js', post: '/risk' },
      (change) => changes.push(change),
      (blackbox) => {
        told.push(blackbox);
        stateAtEnd = [...changes];
      },
    );
    calls[1]!.resolve('bb');
    await settle();
    expect(told).toEqual([]); // not before the delivery
    calls[0]!.resolve('bb');
    await settle();
    expect([told, stateAtEnd]).toEqual([['bb'], [{ blackbox: 'bb', complete: true, error: undefined }]]);
    const stop = watchCapture(
      { loaderUrl: '/l.js' },
      () => {},
      (blackbox) => told.push(blackbox),
    );
    stop();
    calls[2]!.reject(Object.assign(new Error('timeout'), { blackbox: 'partial' }));
    await settle();
    const none = watchCapture(
      { loaderUrl: '/l.js' },
      () => {},
      (blackbox) => told.push(blackbox),
    );
    void none;
    calls[3]!.reject(new Error('no value'));
    await settle();
    expect(told).toEqual(['bb', 'partial', '']);
  });

  it("a failed delivery is the state's error", async () => {
    const changes: unknown[] = [];
    watchCapture({ loaderUrl: '/l.js', post: '/risk' }, (change) => changes.push(change));
    const error = Object.assign(new Error('refused'), { code: 'post_failed' });
    calls[0]!.reject(error);
    calls[1]!.resolve('bb');
    await settle();
    expect(changes).toEqual([{ error }]);
  });

  it('checkoutId goes with the delivery as a checkout-id header, beside the headers of post', () => {
    watchCapture({ loaderUrl: '/l.js', post: '/risk', checkoutId: 'cart-1' }, () => {});
    // A new page run (a full load): its blackbox is nobody's yet (src/browser/checkout.ts).
    delete (window as unknown as Record<symbol, unknown>)[Symbol.for('blackbox-capture.checkout')];
    watchCapture(
      { loaderUrl: '/l.js', post: { url: '/risk', headers: { 'x-csrf': 't' } }, checkoutId: 'cart-2' },
      () => {},
    );
    expect(calls[0]!.options.post).toEqual({ url: '/risk', headers: { 'checkout-id': 'cart-1' } });
    expect(calls[2]!.options.post).toEqual({ url: '/risk', headers: { 'x-csrf': 't', 'checkout-id': 'cart-2' } });
    expect(calls[1]!.options).not.toHaveProperty('checkoutId');
  });

  it('reload is no option of the capture; another checkout reloads (nothing called, nothing told); reload "no" is invalid_option', async () => {
    delete (window as unknown as Record<symbol, unknown>)[Symbol.for('blackbox-capture.checkout')];
    const reload = vi.spyOn(window.location, 'reload').mockImplementation(() => {});
    try {
      watchCapture({ loaderUrl: '/l.js', checkoutId: 'cart-1', reload: true }, () => {});
      expect(calls.map((call) => call.options)).toEqual([expect.not.objectContaining({ reload: true })]);
      const changes: unknown[] = [];
      const ended = vi.fn();
      watchCapture({ loaderUrl: '/l.js', checkoutId: 'cart-2' }, (change) => changes.push(change), ended);
      await settle();
      expect([calls.length, reload.mock.calls.length, changes, ended.mock.calls]).toEqual([1, 1, [], []]);
      watchCapture({ loaderUrl: '/l.js', checkoutId: 'cart-1', reload: 'no' as never }, (change) =>
        changes.push(change),
      );
      await vi.waitFor(() =>
        expect(changes).toEqual([
          { error: expect.objectContaining({ code: 'invalid_option', message: expect.stringContaining('"reload"') }) },
        ]),
      );
      expect(calls).toHaveLength(1);
    } finally {
      reload.mockRestore();
      delete (window as unknown as Record<symbol, unknown>)[Symbol.for('blackbox-capture.checkout')];
      sessionStorage.clear();
    }
  });

  it('the initial state is frozen: no binding can change it for the others', () => {
    expect(INITIAL).toEqual({ blackbox: undefined, complete: false, outcome: undefined, error: undefined });
    expect(Object.isFrozen(INITIAL)).toBe(true);
  });
});

describe('keyOf', () => {
  it('functions and signals do not change it; data does; elements count by identity', () => {
    const one = document.createElement('input');
    const two = document.createElement('input');
    // A framework's own circular properties on a node (Vue's, React's) are not read.
    Object.assign(one, { __self: one });
    const key = keyOf({ loaderUrl: '/l.js', field: one, onUpdate() {}, signal: new AbortController().signal });
    expect(keyOf({ loaderUrl: '/l.js', field: one, onUpdate: () => 1 })).toBe(key);
    expect(keyOf({ loaderUrl: '/l.js', field: two })).not.toBe(key);
    expect(keyOf({ loaderUrl: '/l.js', field: one, checkoutId: 'c' })).not.toBe(key);
    expect(keyOf({ loaderUrl: '/l.js', post: { url: '/a', headers: { a: '1' } } })).not.toBe(
      keyOf({ loaderUrl: '/l.js', post: { url: '/a', headers: { a: '2' } } }),
    );
    expect(keyOf({ loaderUrl: '/l.js', vendor: Object.assign(Object.create(null), { tp: '1' }) })).toContain('"tp"');
    // A null in the options (a value not given) is data, not an object to look into.
    expect(keyOf({ loaderUrl: '/l.js', nonce: null as unknown as string })).toBe('{"loaderUrl":"/l.js","nonce":null}');
  });
});
