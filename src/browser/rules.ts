/**
 * The rules both builds keep: the checks whose input can come from runtime data and
 * whose failure would make the vendor loader misbehave without a trace, and the
 * vendor's own value parsing. options.ts (development) and options.production.ts
 * both use them.
 */

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
const ON = ['1', 'true'];
export const OFF = ['0', 'false'];
export const vendorFlagValues = [...ON, ...OFF];
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

/**
 * An https URL without credentials (http only on loopback, for local testing), or a path
 * on the page's origin (not "//host"); printable, no backslash. The browser's own URL
 * parser decides what is absolute; an https URL or a path meets no pattern.
 */
export const URL_RULE = (value: unknown): boolean => {
  if (!printable(value) || value.startsWith('//') || value.includes('\\')) return false;
  if (value[0] === '/') return true;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    // No scheme: a relative path. A scheme the parser refuses ("https://[x") is refused.
    return !/^[a-z][a-z\d+.-]*:/i.test(value);
  }
  const { protocol } = url;
  return (
    (protocol === 'https:' || (protocol === 'http:' && isLoopback(url.hostname))) && !(url.username + url.password)
  );
};

/**
 * A loopback host as the URL parser writes it: it writes every IPv4 host as four decimal
 * parts, and a name whose last label is a number is no name, so four decimal parts starting
 * with 127 are 127.0.0.0/8. A pattern: only plain-http URLs (local testing) meet it.
 */
const isLoopback = (hostname: string): boolean => /^(localhost|127(\.\d+){3}|\[::1\])$/.test(hostname);

/** `uriHook`: a path on the page's own domain, never a complete URL: no scheme, host, port, "//", "..", query or fragment. */
export const isUriHook = (value: unknown): boolean =>
  printable(value) && !/^\/\/|[:?#\\]|(^|\/)\.\.(\/|$)|^[\w-]+(\.[\w-]+)+(\/|$)/.test(value);

/** `globalName`: a JavaScript identifier (whether it shadows another global is checked on the page). */
export const GLOBAL_NAME = /^[A-Za-z_$][\w$]*$/;

export const isSignal = (value: any): boolean =>
  typeof value?.aborted === 'boolean' && typeof value.addEventListener === 'function';
