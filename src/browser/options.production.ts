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
import type { NormalizedOptions } from './options.js';
import {
  checked,
  isFunction,
  isIdentifier,
  isPlainObject,
  isSignal,
  isUriHook,
  URL_RULE,
  type Rules,
} from './rules.js';

/**
 * The rules kept, by option name; an undefined value passes (the default applies), but for
 * the URL rule: `loaderUrl`, and `post.url` when there is a `post`, are required.
 */
const KEPT: Rules = {
  loaderUrl: URL_RULE,
  uriHook: isUriHook,
  globalName: isIdentifier,
  onTrace: isFunction,
  onUpdate: isFunction,
  onOutcome: isFunction,
  // A consent that is neither would never grant: a type check, kept.
  consent: (value: any) => isFunction(value) || isFunction(value?.then),
  signal: isSignal,
  vendor: isPlainObject,
};

/** The lean entry's rules (lean.ts): those kept for its options. */
export const LEAN_RULES: Rules = { loaderUrl: URL_RULE, uriHook: isUriHook };

// Where the blackbox goes: the page's origin or HTTPS, as in development (docs/browser.md#development-and-production-builds).
const POST: Rules = { url: URL_RULE, body: isFunction, fetch: isFunction };

export function normalizeOptions(input: unknown): NormalizedOptions {
  const options = checked(KEPT, input, 'options');
  const { post } = options;
  if (post !== undefined)
    options.post = checked(POST, typeof post === 'string' ? { url: post } : post, 'post', 'post.');
  options.vendor ??= {};
  options.timeoutMs ??= 15_000;
  return options as NormalizedOptions;
}
