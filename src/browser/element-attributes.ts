/**
 * The attributes of `<blackbox-capture>` for templates' type checks: Svelte's (`svelteHTML`,
 * in element.ts) and Vue's (vue.ts). A module of types alone, with no global declaration, so
 * that the Vue entry's types hold the list without the element entry's globals.
 */
import type { CaptureOutcome } from '../shared/types.js';

/** Its attributes, for a template's type checks. */
export interface BlackboxCaptureAttributes {
  name?: string;
  'loader-url': string;
  'global-name'?: string;
  'uri-hook'?: string;
  version?: string;
  subkey?: string;
  'timeout-ms'?: number | string;
  'max-wait-ms'?: number | string;
  nonce?: string;
  inject?: boolean | 'true' | 'false' | '';
  'capture-nonce'?: string;
  'order-token'?: string;
  consent?: `tcf:${number}`;
  'post-url'?: string;
  'checkout-id'?: string;
  /** `"false"`: another checkout in the page run ends `blackbox_used` instead of reloading (a string: React drops a `false`). */
  reload?: 'true' | 'false' | '';
  id?: string;
  class?: string;
  onblackbox?: (event: CustomEvent<string>) => void;
  onblackboxoutcome?: (event: CustomEvent<CaptureOutcome>) => void;
  onblackboxerror?: (event: CustomEvent<Error & { code: string }>) => void;
}
