/**
 * What `<blackbox-capture>` (element.ts) reads from its attributes and writes into its form:
 * the capture's options, its own `max-wait-ms`, and its form value. Plain functions of the
 * element's attributes, so that the element's class holds only its life cycle.
 */
import { invalidOption } from './errors.js';

/** Attribute → option, for the attributes that are strings as they are. */
const TEXT_ATTRIBUTES = {
  'loader-url': 'loaderUrl',
  'global-name': 'globalName',
  'uri-hook': 'uriHook',
  version: 'version',
  subkey: 'subkey',
  'capture-nonce': 'captureNonce',
  'order-token': 'orderToken',
} as const;

/**
 * The options its attributes give (without its listeners), and its `max-wait-ms` where set;
 * an attribute of its own that is out of range throws, as a bad option does.
 */
export function attributeOptions(element: HTMLElement): {
  options: Record<string, unknown>;
  maxWaitMs: number | undefined;
} {
  const maxWait = element.getAttribute('max-wait-ms');
  let maxWaitMs: number | undefined;
  if (maxWait !== null) {
    maxWaitMs = maxWait.trim() ? +maxWait : NaN;
    if (!(maxWaitMs >= 0 && maxWaitMs <= 600_000)) invalidOption('max-wait-ms', maxWait);
  }
  const options: Record<string, unknown> = {};
  for (const [attribute, option] of Object.entries(TEXT_ATTRIBUTES)) {
    const value = element.getAttribute(attribute);
    if (value !== null) options[option] = value;
  }
  // A page with a CSP hides the nonce attribute (it reads ""); the property keeps it.
  if (element.hasAttribute('nonce')) options.nonce = element.nonce || element.getAttribute('nonce');
  const timeout = element.getAttribute('timeout-ms');
  // Stryker disable next-line MethodExpression: blanks read as 0 untrimmed, which the option check refuses as it does NaN
  if (timeout !== null) options.timeoutMs = timeout.trim() ? +timeout : NaN;
  const inject = element.getAttribute('inject');
  if (inject !== null) options.inject = inject !== 'false';
  const consent = element.getAttribute('consent');
  // Stryker disable next-line ConditionalExpression: without the attribute the pattern reads "null", which it does not match
  const tcfVendor = consent === null ? null : /^tcf:(\d+)$/.exec(consent);
  if (tcfVendor)
    options.consent = () => import('./tcf.js').then(({ tcfConsent }) => tcfConsent({ vendorId: +tcfVendor[1]! })());
  // Anything else is handed on, for the option checks to refuse.
  else if (consent !== null) options.consent = consent;
  return { options, maxWaitMs };
}

/** The form value: the blackbox under `name`, the outcome (its kind) under `<name>-outcome`; none without a name. */
export function formValue(name: string | null, blackbox: string | undefined, outcome: string): FormData | null {
  if (!name) return null;
  const data = new FormData();
  if (blackbox) data.append(name, blackbox);
  data.append(`${name}-outcome`, outcome);
  return data;
}
