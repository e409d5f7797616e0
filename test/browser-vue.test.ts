// @vitest-environment happy-dom
// useBlackbox for Vue 3 (src/browser/vue.ts) in a test DOM, on a stand-in for the shared part
// (binding.ts): nothing starts during setup or on a server, the capture starts once mounted,
// changed options start another, an unmounted component stops hearing. The real capture, built
// by Vite, runs in test/dist-vue.test.ts.
import { createApp, createSSRApp, defineComponent, h, nextTick, ref } from 'vue';
import { renderToString } from 'vue/server-renderer';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BlackboxBindingOptions, BlackboxState } from '../src/browser/binding.js';

interface Watch {
  options: BlackboxBindingOptions;
  change(update: Partial<BlackboxState>): void;
  stopped: boolean;
}
let watches: Watch[] = [];
vi.mock('../src/browser/binding.js', async (original) => ({
  ...(await original<typeof import('../src/browser/binding.js')>()),
  watchCapture(options: BlackboxBindingOptions, change: Watch['change']) {
    const watch: Watch = { options, change, stopped: false };
    watches.push(watch);
    return () => void (watch.stopped = true);
  },
}));
const { useBlackbox } = await import('../src/browser/vue.js');

afterEach(() => {
  watches = [];
  document.body.innerHTML = '';
});

/** A component that renders the composable's state as text. */
const Status = (options: Parameters<typeof useBlackbox>[0]) =>
  defineComponent({
    setup() {
      const capture = useBlackbox(options);
      return () =>
        h(
          'p',
          capture.value.complete ? `complete ${capture.value.blackbox}` : `waiting ${capture.value.blackbox ?? ''}`,
        );
    },
  });

function mount(component: ReturnType<typeof defineComponent>) {
  const root = document.createElement('div');
  document.body.append(root);
  const app = createApp(component);
  app.mount(root);
  return { root, app };
}

describe('useBlackbox (Vue)', () => {
  it('renders the initial state on a server and starts nothing there', async () => {
    const html = await renderToString(createSSRApp(Status({ loaderUrl: '/l.js' })));
    expect(html).toBe('<p>waiting </p>');
    expect(watches).toEqual([]);
  });

  it('starts once mounted; its updates render; unmounted, it stops hearing', async () => {
    const { root, app } = mount(Status({ loaderUrl: '/l.js', post: '/risk' }));
    expect(watches.map((w) => w.options)).toEqual([{ loaderUrl: '/l.js', post: '/risk' }]);
    watches[0]!.change({ blackbox: 'bb-1', complete: false });
    await nextTick();
    expect(root.textContent).toBe('waiting bb-1');
    watches[0]!.change({ blackbox: 'bb-2', complete: true });
    await nextTick();
    expect(root.textContent).toBe('complete bb-2');
    app.unmount();
    expect(watches[0]!.stopped).toBe(true);
  });

  it('options as a getter: a new checkoutId starts another capture from the initial state; a new function does not', async () => {
    const cart = ref('cart-1');
    const handler = ref(() => {});
    const { root } = mount(Status(() => ({ loaderUrl: '/l.js', checkoutId: cart.value, onUpdate: handler.value })));
    watches[0]!.change({ blackbox: 'bb-1', complete: true });
    await nextTick();
    handler.value = () => {};
    await nextTick();
    expect(watches).toHaveLength(1);
    cart.value = 'cart-2';
    await nextTick();
    expect(watches.map((w) => [w.options.checkoutId, w.stopped])).toEqual([
      ['cart-1', true],
      ['cart-2', false],
    ]);
    expect(root.textContent).toBe('waiting ');
  });

  it('unmounted: a change of options starts nothing', async () => {
    const cart = ref('cart-1');
    const { app } = mount(Status(() => ({ loaderUrl: '/l.js', checkoutId: cart.value })));
    app.unmount();
    cart.value = 'cart-2';
    await nextTick();
    expect(watches).toHaveLength(1);
  });
});
