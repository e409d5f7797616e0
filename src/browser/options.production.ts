/**
 * The production build's option checks (it swaps options.ts for this module). Kept:
 * the checks whose input can come from runtime data and whose failure would make the
 * vendor loader misbehave without a trace, or send the blackbox where it must not go:
 * `loaderUrl` and `post.url` (scheme and origin), `uriHook`
 * never a complete URL, `globalName` an identifier (capture.ts checks that it shadows
 * no global), and the types of the functions and the signal. Dropped, to the
 * development build: unknown option names, every other value rule and the vendor keys'
 * rules. Every error code stays; each option is still read once, into a snapshot.
 */
import { invalidOption } from './errors.js';
import type { NormalizedOptions } from './options.js';
import { GLOBAL_NAME, isPlainObject, isSignal, isUriHook, snapshot, URL_RULE } from './rules.js';

const isFunction = (value: unknown) => typeof value === 'function';

/**
 * The rules kept, by option name; an undefined value passes (the default applies). No
 * prototype: a `__proto__` key (JSON.parse makes one) finds no rule, like any unknown name.
 */
const KEPT = {
  __proto__: null,
  loaderUrl: URL_RULE,
  uriHook: isUriHook,
  globalName: (value: unknown) => typeof value === 'string' && GLOBAL_NAME.test(value),
  onTrace: isFunction,
  onUpdate: isFunction,
  onOutcome: isFunction,
  // A consent that is neither would never grant: a type check, kept.
  consent: (value: any) => isFunction(value) || isFunction(value?.then),
  signal: isSignal,
  vendor: isPlainObject,
  'post.body': isFunction,
  'post.fetch': isFunction,
} as unknown as Record<string, (value: any) => unknown>;

function check(prefix: string, options: Record<string, any>): void {
  for (const key in options) {
    const rule = KEPT[prefix + key];
    if (rule && options[key] !== undefined && !rule(options[key])) invalidOption(prefix + key, options[key]);
  }
}

export function normalizeOptions(input: unknown): NormalizedOptions {
  if (!isPlainObject(input)) invalidOption('options', input);
  const options = snapshot(input);
  if (options.loaderUrl === undefined) invalidOption('loaderUrl', undefined);
  check('', options);
  if (options.post !== undefined) {
    options.post =
      typeof options.post === 'string'
        ? { url: options.post }
        : isPlainObject(options.post)
          ? snapshot(options.post)
          : invalidOption('post', options.post);
    // Where the blackbox goes: the page's origin or HTTPS, as in development (docs/browser.md#development-and-production-builds).
    if (!URL_RULE(options.post.url)) invalidOption('post.url', options.post.url);
    check('post.', options.post);
  }
  return { ...options, vendor: options.vendor ?? {}, timeoutMs: options.timeoutMs ?? 15_000 } as NormalizedOptions;
}
