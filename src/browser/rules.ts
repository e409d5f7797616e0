/**
 * The rules both builds keep: the checks whose input can come from runtime data and
 * whose failure would make the vendor loader misbehave without a trace, and the
 * vendor's own value parsing. options.ts (development) and options.production.ts
 * both use them, and so does the lean entry (lean.ts).
 */
import { fault } from './errors.js';

/** Option rules by option name: true (truthy) when a value is acceptable. */
export type Rules = Record<string, (value: any) => unknown>;

/** The options that reach the vendor's config: they must agree across calls on one page. */
export const LOADER_KEYS = [
  'loaderUrl',
  'globalName',
  'uriHook',
  'version',
  'subkey',
  'enableRip',
  'vendor',
  'inject',
] as const;

/** The lean entry's options (lean.ts): the loader's and the time limit, with the full entry's meaning and defaults. */
export const LEAN_KEYS = ['loaderUrl', 'uriHook', 'timeoutMs', 'nonce', 'inject'];

/** An object literal (or one without a prototype): not an array, a Map, a Headers or another class instance, whose entries a spread or `for…in` would not see. */
export const isPlainObject = (value: unknown): value is Record<string, any> =>
  !!value && typeof value === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(value));

/**
 * The object's own enumerable properties, each read once, in an object without a
 * prototype: a getter cannot answer one value to validation and another later, and
 * a `__proto__` key (as JSON.parse makes) stays a plain key.
 */
export const snapshot = (value: Record<string, unknown>): Record<string, any> =>
  // Each own enumerable value read once; a `__proto__` key set on a target without a prototype stays a key.
  Object.assign(Object.create(null) as Record<string, unknown>, value);

// The loader's own boolean strings. Lists, not patterns, on the path every call takes: a
// regular expression is compiled on its first use, on the page's main thread.
export const ON = ['1', 'true'];
export const OFF = ['0', 'false'];
/** The vendor's boolean parsing: true/false, "1"/"0", "true"/"false"; anything else is `fallback`. */
export const vendorFlag = (value: unknown, fallback?: boolean): boolean =>
  // eslint-disable-next-line @typescript-eslint/restrict-template-expressions -- the vendor reads any value as its string
  ON.includes(`${value}`) || (!!fallback && !OFF.includes(`${value}`));

/**
 * A non-empty string without whitespace or control characters (`/^[^\s\0-\x1f\x7f]+$/`),
 * character by character: a call that meets no pattern skips the engine's warm-up.
 */
export const printable = (value: unknown): value is string =>
  typeof value === 'string' && value !== '' && [...value].every((c) => c > ' ' && c !== '\x7f' && c.trim());

/** Printable, not "//host" (another host) and no backslash (browsers read it as "/"): what a URL rule and `uriHook` both ask. */
const noOtherHost = (value: unknown): value is string =>
  printable(value) && !value.startsWith('//') && !value.includes('\\');

/** `uriHook`: a path on the page's own domain, never a complete URL: no scheme, host, port, "//", "..", query or fragment. */
export const isUriHook = (value: unknown): boolean =>
  noOtherHost(value) && !/[:?#]|(^|\/)\.\.(\/|$)|^[\w-]+(\.[\w-]+)+(\/|$)/.test(value);

/**
 * An https URL without credentials (http only on loopback, for local testing), or a path
 * on the page's origin (not "//host"); printable, no backslash. The browser's own URL
 * parser decides what is absolute; an https URL or a path meets no pattern.
 */
export const URL_RULE = (value: unknown): boolean => noOtherHost(value) && (value.startsWith('/') || isSafeUrl(value));

/** Not a path from the root: an https URL (http on loopback) without credentials, or a path relative to the page (no scheme). */
const isSafeUrl = (value: string): boolean => {
  try {
    const url = new URL(value);
    // Loopback as the URL parser writes it: every IPv4 host as four decimal parts, and a name
    // whose last label is a number is no name, so "127.x.x.x" is 127.0.0.0/8. A pattern met
    // only by plain-http URLs (local testing).
    return (
      (url.protocol === 'https:' ||
        (url.protocol === 'http:' && /^(localhost|127(\.\d+){3}|\[::1\])$/.test(url.hostname))) &&
      !(url.username + url.password)
    );
  } catch {
    // No scheme: a relative path. A scheme the parser refuses ("https://[x") is refused.
    return !/^[a-z][a-z\d+.-]*:/i.test(value);
  }
};

/**
 * `globalName`: a JavaScript identifier (whether it shadows another global is checked on the
 * page). `/i` without `u` folds ASCII letters only: `[a-z]` is `[A-Za-z]`.
 */
export const isIdentifier = (value: unknown): boolean => typeof value === 'string' && /^[a-z_$][\w$]*$/i.test(value);

export const isFunction = (value: unknown): boolean => typeof value === 'function';

/** An AbortSignal, duck-typed: one from another realm (an iframe's) passes too. */
export const isSignal = (value: any): boolean =>
  typeof value?.aborted === 'boolean' && isFunction(value.addEventListener);

/**
 * `input` as a snapshot (no prototype, each value read once) whose values pass `rules`;
 * `name` is the option `input` was given as, `prefix` names its options.
 */
export function checked(rules: Rules, input: unknown, name: string, prefix = ''): Record<string, any> {
  // `throw fault(…)` as the calls write their refusals: gzip sends the repeated text almost free.
  if (!isPlainObject(input)) throw fault('invalid_option', [name, input]);
  const options = snapshot(input);
  for (const key in rules) {
    const rule = rules[key]!;
    const value = options[key];
    if ((value !== undefined || rule === URL_RULE) && !rule(value))
      throw fault('invalid_option', [prefix + key, value]);
  }
  return options;
}
