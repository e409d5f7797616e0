/**
 * Every user-facing message of the browser package, in one place. This module is
 * loaded only when something fails (a dynamic import from errors.ts), so checkout
 * pages that capture normally never download a byte of it. Messages name the
 * option or URL at fault and never carry blackbox values.
 */

/** What a value is, for "expected X, received Y". */
export function describe(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  if (value && typeof value === 'object') {
    if (Array.isArray(value)) return 'an array';
    // "an object (Headers)": an instance where an object literal was expected.
    const kind = (Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null)?.constructor?.name;
    return kind && kind !== 'Object' ? `an object (${kind})` : 'an object';
  }
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

/**
 * What the delivery chunk reports: "network error", "no answer within N ms", or "HTTP 403"
 * followed by the answer's body, of which a message keeps only the error code, e.g.
 * "HTTP 403 origin_not_allowed" from the server kit's `{ "error": { "code" } }` (or `{ "code" }`);
 * "body": the request body could not be built; or '', the core's: the chunk did not load (their
 * texts here, not in the delivery chunk's or the core's bytes).
 */
function deliveryDetail(detail: string): string {
  if (detail === '') return 'the delivery code did not load';
  if (detail === 'body') return 'the request body could not be built (post.body threw, or made what JSON cannot hold)';
  const [, status, body] = /^(HTTP \d+)([^]*)$/.exec(detail) ?? [];
  if (!status) return detail;
  let answer: { code?: unknown; error?: { code?: unknown } } | undefined;
  try {
    answer = JSON.parse(body!) as typeof answer;
  } catch {
    // Not JSON (an HTML error page, an empty body): the status says it all.
  }
  const code = answer?.error?.code ?? answer?.code;
  return typeof code === 'string' && /^[\w.-]{1,64}$/.test(code) ? `${status} ${code}` : status;
}

const URL_EXPECTED = "an https URL or a path on the page's origin";
const VENDOR_BOOLEAN = 'true, false, "1", "0", "true" or "false"';
const MS = 'a number of milliseconds from 1 to 600000';

/** What each option accepts, by its full name. */
const EXPECTED: Record<string, string> = {
  options: 'an object with "loaderUrl"',
  loaderUrl: URL_EXPECTED,
  globalName: 'a JavaScript identifier such as "IGLOO"',
  uriHook: 'a path such as "/iojs" (no host, port, "//", "..", query or fragment)',
  version: '"general5", "early5" or a version such as "5.2.2"',
  subkey: 'a non-empty string',
  enableRip: 'true or false',
  inject: 'true or false',
  reload: 'true or false',
  'data-reload': 'true or false',
  onTrace: 'a function',
  onUpdate: 'a function',
  field: 'the id of an input or textarea on the page, or such an element',
  post: 'a URL or an object with "url"',
  timeoutMs: MS,
  onOutcome: 'a function',
  degradedGraceMs: 'a number of milliseconds from 0 to 600000',
  nonce: 'a non-empty string',
  consent: 'a promise, or a function returning a boolean or a promise',
  captureNonce: 'the capture nonce your server issued (a string without spaces)',
  orderToken: 'the order token the gateway issued (a string without spaces)',
  signal: 'an AbortSignal',
  vendor: 'an object of loader keys',
  'post.url': URL_EXPECTED,
  // The page config's own key, looked up on every write.
  bbout_element_id: 'the id of an input or textarea in the page config (bbout_element_id)',
  'post.headers': 'an object of string values',
  'post.credentials': '"omit", "same-origin" or "include"',
  'post.body': 'a function',
  'post.maxAttempts': 'a whole number from 1 to 10',
  'post.timeoutMs': MS,
  // <blackbox-capture>'s own attribute.
  'max-wait-ms': 'a number of milliseconds from 0 to 600000',
  'post.fetch': 'a function',
  'vendor.tp_host': 'an origin such as "https://host.example"',
  'vendor.tp_resource': 'a script file name such as "wdp.js"',
  'vendor.fp_static_override_uri': URL_EXPECTED,
  'vendor.fp_dyn': 'false when vendor.fp_static is off',
};

const invalid = (name: string, received: unknown) =>
  `Invalid option "${name}": expected ${EXPECTED[name] ?? VENDOR_BOOLEAN}${name === 'loaderUrl' && received === undefined ? ' (it is required)' : ''}, received ${describe(received)}.`;

/** "first-party static_wdp.js, third-party wdp.js. First party: …" for the failed collection scripts. */
function scripts(names: string[], uriHook: string | undefined): string {
  const text = (prefix: string) => names.some((name) => name.startsWith(prefix));
  return names.length
    ? names.map((name) => name.replace('fp_', 'first-party ').replace('io_', 'third-party ') + '.js').join(', ') +
        '.' +
        (text('fp')
          ? ` First party: check the reverse proxy at "${uriHook}" (strip the prefix, no HTML fallback).`
          : '') +
        (text('io') ? ' Third party: an ad blocker or CSP.' : '')
    : '';
}

/** The message text of a failure, from its kind and the facts the core recorded. */
export const MESSAGES = {
  invalid_option: invalid,
  unknown_option: (name: string, known: string[]) => `Unknown option "${name}"; known: ${known.join(', ')}.`,
  lean_option: (name: string, known: string[]) =>
    `Option "${name}" needs the full entry (import { captureBlackbox } from 'blackbox-capture'); blackbox-capture/lean takes ${known.join(', ')}.`,
  lean_field: (id: string) =>
    `The page's config object names bbout_element_id "${id}": blackbox-capture/lean writes no field; import captureBlackbox from 'blackbox-capture' (option field), or take the blackbox from the promise. The error carries it.`,
  shadowed_global: (name: string, received: unknown) =>
    `Invalid option "globalName": window.${name} already holds ${describe(received)}${Object.isFrozen(received) ? ' (frozen)' : Object.isSealed(received) ? ' (sealed)' : ''}, not a config object the package can write (a plain object, not frozen or sealed, its members writable). Leave window.${name} to the package, or name another with globalName.`,
  option_conflict: (name: string, running: unknown, requested: unknown) =>
    `The loader runs once per page and already has ${name} = ${describe(running)}; this call asked for ${describe(requested)}.`,
  not_browser: () => 'captureBlackbox() needs a browser page; call it on the client only.',
  loader_failed: (url: string, ran: boolean) =>
    `The loader ${url} ${ran ? 'loaded but did not run (an HTML page?)' : 'failed to load (404, network, CSP or blocker)'}.`,
  collection_failed: (failed: string[], uriHook: string | undefined) =>
    `Every collection path failed (the loader requests nothing after a failed script): ${scripts(failed, uriHook)}`,
  empty_blackbox: () => 'The loader completed with an empty blackbox.',
  timeout: (ms: number, partial: boolean, failed: string[], uriHook: string | undefined) =>
    `No final blackbox within ${ms} ms${partial ? '; the error carries the partial one' : ' and no update at all'}.${failed.length ? ` Failed so far: ${scripts(failed, uriHook)}` : ''}`,
  aborted: () => 'Aborted.',
  consent_denied: () => 'Consent to device collection was not given: nothing was collected.',
  consent_timeout: (ms: number) =>
    `Consent to device collection was not decided within ${ms} ms: nothing was collected.`,
  blackbox_used: (owner: string, requested: string) =>
    `This page run's blackbox went to checkout "${owner}": the vendor's loader collects once per page run, so checkout "${requested}" would get the same one. The package reloads it by itself unless told not to (reload="false", reload: false) or when the reload came back to this same refusal; load that checkout page fully (a full navigation: data-turbo="false" on Turbo links, hx-boost="false" with htmx, reloadDocument in React Router, location.assign) for a blackbox of its own.`,
  post_failed: (url: string, detail: string) =>
    `Delivering to ${url} failed: ${deliveryDetail(detail)}; the error carries the blackbox.`,
} satisfies Record<string, (...args: never[]) => string>;

/** The texts of the warnings both builds give (head-tag.ts); the development build's others are in warnings.ts. */
export const WARNINGS = {
  tag_kept_in_head: (field: string) =>
    `The field #${field} of this page stays empty: the script tag in <head> ran once for this page run, and Turbo runs no head script the page already has. Give each checkout's tag its data-checkout-id (the package then loads that checkout fully), put the tag in <body>, or make the links to the checkout load it fully.`,
};

/** The arguments of each message, by its kind: what fault() records for it. */
export type MessageArgs = { [Kind in keyof typeof MESSAGES]: Parameters<(typeof MESSAGES)[Kind]> };
