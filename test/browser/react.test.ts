// @vitest-environment happy-dom
// useBlackbox in a DOM, on the emulated vendor: React 19's client renderer. The hook's
// updates come from the loader's callbacks, outside anything act() could wrap, so the
// renders here are flushSync()'s and the tests wait for the states.
// Every engine runs it too, built with Vite, with both loaders (engines/react.test.ts).
import { createElement as h, StrictMode, useEffect } from 'react';
import { flushSync } from 'react-dom';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { decodeBlackbox } from '../../src/emulator/scripts/routes.js';
import type { CaptureOptions } from '../../src/browser/index.js';
import { freshPage, LOADER_URL, scriptsFor, settings } from '../support/vendor-dom.js';

type Hook = typeof import('../../src/browser/react.js').useBlackbox;
type State = ReturnType<Hook>;

let root: Root | undefined;
afterEach(() => {
  root?.unmount();
  root = undefined;
});

/** A fresh copy of the package and of the hook (one loader run per copy), and a root to render in. */
async function fresh(capture?: FakeCapture): Promise<Hook> {
  await freshPage();
  document.body.innerHTML = '<div id="app"></div>';
  root = createRoot(document.getElementById('app')!);
  if (capture) vi.doMock('../../src/browser/index.js', () => ({ captureBlackbox: capture.call }));
  return (await import('../../src/browser/react.js').finally(() => vi.doUnmock('../../src/browser/index.js')))
    .useBlackbox;
}

/** A stand-in for the capture: records each call's options; the test settles each call. */
interface FakeCapture {
  calls: Array<{ options: CaptureOptions; resolve(value: string): void }>;
  call(options: CaptureOptions): Promise<string>;
}
function fakeCapture(): FakeCapture {
  const calls: FakeCapture['calls'] = [];
  return { calls, call: (options) => new Promise((resolve) => calls.push({ options, resolve })) };
}

/** Renders a component that records every state the hook returns; `again()` renders it once more (new options). */
function render(useBlackbox: Hook, options: () => CaptureOptions, strict = false) {
  const states: State[] = [];
  function Checkout(_: { render: number }) {
    const state = useBlackbox(options());
    useEffect(() => void states.push(state));
    return h('input', { name: 'blackbox', value: state.blackbox ?? '', readOnly: true });
  }
  let count = 0;
  const again = () =>
    flushSync(() =>
      root!.render(strict ? h(StrictMode, null, h(Checkout, { render: ++count })) : h(Checkout, { render: ++count })),
    );
  again();
  return Object.assign(states, { again });
}
const last = (states: State[]) => states[states.length - 1]!;
const until = (check: () => void) => vi.waitFor(check, { timeout: 5000 });

describe('useBlackbox', () => {
  it('in StrictMode: one loader, the final blackbox and its outcome, each update told to the page once', async () => {
    const useBlackbox = await fresh();
    const updates: string[] = [];
    const outcomes: string[] = [];
    const states = render(
      useBlackbox,
      () => ({ loaderUrl: LOADER_URL, onUpdate: (bb) => updates.push(bb), onOutcome: (o) => outcomes.push(o.outcome) }),
      true,
    );
    expect(states[0]).toEqual({
      blackbox: undefined,
      complete: false,
      outcome: undefined,
      error: undefined,
      ready: expect.any(Promise),
    });
    await until(() => expect(last(states).complete).toBe(true));
    const { blackbox, outcome, error } = last(states);
    expect(decodeBlackbox(blackbox!)?.sources.sort()).toEqual(['fp_dyn', 'fp_static', 'tp']);
    expect(outcome).toMatchObject({ outcome: 'complete' });
    expect(error).toBeUndefined();
    expect(scriptsFor(LOADER_URL)).toHaveLength(1);
    expect(outcomes).toEqual(['complete']);
    expect(new Set(updates).size).toBe(updates.length); // StrictMode's first effect tells nothing
    expect(updates.at(-1)).toBe(blackbox);
    expect((document.querySelector('input[name=blackbox]') as HTMLInputElement).value).toBe(blackbox);
  });

  it('partial values arrive with complete false, then the final one', async () => {
    const useBlackbox = await fresh();
    settings.delays = { fp_static: [5], fp_dyn: [5], tp: [300] };
    const states = render(useBlackbox, () => ({ loaderUrl: LOADER_URL }));
    await until(() => expect(last(states).complete).toBe(true));
    const partial = states.find((s) => s.blackbox !== undefined && !s.complete);
    expect(partial?.blackbox).toMatch(/^0400/);
    expect(partial?.blackbox).not.toBe(last(states).blackbox);
  });

  it('ready: one promise per capture, awaited at a submit while collecting, resolves with the final blackbox', async () => {
    const useBlackbox = await fresh();
    settings.delays = { fp_static: [5], fp_dyn: [5], tp: [300] };
    const states = render(useBlackbox, () => ({ loaderUrl: LOADER_URL }), true);
    await until(() => expect(last(states).blackbox).toBeDefined());
    // The submit: the state it reads is partial, its ready is what the capture ends with.
    const atSubmit = last(states);
    expect(atSubmit.complete).toBe(false);
    const final = await atSubmit.ready;
    await until(() => expect(last(states).complete).toBe(true));
    expect(final).toBe(last(states).blackbox);
    expect(final).not.toBe(atSubmit.blackbox);
    expect(new Set(states.map((state) => state.ready)).size).toBe(1);
    states.again(); // a render with the same options: the same promise
    expect(last(states).ready).toBe(atSubmit.ready);
  });

  it('ready never rejects: a failed capture resolves it with what there was', async () => {
    const useBlackbox = await fresh();
    const states = render(useBlackbox, () => ({ loaderUrl: 'http://evil.example/loader.js' }));
    expect(await last(states).ready).toBe('');
    root!.unmount();
    const timedOut = await fresh();
    settings.delays = { fp_static: [5], fp_dyn: [5], tp: [5, 5000] };
    const partial = render(timedOut, () => ({ loaderUrl: LOADER_URL, timeoutMs: 300 }));
    const value = await last(partial).ready;
    expect(value).toMatch(/^0400/);
    await until(() => expect(last(partial).error).toMatchObject({ code: 'timeout', blackbox: value }));
  });

  it('new options: a new ready for the new capture', async () => {
    const useBlackbox = await fresh();
    let subkey = 'a';
    const states = render(useBlackbox, () => ({ loaderUrl: LOADER_URL, subkey }));
    const first = last(states).ready;
    subkey = 'b';
    states.again();
    expect(last(states).ready).not.toBe(first);
    await first; // the first capture ends too (its option_conflict or its value)
  });

  it('a component unmounted before completion hears nothing more: no state, no callback', async () => {
    const useBlackbox = await fresh();
    settings.delays = { fp_static: [5], fp_dyn: [5], tp: [300] };
    const told: string[] = [];
    const states = render(useBlackbox, () => ({
      loaderUrl: LOADER_URL,
      onUpdate: () => told.push('update'),
      onOutcome: () => told.push('outcome'),
    }));
    root!.unmount();
    root = undefined;
    const seen = states.length;
    await until(() =>
      expect(
        (window as unknown as { IGLOO?: { getBlackbox?: () => { finished?: boolean } } }).IGLOO?.getBlackbox?.()
          ?.finished,
      ).toBe(true),
    );
    await new Promise((r) => setTimeout(r, 50));
    expect(told).toEqual([]);
    expect(states).toHaveLength(seen);
  });

  it('a failed capture gives its typed error and no blackbox', async () => {
    const useBlackbox = await fresh();
    const states = render(useBlackbox, () => ({ loaderUrl: 'http://evil.example/loader.js' }));
    await until(() => expect(last(states).error).toBeDefined());
    expect(last(states)).toMatchObject({
      blackbox: undefined,
      complete: false,
      error: { name: 'BlackboxCaptureError', code: 'invalid_option' },
    });
  });

  it('new callbacks, signals and field elements on every render start nothing new; a changed option starts a capture', async () => {
    const useBlackbox = await fresh();
    const field = document.createElement('input');
    // What React leaves on a node it renders: properties that point back at themselves.
    const fiber: Record<string, unknown> = {};
    fiber.self = fiber;
    Object.assign(field, { __reactFiber$test: fiber });
    document.body.append(field);
    let timeoutMs = 5000;
    let fieldOf = () => field;
    const told: number[] = [];
    const states = render(useBlackbox, () => ({
      loaderUrl: LOADER_URL,
      field: fieldOf(),
      timeoutMs,
      signal: new AbortController().signal,
      onOutcome: () => told.push(timeoutMs),
    }));
    await until(() => expect(last(states).complete).toBe(true));
    expect(field.value).toBe(last(states).blackbox);
    for (let i = 0; i < 3; i++) states.again();
    await new Promise((r) => setTimeout(r, 50));
    expect(told).toEqual([5000]);
    // A changed timeoutMs: a new capture, which joins the page's finished run and is told its outcome.
    timeoutMs = 4000;
    states.again();
    await until(() => expect(told).toEqual([5000, 4000]));
    // Another field element: another capture, which fills it.
    const other = document.createElement('input');
    document.body.append(other);
    const first = field;
    fieldOf = () => other;
    states.again();
    await until(() => expect(told).toEqual([5000, 4000, 4000]));
    expect(other.value).toBe(first.value);
    expect(last(states)).toMatchObject({ complete: true, error: undefined });
  });
  it('with post, a second call delivers: a URL and checkoutId give the URL with a checkout-id header; none without post', async () => {
    let capture = fakeCapture();
    let useBlackbox = await fresh(capture);
    render(
      useBlackbox,
      () => ({ loaderUrl: LOADER_URL, post: '/device-risk', checkoutId: 'cart-1' }) as CaptureOptions,
    );
    await until(() => expect(capture.calls).toHaveLength(2));
    expect(capture.calls[0]!.options.post).toEqual({ url: '/device-risk', headers: { 'checkout-id': 'cart-1' } });
    expect(capture.calls[1]!.options.post).toBeUndefined();
    root!.unmount();
    capture = fakeCapture();
    useBlackbox = await fresh(capture);
    render(useBlackbox, () => ({ loaderUrl: LOADER_URL }));
    await until(() => expect(capture.calls).toHaveLength(1));
    expect(capture.calls).toHaveLength(1);
  });

  it("the capture's value completes the state even when no update told it", async () => {
    const capture = fakeCapture();
    const states = render(await fresh(capture), () => ({ loaderUrl: LOADER_URL }));
    await until(() => expect(capture.calls).toHaveLength(1));
    capture.calls[0]!.resolve('0400abc');
    await until(() => expect(last(states)).toEqual({ ...states[0], blackbox: '0400abc', complete: true }));
  });

  it('options with no prototype count as plain data: new on every render, they start nothing new', async () => {
    const capture = fakeCapture();
    const states = render(await fresh(capture), () => ({
      loaderUrl: LOADER_URL,
      vendor: Object.assign(Object.create(null) as Record<string, unknown>, { fp_dyn: true }),
    }));
    await until(() => expect(capture.calls).toHaveLength(1));
    for (let i = 0; i < 3; i++) states.again();
    capture.calls[0]!.resolve('0400abc');
    await until(() => expect(last(states).complete).toBe(true));
    expect(capture.calls).toHaveLength(1);
  });

  it("a null option is the capture's invalid_option, not a crash of the render", async () => {
    const useBlackbox = await fresh();
    const states = render(useBlackbox, () => ({ loaderUrl: LOADER_URL, nonce: null }) as unknown as CaptureOptions);
    await until(() => expect(last(states).error).toBeDefined());
    expect(last(states).error).toMatchObject({ code: 'invalid_option' });
  });
});
