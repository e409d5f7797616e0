// @vitest-environment happy-dom
// blackboxStore (src/browser/svelte.ts) on a stand-in for the shared part (binding.ts): the
// store contract Svelte's `$store` relies on, a capture started by the first subscriber and
// stopped with the last, nothing started on a server. The real capture, in a SvelteKit app,
// runs in test/package/sveltekit.test.ts.
import type { BlackboxState } from '../../src/browser/binding.js';
import { afterEach, describe, expect, it, vi } from 'vitest';

vi.mock('../../src/browser/binding.js', async (original) => ({
  ...(await original<typeof import('../../src/browser/binding.js')>()),
  watchCapture: (await import('../support/binding-stand-in.js')).watchCapture,
}));
const { watches } = await import('../support/binding-stand-in.js');
const { blackboxStore } = await import('../../src/browser/svelte.js');
const { INITIAL } = await import('../../src/browser/binding.js');

afterEach(() => {
  watches.length = 0;
  vi.unstubAllGlobals();
});

describe('blackboxStore', () => {
  it('the first subscriber starts the capture; every subscriber hears each change; the last one leaving stops it', () => {
    const store = blackboxStore({ loaderUrl: '/l.js', post: '/risk' });
    expect(watches).toEqual([]);
    const first: BlackboxState[] = [];
    const second: BlackboxState[] = [];
    const leaveFirst = store.subscribe((state) => first.push(state));
    expect(first).toEqual([INITIAL]);
    expect(watches.map((w) => w.options)).toEqual([{ loaderUrl: '/l.js', post: '/risk' }]);
    watches[0]!.change({ blackbox: 'bb-1', complete: false });
    const leaveSecond = store.subscribe((state) => second.push(state));
    expect(watches).toHaveLength(1);
    expect(second).toEqual([{ ...INITIAL, blackbox: 'bb-1' }]);
    watches[0]!.change({ blackbox: 'bb-2', complete: true });
    expect(first.at(-1)).toEqual({ ...INITIAL, blackbox: 'bb-2', complete: true });
    expect(second.at(-1)).toEqual({ ...INITIAL, blackbox: 'bb-2', complete: true });
    leaveFirst();
    expect(watches[0]!.stopped).toBe(false);
    leaveFirst(); // twice: still one subscriber left
    expect(watches[0]!.stopped).toBe(false);
    leaveSecond();
    expect(watches[0]!.stopped).toBe(true);
  });

  it('subscribed again after the last left: heard again, from where it was', () => {
    const store = blackboxStore({ loaderUrl: '/l.js' });
    store.subscribe(() => {})();
    const states: BlackboxState[] = [];
    store.subscribe((state) => states.push(state));
    expect(watches.map((w) => w.stopped)).toEqual([true, false]);
    watches[1]!.change({ blackbox: 'bb' });
    expect(states.at(-1)).toEqual({ ...INITIAL, blackbox: 'bb' });
  });

  it('ready: the blackbox once the capture the first subscriber started has ended; one per store', async () => {
    const store = blackboxStore({ loaderUrl: '/l.js', post: '/risk' });
    let settled: string | undefined;
    void store.ready.then((blackbox) => (settled = blackbox));
    const states: BlackboxState[] = [];
    store.subscribe((state) => states.push(state))();
    store.subscribe((state) => states.push(state));
    watches[1]!.change({ blackbox: 'bb-1', complete: true });
    await Promise.resolve();
    expect(settled).toBeUndefined();
    watches[1]!.ended('bb-1');
    expect(await store.ready).toBe('bb-1');
    expect(states.at(-1)).toEqual({ ...INITIAL, blackbox: 'bb-1', complete: true });
    watches[0]!.ended('late'); // the same capture heard again: the first value stays
    expect(await store.ready).toBe('bb-1');
  });

  it('on a server (no document): the initial state, nothing started', () => {
    vi.stubGlobal('document', undefined);
    const states: BlackboxState[] = [];
    const leave = blackboxStore({ loaderUrl: '/l.js' }).subscribe((state) => states.push(state));
    leave();
    expect([states, watches]).toEqual([[INITIAL], []]);
  });
});
