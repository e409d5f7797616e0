/**
 * `blackbox-capture/element`: `<blackbox-capture name="blackbox" loader-url="…">` inside a
 * form. Form-associated (ElementInternals): its value is the blackbox, so FormData and a
 * native submit carry it under `name`, beside `<name>-outcome`. It holds a submit until the
 * capture completes, or `max-wait-ms` after the submit, then submits what there is: before
 * any of the page's own submit handlers run, so that a page (or a framework) that handles
 * the submit itself reads the final value too. `ready` resolves with the value once the
 * capture has ended. Its
 * state shows as a custom state: `:state(collecting)`, `:state(complete)`,
 * `:state(degraded)`, `:state(failed)`. Importing this module registers the element in a
 * browser, once per page (two copies of the package share the first definition), and does
 * nothing on a server.
 */
import type { CaptureOutcome } from '../shared/types.js';
import { claimCheckout, reloadOption } from './checkout.js';
import type { BlackboxCaptureAttributes } from './element-attributes.js';
import { explain } from './errors.js';
import { formControlClass } from './element-control.js';
import { attributeOptions } from './element-options.js';
import { captureBlackbox } from './index.js';

export type { BlackboxCaptureAttributes } from './element-attributes.js';
export type BlackboxCaptureState = 'collecting' | 'complete' | 'degraded' | 'failed';

/** `<blackbox-capture>` as a page reads it (`document.querySelector('blackbox-capture')` is one). */
export interface BlackboxCaptureElement extends HTMLElement {
  /** The latest blackbox (final once `state` is `complete` or `degraded`); a write changes nothing. */
  value: string;
  readonly state: BlackboxCaptureState;
  readonly outcome: CaptureOutcome | undefined;
  readonly form: HTMLFormElement | null;
  /** The value once the capture has ended (`state` says how); never rejects. */
  readonly ready: Promise<string>;
}

declare global {
  interface HTMLElementTagNameMap {
    'blackbox-capture': BlackboxCaptureElement;
  }
  // Svelte's template types (a global namespace: nothing to resolve where Svelte is absent).
  // eslint-disable-next-line @typescript-eslint/no-namespace -- Svelte reads its template types from this namespace
  namespace svelteHTML {
    interface IntrinsicElements {
      'blackbox-capture': BlackboxCaptureAttributes;
    }
  }
}

type Options = Parameters<typeof captureBlackbox>[0];

/** The element's class, made only where HTMLElement exists (a server has none). */
function elementClass() {
  return class BlackboxCapture extends formControlClass() implements BlackboxCaptureElement {
    private started = false;
    private done: Promise<void> | undefined;
    /** Whether a submit is held now: a second one (a double click) is dropped, not held again. */
    private holding = false;
    /** How long a held submit waits for the capture (`max-wait-ms`). */
    private maxWaitMs = 3000;
    /** Where the submit listener is: the form's root (document or shadow root), before any listener of the form's. */
    private listenedRoot: Node | null = null;
    private endCapture!: (value: string) => void;
    /**
     * The value once the capture has ended (complete, degraded or failed: `state` says
     * which); never rejects. For a page's handler that reads the value itself.
     */
    readonly ready: Promise<string> = new Promise((resolve) => (this.endCapture = resolve));

    connectedCallback(): void {
      this.listen(this.internalsOf.form);
      // Moved within the page (a framework re-parenting it): the one capture runs on.
      if (this.started) return;
      this.started = true;
      this.setState('collecting');
      this.done = this.capture();
    }

    disconnectedCallback(): void {
      this.listen(null);
    }

    /**
     * Two calls: the element's own, which hears the updates, and the delivery, whose options
     * hold no function of this element's. Every mount in the page run with the same options
     * and `checkout-id` makes that same call, which the core joins: one POST, under one
     * Idempotency-Key, whatever remounts; another `checkout-id` is another delivery.
     */
    private async capture(): Promise<void> {
      try {
        const own = this.options();
        const url = this.getAttribute('post-url');
        const checkoutId = this.getAttribute('checkout-id');
        // Another checkout than the page run's first: before anything runs or is posted, the
        // page loads it fully (its submits held until it goes), or, with reload="false", it is refused.
        const reload = reloadOption(this.getAttribute('reload'));
        if (checkoutId && !claimCheckout(checkoutId, reload)) {
          this.holding = true;
          return;
        }
        const { onUpdate: _onUpdate, onOutcome: _onOutcome, ...shared } = own;
        const post = url === null ? undefined : checkoutId ? { url, headers: { 'checkout-id': checkoutId } } : url;
        const delivered = post === undefined ? undefined : captureBlackbox({ ...shared, post });
        // The delivery's failure is the element's (post_failed), as when it made one call.
        delivered?.catch(() => {});
        this.latest = await captureBlackbox(own);
        await delivered;
        this.setState(this.told && this.told.outcome !== 'complete' ? 'degraded' : 'complete');
        this.write();
        this.emit('change', undefined);
        this.emit('blackbox', this.latest);
      } catch (error) {
        // The element's own refusals get their message here; the capture's have theirs.
        const explained = await explain(error);
        this.setState('failed');
        this.write();
        this.emit('blackboxerror', explained);
      }
      this.endCapture(this.value);
    }

    /** The options its attributes give, with the element's own listeners; a bad attribute throws. */
    private options(): Options {
      const { options, maxWaitMs } = attributeOptions(this);
      if (maxWaitMs !== undefined) this.maxWaitMs = maxWaitMs;
      options.onUpdate = (blackbox: string) => {
        this.latest = blackbox;
        this.write();
        // What a form control says when its value changes: Vue's v-model listens for it.
        this.emit('input', undefined);
      };
      options.onOutcome = (outcome: CaptureOutcome) => {
        this.told = outcome;
        this.write();
        this.emit('blackboxoutcome', outcome);
      };
      return options as unknown as Options;
    }

    /**
     * Listens in the capture phase on the form's root: a submit does not bubble out of a
     * shadow root, and there it comes before every listener on the form, whenever added.
     */
    private listen(form: HTMLFormElement | null): void {
      this.listenedRoot?.removeEventListener('submit', this.onSubmit, true);
      this.listenedRoot = form && form.getRootNode();
      this.listenedRoot?.addEventListener('submit', this.onSubmit, true);
    }

    /**
     * A submit of its form before the capture has ended is held (no handler of the page's
     * sees it), then made again with the same submitter once it ends or `max-wait-ms` has
     * passed, whichever comes first; the page's handlers see that one.
     */
    private onSubmit = (event: Event): void => {
      const form = this.internalsOf.form;
      if (!form || event.target !== form || this.frozen || this.current !== 'collecting') return;
      event.preventDefault();
      event.stopImmediatePropagation();
      if (this.holding) return;
      this.holding = true;
      const submitter = (event as SubmitEvent).submitter;
      const waited = new Promise<void>((resolve) => setTimeout(resolve, this.maxWaitMs));
      void Promise.race([this.done, waited]).then(() => {
        if (this.current === 'collecting')
          this.told ??= { outcome: 'timeout-partial', scripts: [], durationMs: this.maxWaitMs };
        this.write();
        this.frozen = true;
        form.requestSubmit(submitter && form.contains(submitter) ? submitter : null);
      });
    };
  };
}

/**
 * Registers `<blackbox-capture>` (or the element under another name, where a page has a
 * clash) unless the page already has it: another copy of the package, or a second import.
 */
export function defineBlackboxCapture(tagName = 'blackbox-capture'): void {
  if (typeof customElements === 'undefined' || customElements.get(tagName)) return;
  customElements.define(tagName, elementClass());
}

defineBlackboxCapture();
