// @vitest-environment happy-dom
// useBlackbox for Vue 3 (src/browser/vue.ts) in a test DOM, on a stand-in for the shared part
// (binding.ts): nothing starts during setup or on a server, the capture starts once mounted,
// changed options start another, an unmounted component stops hearing. The real capture, built
// by Vite, runs in test/package/vue.test.ts.
import { createApp, createSSRApp, defineComponent, h, nextTick, ref } from 'vue';
import { renderToString } from 'vue/server-renderer';
import { afterEach, describe, expect, it, vi } from 'vitest';

vi.mock('../../src/browser/binding.js', async (original) => ({
  ...(await original<typeof import('../../src/browser/binding.js')>()),
  watchCapture: (await import('../support/binding-stand-in.js')).watchCapture,
}));
const { watches } = await import('../support/binding-stand-in.js');
// The element's entry, loaded by <BlackboxCapture> once mounted: counted, not run (it has its own tests).
const elementLoads = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../src/browser/element.js', () => {
  elementLoads.count++;
  return {};
});
const { BlackboxCapture, useBlackbox } = await import('../../src/browser/vue.js');

afterEach(() => {
  watches.length = 0;
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

  it('ready: the blackbox once the capture ended, held before mount; a new capture has a new one', async () => {
    const cart = ref('cart-1');
    let capture!: ReturnType<typeof useBlackbox>;
    const { root } = mount(
      defineComponent({
        setup() {
          capture = useBlackbox(() => ({ loaderUrl: '/l.js', checkoutId: cart.value }));
          const held = capture.ready;
          return () => h('p', [capture.value.blackbox ?? '', String(held === capture.ready)]);
        },
      }),
    );
    const first = capture.ready;
    let settled: string | undefined;
    void first.then((blackbox) => (settled = blackbox));
    watches[0]!.change({ blackbox: 'bb-1', complete: false });
    await nextTick();
    expect([settled, root.textContent]).toEqual([undefined, 'bb-1true']);
    watches[0]!.change({ blackbox: 'bb-2', complete: true });
    watches[0]!.ended('bb-2');
    expect(await first).toBe('bb-2');
    expect(capture.value.blackbox).toBe('bb-2');
    cart.value = 'cart-2';
    await nextTick();
    expect(capture.ready).not.toBe(first);
    watches[1]!.ended('bb-3');
    expect(await capture.ready).toBe('bb-3');
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

describe('<BlackboxCapture> (Vue)', () => {
  /** A form with the component under v-model, as docs/frameworks.md's Nuxt page has it. */
  const Form = (blackbox = ref('')) =>
    defineComponent({
      setup: () => () =>
        h('form', [
          h(BlackboxCapture, {
            modelValue: blackbox.value,
            'onUpdate:modelValue': (value: string) => (blackbox.value = value),
            name: 'blackbox',
            'loader-url': '/l.js',
            'checkout-id': 'cart-1',
          }),
          h('p', blackbox.value || 'checking'),
        ]),
    });

  it('renders the tag with its attributes on a server, and loads nothing there', async () => {
    const html = await renderToString(createSSRApp(Form()));
    expect(html).toBe(
      '<form><blackbox-capture name="blackbox" loader-url="/l.js" checkout-id="cart-1"></blackbox-capture><p>checking</p></form>',
    );
    expect(elementLoads.count).toBe(0);
  });

  it("mounted: loads the element's entry; v-model takes the value of each input event", async () => {
    const blackbox = ref('');
    const { root } = mount(Form(blackbox));
    await vi.waitFor(() => expect(elementLoads.count).toBe(1));
    const element = root.querySelector('blackbox-capture')!;
    expect([element.getAttribute('loader-url'), element.getAttribute('checkout-id')]).toEqual(['/l.js', 'cart-1']);
    Object.defineProperty(element, 'value', { value: 'bb-1', configurable: true });
    element.dispatchEvent(new Event('input', { bubbles: true }));
    await nextTick();
    expect([blackbox.value, root.querySelector('p')!.textContent]).toEqual(['bb-1', 'bb-1']);
    expect(element.hasAttribute('modelvalue')).toBe(false);
  });
});
