// @vitest-environment happy-dom
// <blackbox-capture>'s logic on the emulated vendor. happy-dom has no ElementInternals, so a
// small stand-in records what the element gives the form (Chromium runs the real thing:
// e2e/element.spec.ts); the form's own submit events and requestSubmit are happy-dom's.
import { beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { decodeBlackbox } from '../../src/emulator/scripts/routes.js';
import { consents, stubCmp } from '../support/tcf-cmp.js';
import { freshPage, LOADER_URL, notFound, override, requests, scriptsFor, settings, w } from '../support/vendor-dom.js';

interface StandIn {
  value: FormData | string | null;
  states: Set<string> | undefined;
}
const internals = new WeakMap<HTMLElement, StandIn>();
/** A browser without custom states (CustomStateSet): internals with no `states`. */
let withoutStates = false;
beforeAll(() => {
  (HTMLElement.prototype as unknown as { attachInternals(): unknown }).attachInternals = function (this: HTMLElement) {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the stand-in's methods read the element they belong to
    const element = this;
    const standIn = {
      value: null as FormData | string | null,
      states: withoutStates ? undefined : new Set<string>(),
      get form() {
        return element.closest('form');
      },
      setFormValue(value: FormData | string | null) {
        standIn.value = value;
      },
    };
    internals.set(element, standIn);
    return standIn;
  };
});

type CaptureElement = HTMLElement & { value: string; state: string; outcome?: { outcome: string } };
const fields = (element: HTMLElement) => {
  const value = internals.get(element)!.value;
  return value instanceof FormData ? Object.fromEntries(value.entries()) : value;
};

/** A stand-in for the capture: records each call's options; the test settles each call. */
interface FakeCapture {
  calls: Array<{ options: Record<string, unknown>; resolve(value: string): void; reject(error: unknown): void }>;
  call(options: Record<string, unknown>): Promise<string>;
}
function fakeCapture(): FakeCapture {
  const calls: FakeCapture['calls'] = [];
  return {
    calls,
    call: (options) => new Promise((resolve, reject) => calls.push({ options, resolve, reject })),
  };
}

let submits: Array<Record<string, unknown>>;
let defined = 0;
/**
 * A fresh copy of the package (its per-page state included) with the element defined under
 * a name of its own: the page's registry keeps every earlier definition.
 */
async function freshElement(capture?: FakeCapture): Promise<string> {
  await freshPage();
  if (capture) vi.doMock('../../src/browser/index.js', () => ({ captureBlackbox: capture.call }));
  const { defineBlackboxCapture } = await import('../../src/browser/element.js').finally(() =>
    vi.doUnmock('../../src/browser/index.js'),
  );
  const name = `blackbox-capture-${++defined}`;
  defineBlackboxCapture(name);
  return name;
}
/** A page with the form; the page's own submit listener records what would be sent and keeps happy-dom from navigating. */
async function page(attributes = '', capture?: FakeCapture, owner?: string) {
  const tag = await freshElement(capture);
  // Another checkout that has the page run's blackbox already (src/browser/checkout.ts).
  if (owner) (window as unknown as Record<symbol, string>)[Symbol.for('blackbox-capture.checkout')] = owner;
  document.body.innerHTML = `<form action="/checkout" method="post"><${tag} name="blackbox" loader-url="${LOADER_URL}" ${attributes}></${tag}><button id="pay">Pay</button></form>`;
  const form = document.querySelector('form')!;
  const element = document.querySelector(tag) as CaptureElement;
  submits = [];
  form.addEventListener('submit', (event) => {
    if (!event.defaultPrevented) submits.push({ ...(fields(element) as object), submitter: event.submitter?.id });
    event.preventDefault();
  });
  return { form, element };
}
const settled = (element: CaptureElement) =>
  vi.waitFor(() => expect(element.state).not.toBe('collecting'), { timeout: 5000 });

beforeEach(() => {
  submits = [];
});

describe('<blackbox-capture>', () => {
  it('its value is the final blackbox under its name, the outcome beside it; state complete', async () => {
    const { element } = await page();
    expect(element.state).toBe('collecting');
    expect(internals.get(element)!.states).toEqual(new Set(['collecting']));
    await settled(element);
    expect(element.state).toBe('complete');
    expect(internals.get(element)!.states).toEqual(new Set(['complete']));
    expect(decodeBlackbox(element.value)?.sources.sort()).toEqual(['fp_dyn', 'fp_static', 'tp']);
    expect(fields(element)).toEqual({ blackbox: element.value, 'blackbox-outcome': 'complete' });
    expect(element.outcome).toMatchObject({ outcome: 'complete' });
  });

  it('a submit before completion is held, then made again with the same submitter and the final value', async () => {
    const { element } = await page('max-wait-ms="10000"');
    document.getElementById('pay')!.click();
    expect(submits).toEqual([]);
    await vi.waitFor(() => expect(submits).toHaveLength(1), { timeout: 5000 });
    expect(submits[0]).toEqual({ blackbox: element.value, 'blackbox-outcome': 'complete', submitter: 'pay' });
    expect(decodeBlackbox(element.value)?.sources).toHaveLength(3);
  });

  it('another checkout-id in the page run: the page reloads, the element stays collecting and holds every submit', async () => {
    const reload = vi.spyOn(window.location, 'reload').mockImplementation(() => {});
    const errors: unknown[] = [];
    const listener = (e: Event) => errors.push((e as CustomEvent).detail);
    document.addEventListener('blackboxerror', listener);
    try {
      const { element } = await page('checkout-id="cart-2" max-wait-ms="50"', undefined, 'cart-1');
      await vi.waitFor(() => expect(reload).toHaveBeenCalledTimes(1));
      document.getElementById('pay')!.click();
      await new Promise((r) => setTimeout(r, 200)); // past max-wait-ms: still held
      expect([element.state, submits, errors]).toEqual(['collecting', [], []]);
    } finally {
      document.removeEventListener('blackboxerror', listener);
      reload.mockRestore();
    }
  });

  it('reload="false": another checkout-id fails the element with blackbox_used, no reload, the form not held', async () => {
    const reload = vi.spyOn(window.location, 'reload').mockImplementation(() => {});
    try {
      const { element } = await page('checkout-id="cart-2" reload="false"', undefined, 'cart-1');
      await settled(element);
      expect([element.state, reload.mock.calls.length]).toEqual(['failed', 0]);
      document.getElementById('pay')!.click();
      expect(submits).toHaveLength(1);
    } finally {
      reload.mockRestore();
    }
  });

  it('reload="maybe" fails the element with invalid_option naming it, before any claim', async () => {
    const errors: Array<{ code: string; message: string }> = [];
    const listener = (e: Event) => errors.push((e as CustomEvent).detail);
    document.addEventListener('blackboxerror', listener);
    try {
      const { element } = await page('checkout-id="cart-1" reload="maybe"');
      await settled(element);
      expect(errors).toEqual([
        expect.objectContaining({
          code: 'invalid_option',
          message: expect.stringContaining('"reload": expected true or false'),
        }),
      ]);
      expect(scriptsFor(LOADER_URL)).toEqual([]);
    } finally {
      document.removeEventListener('blackboxerror', listener);
    }
  });

  it('before it is connected: state collecting, value "", no form; form-associated once defined', async () => {
    const tag = await freshElement();
    expect((customElements.get(tag) as unknown as { formAssociated: boolean }).formAssociated).toBe(true);
    const element = document.createElement(tag) as CaptureElement & { form: HTMLFormElement | null };
    expect([element.state, element.value, element.form]).toEqual(['collecting', '', null]);
    const form = document.createElement('form');
    document.body.append(form);
    form.append(element);
    expect(element.form).toBe(form);
    element.setAttribute('loader-url', LOADER_URL);
    await settled(element);
  });

  it('a held submit that max-wait-ms lets go carries the partial blackbox there is', async () => {
    const tag = await freshElement();
    settings.delays = { fp_static: [5], fp_dyn: [5000], tp: [5000] };
    document.body.innerHTML = `<form><${tag} name="blackbox" loader-url="${LOADER_URL}" max-wait-ms="300"></${tag}><button id="pay">Pay</button></form>`;
    const element = document.querySelector(tag) as CaptureElement;
    submits = [];
    document.querySelector('form')!.addEventListener('submit', (event) => {
      if (!event.defaultPrevented) submits.push({ ...(fields(element) as object) });
      event.preventDefault();
    });
    await vi.waitFor(() => expect(element.value).toMatch(/^0400/));
    document.getElementById('pay')!.click();
    expect(submits).toEqual([]);
    await vi.waitFor(() => expect(submits).toHaveLength(1));
    expect(submits[0]).toEqual({ blackbox: element.value, 'blackbox-outcome': 'timeout-partial' });
    expect(decodeBlackbox(element.value)?.sources).toEqual(['fp_static']);
  });

  it.each([
    ['abc', 'abc'],
    ['-1', '-1'],
    ['', 'blank'],
    ['  ', 'spaces'],
    ['600001', 'above ten minutes'],
  ])('max-wait-ms="%s" (%s) fails the element with invalid_option naming it; the form is not held', async (value) => {
    const errors: Array<{ code: string; message: string }> = [];
    const listener = (e: Event) => errors.push((e as CustomEvent).detail);
    document.addEventListener('blackboxerror', listener);
    try {
      const { element } = await page(`max-wait-ms="${value}"`);
      await settled(element);
      expect(element.state).toBe('failed');
      expect(errors).toEqual([
        expect.objectContaining({
          code: 'invalid_option',
          message: expect.stringContaining('"max-wait-ms": expected a number of milliseconds from 0 to 600000'),
        }),
      ]);
      expect(scriptsFor(LOADER_URL)).toEqual([]);
      document.getElementById('pay')!.click();
      expect(submits).toHaveLength(1);
    } finally {
      document.removeEventListener('blackboxerror', listener);
    }
  });

  it('max-wait-ms="600000" is the longest hold allowed', async () => {
    const { element } = await page('max-wait-ms="600000"');
    document.getElementById('pay')!.click();
    expect(submits).toEqual([]);
    await vi.waitFor(() => expect(submits).toHaveLength(1), { timeout: 5000 });
    expect(element.state).toBe('complete');
  });

  it('a submit after completion goes at once', async () => {
    const { element } = await page();
    await settled(element);
    document.getElementById('pay')!.click();
    expect(submits).toHaveLength(1);
  });

  it('max-wait-ms bounds the hold: what there is goes, outcome timeout-partial, and the value no longer changes', async () => {
    const { element } = await page('max-wait-ms="0"');
    document.getElementById('pay')!.click();
    await vi.waitFor(() => expect(submits).toHaveLength(1));
    expect(submits[0]!['blackbox-outcome']).toBe('timeout-partial');
    const frozen = fields(element);
    await settled(element);
    expect(fields(element)).toEqual(frozen);
  });

  it.each([
    ['before the element, on the form', 'form', false, 'before'],
    ['after the element, on the form', 'form', false, 'after'],
    ['in the capture phase on the form', 'form', true, 'after'],
    ['on the document', 'document', false, 'before'],
  ] as const)(
    "a submit the page handles itself (preventDefault, listener %s) is held too: the page's handler sees only the final value",
    async (_label, where, capture, when) => {
      const tag = await freshElement();
      settings.delays = { fp_dyn: [300] };
      const form = document.createElement('form');
      form.innerHTML = '<button id="pay">Pay</button>';
      document.body.replaceChildren(form);
      const seen: Array<{ value: string; outcome: string; state: string; submitter?: string }> = [];
      let element: CaptureElement | undefined;
      const handler = (event: Event) => {
        if (event.target !== form) return;
        event.preventDefault(); // a page (Vue's @submit.prevent, Angular's ngSubmit) that posts the value itself
        const { value, outcome, state } = element!;
        seen.push({
          value,
          outcome: outcome?.outcome ?? 'none',
          state,
          submitter: (event as SubmitEvent).submitter?.id,
        });
      };
      const target = where === 'form' ? form : document;
      if (when === 'before') target.addEventListener('submit', handler, { capture });
      element = document.createElement(tag) as CaptureElement;
      element.setAttribute('name', 'blackbox');
      element.setAttribute('loader-url', LOADER_URL);
      element.setAttribute('max-wait-ms', '10000');
      form.prepend(element);
      if (when === 'after') target.addEventListener('submit', handler, { capture });
      try {
        await vi.waitFor(() => expect(element.value).toMatch(/^0400/));
        document.getElementById('pay')!.click();
        document.getElementById('pay')!.click(); // a double click: one submit goes on
        expect(seen).toEqual([]);
        await vi.waitFor(() => expect(seen).toHaveLength(1), { timeout: 5000 });
        expect(seen[0]).toEqual({ value: element.value, outcome: 'complete', state: 'complete', submitter: 'pay' });
        expect(decodeBlackbox(element.value)?.sources.sort()).toEqual(['fp_dyn', 'fp_static', 'tp']);
        await new Promise((r) => setTimeout(r, 50));
        expect(seen).toHaveLength(1);
      } finally {
        target.removeEventListener('submit', handler, { capture });
      }
    },
  );

  it("a submit of another form is not held, nor the page's handler of it stopped", async () => {
    const { element } = await page('max-wait-ms="10000"');
    const other = document.createElement('form');
    document.body.append(other);
    let heard = 0;
    other.addEventListener('submit', (event) => {
      heard++;
      event.preventDefault();
    });
    other.requestSubmit();
    expect(heard).toBe(1);
    await settled(element);
  });

  it('ready resolves with the final value once the capture ends, and with what there is when it fails', async () => {
    const { element } = await page();
    const ready = (element as CaptureElement & { ready: Promise<string> }).ready;
    let early: string | undefined;
    void ready.then((value) => (early = value));
    await new Promise((r) => setTimeout(r, 0));
    expect(early).toBeUndefined();
    const value = await ready;
    expect(element.state).toBe('complete');
    expect(value).toBe(element.value);
    expect(decodeBlackbox(value)?.sources).toHaveLength(3);
    const failed = await page('timeout-ms="abc"');
    await expect((failed.element as CaptureElement & { ready: Promise<string> }).ready).resolves.toBe('');
    expect(failed.element.state).toBe('failed');
  });

  it("v-model's write-back of the value it read is accepted; any other write is ignored with a warning", async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const { element } = await page();
      await settled(element);
      const value = element.value;
      element.value = value;
      expect(warn).not.toHaveBeenCalled();
      element.value = 'forged';
      expect(element.value).toBe(value);
      expect(fields(element)).toEqual({ blackbox: value, 'blackbox-outcome': 'complete' });
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('ignored a write'));
    } finally {
      warn.mockRestore();
    }
  });

  it('a degraded capture: state degraded, its outcome in the form', async () => {
    const tag = await freshElement();
    override(/^https:\/\/tp\.test\//, notFound);
    document.body.innerHTML = `<form><${tag} name="blackbox" loader-url="${LOADER_URL}"></${tag}></form>`;
    const element = document.querySelector(tag) as CaptureElement;
    await settled(element);
    expect(element.state).toBe('degraded');
    expect(fields(element)).toMatchObject({ 'blackbox-outcome': 'degraded-third-party' });
  });

  it('a failed capture: state failed, no blackbox field, the outcome in the form, blackboxerror', async () => {
    const errors: unknown[] = [];
    document.addEventListener('blackboxerror', (e) => errors.push((e as CustomEvent).detail));
    const { element } = await page('timeout-ms="abc"');
    await settled(element);
    expect(element.state).toBe('failed');
    expect(fields(element)).toEqual({ 'blackbox-outcome': 'failed' });
    expect(errors).toEqual([expect.objectContaining({ code: 'invalid_option' })]);
  });

  it('maps its attributes to the options', async () => {
    const { element } = await page(
      'global-name="ACME" uri-hook="/risk-proxy" version="5.2.2" subkey="sk" inject="true" nonce="n0nce" timeout-ms="400"',
    );
    await vi.waitFor(() => expect(w().ACME?.loader).toBeDefined());
    expect(w().ACME.loader).toMatchObject({ uri_hook: '/risk-proxy', version: '5.2.2', subkey: 'sk' });
    expect(scriptsFor(LOADER_URL)[0]!.nonce || scriptsFor(LOADER_URL)[0]!.getAttribute('nonce')).toBe('n0nce');
    await settled(element);
  });

  it('inject="false" adopts the page\'s own loader tag: none of its own, complete once the page\'s runs', async () => {
    const { element } = await page('inject="false"');
    await new Promise((r) => setTimeout(r, 100));
    expect(scriptsFor(LOADER_URL)).toEqual([]);
    const own = document.createElement('script');
    own.src = LOADER_URL;
    document.body.append(own);
    await settled(element);
    expect(element.state).toBe('complete');
    expect(scriptsFor(LOADER_URL)).toHaveLength(1);
  });

  it.each(['', 'true'])('inject="%s" injects the loader', async (value) => {
    const { element } = await page(`inject="${value}"`);
    await vi.waitFor(() => expect(scriptsFor(LOADER_URL)).toHaveLength(1));
    await settled(element);
  });

  it('reads the nonce from the property where the page\'s CSP hides the attribute (it reads "")', async () => {
    const tag = await freshElement();
    const element = document.createElement(tag) as CaptureElement;
    element.setAttribute('loader-url', LOADER_URL);
    element.setAttribute('nonce', ''); // what nonce hiding leaves in the attribute
    Object.defineProperty(element, 'nonce', { value: 'r4nd0m' });
    document.body.replaceChildren(element);
    await vi.waitFor(() => expect(scriptsFor(LOADER_URL)).toHaveLength(1));
    expect(scriptsFor(LOADER_URL)[0]!.nonce || scriptsFor(LOADER_URL)[0]!.getAttribute('nonce')).toBe('r4nd0m');
    await settled(element);
  });

  it('without a name it gives the form nothing; a reset writes the value again', async () => {
    const tag = await freshElement();
    document.body.innerHTML = `<form><${tag} loader-url="${LOADER_URL}"></${tag}></form>`;
    const element = document.querySelector(tag) as CaptureElement & { formResetCallback(): void };
    await settled(element);
    expect(internals.get(element)!.value).toBeNull();
    element.setAttribute('name', 'bb');
    element.formResetCallback();
    expect(fields(element)).toEqual({ bb: element.value, 'bb-outcome': 'complete' });
  });

  it('events bubble from the element: blackbox and blackboxoutcome', async () => {
    const heard: string[] = [];
    for (const type of ['blackbox', 'blackboxoutcome']) document.addEventListener(type, () => heard.push(type));
    const { element } = await page();
    await settled(element);
    expect(heard.sort()).toEqual(['blackbox', 'blackboxoutcome']);
  });

  it('moved after completion, it stays complete and runs no second capture; a submit goes at once', async () => {
    const { form, element } = await page('max-wait-ms="10000"');
    await settled(element);
    const heard: string[] = [];
    element.addEventListener('blackbox', () => heard.push('blackbox'));
    const before = requests.length;
    const wrapper = document.createElement('div');
    form.prepend(wrapper);
    wrapper.append(element);
    expect(element.state).toBe('complete');
    expect(internals.get(element)!.states).toEqual(new Set(['complete']));
    document.getElementById('pay')!.click();
    expect(submits).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 50));
    expect(heard).toEqual([]);
    expect(requests.length).toBe(before);
  });

  it("removed from its form before completion, it no longer holds that form's submit", async () => {
    const { form, element } = await page('max-wait-ms="10000"');
    element.remove();
    form.requestSubmit();
    expect(submits).toHaveLength(1);
  });

  it('in a browser without custom states it works the same, state by its property', async () => {
    withoutStates = true;
    try {
      const { element } = await page();
      await settled(element);
      expect(element.state).toBe('complete');
      expect(fields(element)).toEqual({ blackbox: element.value, 'blackbox-outcome': 'complete' });
    } finally {
      withoutStates = false;
    }
  });

  it('its events leave a shadow root: a page listening on the document hears an element inside a component', async () => {
    const tag = await freshElement();
    const heard: string[] = [];
    const listener = (e: Event) => heard.push(e.type);
    document.addEventListener('blackbox', listener);
    try {
      const host = document.createElement('div');
      document.body.replaceChildren(host);
      host.attachShadow({ mode: 'open' }).innerHTML = `<${tag} loader-url="${LOADER_URL}"></${tag}>`;
      await settled(host.shadowRoot!.querySelector(tag) as CaptureElement);
      expect(heard).toEqual(['blackbox']);
    } finally {
      document.removeEventListener('blackbox', listener);
    }
  });

  it("moved to another form, it holds that form's submit, not the old one's", async () => {
    const { form, element } = await page('max-wait-ms="10000"');
    const other = document.createElement('form');
    document.body.append(other);
    other.append(element);
    form.requestSubmit();
    expect(submits).toHaveLength(1); // the old form went at once: nothing held it
    await settled(element);
  });

  it('defined once: importing registers <blackbox-capture>, and a second copy of the module keeps the first definition', async () => {
    await page();
    const first = customElements.get('blackbox-capture');
    expect(first).toBeDefined();
    vi.resetModules();
    const again = await import('../../src/browser/element.js');
    again.defineBlackboxCapture();
    expect(customElements.get('blackbox-capture')).toBe(first);
  });

  it('consent="tcf:810" asks the CMP for vendor 810: its grant starts the capture', async () => {
    const { asked } = stubCmp({ gdprApplies: true, eventStatus: 'tcloaded', ...consents({ 810: true }, { 1: true }) });
    try {
      const { element } = await page('consent="tcf:810"');
      await settled(element);
      expect(element.state).toBe('complete');
      expect(asked.length).toBeGreaterThan(0);
    } finally {
      delete (window as unknown as { __tcfapi?: unknown }).__tcfapi;
    }
  });

  it.each(['xtcf:810', 'tcf:810x', 'granted', ''])(
    'consent="%s" is no consent: failed with invalid_option, the CMP never asked, nothing written',
    async (value) => {
      const asked: unknown[] = [];
      (window as unknown as { __tcfapi: unknown }).__tcfapi = (...args: unknown[]) => asked.push(args);
      try {
        const { element } = await page(`consent="${value}"`);
        await settled(element);
        expect(element.state).toBe('failed');
        expect(element.outcome).toBeUndefined();
        expect(asked).toEqual([]);
        expect(w().IGLOO).toBeUndefined();
      } finally {
        delete (window as unknown as { __tcfapi?: unknown }).__tcfapi;
      }
    },
  );

  it('consent="tcf:810" asks the page\'s CMP; a denial is failed, nothing written', async () => {
    stubCmp({ gdprApplies: true, eventStatus: 'tcloaded', ...consents({}, { 1: true }) });
    try {
      const { element } = await page('consent="tcf:810"');
      await settled(element);
      expect(element.state).toBe('failed');
      expect(fields(element)).toEqual({ 'blackbox-outcome': 'consent_denied' });
      expect(w().IGLOO).toBeUndefined();
    } finally {
      delete (window as unknown as { __tcfapi?: unknown }).__tcfapi;
    }
  });

  it("its types: the tag in HTMLElementTagNameMap and in Svelte's templates (typecheck)", async () => {
    await page();
    // Never called: `npm run typecheck` fails if one of these stops being what it says.
    const typed = () => {
      const element = document.createElement('blackbox-capture');
      const found = document.querySelector('blackbox-capture');
      const read: [string, string, Promise<string>, HTMLFormElement | null] = [
        element.value,
        element.state,
        element.ready,
        found!.form,
      ];
      element.value = read[0]; // v-model writes back what it read
      // @ts-expect-error the state is the element's
      element.state = 'complete';
      // @ts-expect-error so is the promise
      element.ready = Promise.resolve('');
      // @ts-expect-error not a state
      const state: typeof element.state = 'done';
      const svelte: svelteHTML.IntrinsicElements['blackbox-capture'] = {
        'loader-url': '/static/vendor/loader.js',
        'post-url': '/device-risk',
        'checkout-id': 'cart-1',
        consent: 'tcf:810',
        onblackbox: (event) => event.detail.length,
      };
      // @ts-expect-error loader-url is required
      const missing: svelteHTML.IntrinsicElements['blackbox-capture'] = { name: 'blackbox' };
      // @ts-expect-error consent is tcf:<vendor id>
      const consent: svelteHTML.IntrinsicElements['blackbox-capture'] = { 'loader-url': '/l.js', consent: 'yes' };
      return [read, state, svelte, missing, consent];
    };
    expect(typeof typed).toBe('function');
    expect(document.createElement('blackbox-capture')).toBeInstanceOf(customElements.get('blackbox-capture')!);
  });
  it("tells a binding of its value as a form control does (Vue's v-model): input on each update, change once ended", async () => {
    const capture = fakeCapture();
    const { element } = await page('', capture);
    const heard: string[] = [];
    element.addEventListener('input', (event) => heard.push(`input ${element.value} ${event.bubbles}`));
    element.addEventListener('change', () => heard.push(`change ${element.value} ${element.state}`));
    const onUpdate = capture.calls[0]!.options.onUpdate as (blackbox: string) => void;
    onUpdate('0400a');
    onUpdate('0400ab');
    capture.calls[0]!.resolve('0400ab');
    await settled(element);
    expect(heard).toEqual(['input 0400a true', 'input 0400ab true', 'change 0400ab complete']);
  });

  it('without post-url it makes one call, no delivery', async () => {
    const capture = fakeCapture();
    const { element } = await page('', capture);
    expect(capture.calls).toHaveLength(1);
    capture.calls[0]!.resolve('0400abc');
    await settled(element);
    expect(capture.calls).toHaveLength(1);
    expect(element.value).toBe('0400abc');
  });

  it('a held submit that max-wait-ms lets go: outcome timeout-partial, no scripts, the wait as its duration', async () => {
    const capture = fakeCapture();
    const { element } = await page('max-wait-ms="0"', capture);
    document.getElementById('pay')!.click();
    await vi.waitFor(() => expect(submits).toHaveLength(1));
    expect(element.outcome).toEqual({ outcome: 'timeout-partial', scripts: [], durationMs: 0 });
    capture.calls[0]!.resolve('0400abc');
    await settled(element);
  });

  it('a capture that fails while a submit is held: the submit goes with outcome failed', async () => {
    const capture = fakeCapture();
    const { element } = await page('max-wait-ms="10000"', capture);
    document.getElementById('pay')!.click();
    expect(submits).toEqual([]);
    capture.calls[0]!.reject(new Error('the loader failed'));
    await vi.waitFor(() => expect(submits).toHaveLength(1));
    expect(element.state).toBe('failed');
    expect(submits[0]).toMatchObject({ 'blackbox-outcome': 'failed' });
    expect(element.outcome).toBeUndefined();
  });

  it('a submitter removed during the hold: the submit still goes, without it', async () => {
    const capture = fakeCapture();
    const { element } = await page('max-wait-ms="10000"', capture);
    const pay = document.getElementById('pay')!;
    pay.click();
    pay.remove(); // a framework re-rendering the button; requestSubmit(pay) would throw in a browser
    capture.calls[0]!.resolve('0400abc');
    await vi.waitFor(() => expect(submits).toHaveLength(1));
    // happy-dom names the form itself where a browser gives null: either way, not the removed button.
    expect(submits[0]!.submitter).not.toBe('pay');
    expect(submits[0]).toMatchObject({ blackbox: '0400abc', 'blackbox-outcome': 'complete' });
    expect(element.state).toBe('complete');
  });

  it('removed from the page, it takes its submit listener off the document', async () => {
    const added = vi.spyOn(document, 'addEventListener');
    const removed = vi.spyOn(document, 'removeEventListener');
    try {
      const capture = fakeCapture();
      const { element } = await page('', capture);
      const listener = added.mock.calls.find(([type, , capture]) => type === 'submit' && capture === true)?.[1];
      expect(listener).toBeInstanceOf(Function);
      expect(removed).not.toHaveBeenCalledWith('submit', listener, true);
      element.remove();
      expect(removed).toHaveBeenCalledWith('submit', listener, true);
    } finally {
      added.mockRestore();
      removed.mockRestore();
    }
  });

  it("without an inject attribute it joins the page's own call (inject not given): no option_conflict", async () => {
    const tag = await freshElement();
    const { captureBlackbox } = await import('../../src/browser/index.js');
    const own = captureBlackbox({ loaderUrl: LOADER_URL });
    document.body.innerHTML = `<form><${tag} name="blackbox" loader-url="${LOADER_URL}"></${tag}></form>`;
    const element = document.querySelector(tag) as CaptureElement;
    await settled(element);
    expect(element.state).toBe('complete');
    expect(element.value).toBe(await own);
  });
});
