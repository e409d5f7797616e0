/**
 * The form control under `<blackbox-capture>` (element.ts): form-associated through
 * ElementInternals, it holds the value, the state and the outcome, writes them into its form
 * and tells them as events. The capture and the held submit are element.ts's.
 */
import type { CaptureOutcome } from '../shared/types.js';
import type { BlackboxCaptureState } from './element.js';
import { formValue } from './element-options.js';

interface Internals {
  form: HTMLFormElement | null;
  setFormValue(value: FormData | string | null): void;
  states?: { add(state: string): void; delete(state: string): void };
}

/** The control as element.ts extends it: what it reads and writes, public to its subclass alone. */
export interface FormControl extends HTMLElement {
  internalsOf: Internals;
  latest: string | undefined;
  told: CaptureOutcome | undefined;
  current: BlackboxCaptureState;
  frozen: boolean;
  value: string;
  readonly state: BlackboxCaptureState;
  readonly outcome: CaptureOutcome | undefined;
  readonly form: HTMLFormElement | null;
  write(): void;
  setState(state: BlackboxCaptureState): void;
  emit(type: string, detail: unknown): void;
}

/** The control's class, made only where HTMLElement exists (a server has none). */
export function formControlClass(): new () => FormControl {
  return class BlackboxCaptureControl extends HTMLElement {
    static formAssociated = true;
    internalsOf: Internals = this.attachInternals();
    latest: string | undefined;
    told: CaptureOutcome | undefined;
    current: BlackboxCaptureState = 'collecting';
    /** Set once a held submit goes on: the value no longer changes under it. */
    frozen = false;

    /** The latest blackbox (final once `state` is `complete` or `degraded`). */
    get value(): string {
      return this.latest ?? '';
    }
    /**
     * The page cannot write the blackbox: a binding that writes back (Vue's `v-model`, which
     * writes what it read) is accepted, and any other value is ignored with a warning.
     */
    set value(value: string) {
      // Stryker disable next-line ConditionalExpression: writing back the same value only skips the warning
      if (value !== this.value) console.warn(`[blackbox-capture] the element's value is the blackbox: ignored a write`);
    }
    get state(): BlackboxCaptureState {
      return this.current;
    }
    get outcome(): CaptureOutcome | undefined {
      return this.told;
    }
    get form(): HTMLFormElement | null {
      return this.internalsOf.form;
    }

    formResetCallback(): void {
      this.write();
    }

    /** The form value: the blackbox under `name`, the outcome (its kind) under `<name>-outcome`. */
    write(): void {
      if (this.frozen) return;
      this.internalsOf.setFormValue(
        formValue(this.getAttribute('name'), this.latest, this.told?.outcome ?? this.current),
      );
    }

    /** The state, also as a custom state for `:state()` where the browser has them. */
    setState(state: BlackboxCaptureState): void {
      this.internalsOf.states?.delete(this.current);
      this.current = state;
      this.internalsOf.states?.add(state);
    }

    emit(type: string, detail: unknown): void {
      this.dispatchEvent(new CustomEvent(type, { detail, bubbles: true, composed: true }));
    }
  };
}
