/**
 * Option types and their validation, as the development build runs it: every rule,
 * unknown names refused. (The production build swaps this module for
 * options.production.ts, which keeps only the checks listed there.) Validation is
 * pure: it reads no window or document, so bad options are rejected before anything
 * on the page changes. What each option expects is spelt out in messages.ts, which
 * is loaded only when one fails.
 */
import type { CaptureOutcome, VendorPassthrough } from '../shared/types.js';
import { fault, invalidOption } from './errors.js';
import {
  isIdentifier,
  isPlainObject,
  isSignal,
  isUriHook,
  LEAN_KEYS,
  OFF,
  ON,
  printable,
  snapshot,
  URL_RULE,
  type Rules,
} from './rules.js';

export type FieldTarget = string | HTMLInputElement | HTMLTextAreaElement;

export interface PostOptions {
  /** The integrator's endpoint: an https URL, or a path on the page's origin. */
  url: string;
  /** Extra request headers, e.g. a CSRF token. */
  headers?: Record<string, string>;
  /** fetch credentials mode (default `same-origin`). */
  credentials?: RequestCredentials;
  /** Builds the JSON body (default `{ blackbox, outcome }`). */
  body?: (blackbox: string, outcome: CaptureOutcome) => unknown;
  /** Attempts in all, retries included (default 4, at most 10). */
  maxAttempts?: number;
  /** Time limit of one attempt in ms (default 10000). */
  timeoutMs?: number;
  /** A fetch implementation (default the page's). */
  fetch?: typeof fetch;
}

export interface CaptureOptions {
  /** The vendor's loader script: an https URL, or a path on the page's origin. Required. */
  loaderUrl: string;
  /** Name of the config object (`window.io_global_object_name`). Default `IGLOO`. */
  globalName?: string;
  /** Path of the first-party reverse proxy (`loader.uri_hook`). Default `/iojs`. */
  uriHook?: string;
  /** `loader.version`: `general5` (default), `early5`, or a version such as `5.2.2`. */
  version?: string;
  /** `loader.subkey`, assigned by the vendor. */
  subkey?: string;
  /** `enable_rip`. Default true. */
  enableRip?: boolean;
  /** Receives the loader's trace messages (`loader.trace_handler`). */
  onTrace?: (message: string) => void;
  /** Called for every blackbox update (`bb_callback`). */
  onUpdate?: (blackbox: string, complete: boolean) => void;
  /** Called once as the call ends, resolved or rejected (not for refused options): how the capture went. */
  onOutcome?: (outcome: CaptureOutcome) => void;
  /**
   * Once every first-party script has failed and the third party has delivered, wait at
   * most this many ms for completion, then resolve with the third party's blackbox
   * (outcome `degraded-first-party`) instead of waiting for `timeoutMs`. Default 2000; the
   * run's first call decides.
   */
  degradedGraceMs?: number;
  /** An input or textarea (or its id) that receives every update. */
  field?: FieldTarget;
  /** Deliver the final blackbox to the integrator's endpoint. */
  post?: string | PostOptions;
  /** Time limit for the final blackbox in ms. Default 15000. */
  timeoutMs?: number;
  /** CSP nonce for the injected loader tag. Default: taken from a `script[nonce]` on the page. */
  nonce?: string;
  /**
   * Replay protection: the capture nonce your server issued for this customer
   * (`createCaptureNonce`); it travels with the blackbox (`{ blackbox, outcome, nonce }`).
   */
  captureNonce?: string;
  /**
   * The order token the gateway issued for this checkout (`npx blackbox-capture serve`): `post`
   * sends it as the `Order-Token` request header. Without `post` nothing is sent.
   */
  orderToken?: string;
  /**
   * Consent before collection: a promise, or a function returning a boolean or a promise.
   * Nothing is written to `window` and no script is injected until it grants (`true`); a
   * denial (anything else, or a rejection) rejects with `consent_denied`. An undecided
   * consent counts against `timeoutMs`.
   */
  consent?: PromiseLike<unknown> | (() => unknown);
  /** Cancels the capture (the loader itself cannot be stopped). */
  signal?: AbortSignal;
  /** Other documented loader keys, passed through as they are. */
  vendor?: VendorPassthrough;
  /**
   * Default true: inject the loader tag. False ("adopt"): the page's own loader tag,
   * placed right after this package's script tag, runs the loader; the package only
   * writes the config and reports. No extra round trip before the loader starts.
   */
  inject?: boolean;
}

/** `post` as a checked object, with the capture nonce and order token it carries; deliver.ts fills in the defaults. */
export type NormalizedPost = PostOptions & { captureNonce?: string; orderToken?: string };

export interface NormalizedOptions extends Omit<CaptureOptions, 'post' | 'vendor' | 'timeoutMs'> {
  vendor: VendorPassthrough;
  post?: NormalizedPost;
  timeoutMs: number;
}

/** A pattern for strings, a `typeof` name, or a predicate: true when the value is acceptable. */
type Rule = RegExp | string | ((value: any) => unknown);
const ms: Rule = (value) => typeof value === 'number' && value > 0 && value <= 600_000; // NaN fails both
const vendorFlagValues = [...ON, ...OFF];
const isVendorBoolean: Rule = (value) => typeof value === 'boolean' || vendorFlagValues.includes(value);

function valid(rule: Rule, value: unknown): unknown {
  return typeof rule === 'string'
    ? typeof value === rule
    : rule instanceof RegExp
      ? typeof value === 'string' && rule.test(value)
      : rule(value);
}

const own = (object: object, key: string) => Object.prototype.hasOwnProperty.call(object, key);

/** Rejects names not in `rules` (own names only: `constructor` is no option) and values they refuse; returns the defined values. */
function check(prefix: string, value: Record<string, unknown>, rules: Record<string, Rule>): Record<string, any> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (!own(rules, key)) throw fault('invalid_option', [prefix + key, Object.keys(rules)], {}, 'unknown_option');
    if (value[key] !== undefined) {
      if (!valid(rules[key]!, value[key])) invalidOption(prefix + key, value[key]);
      out[key] = value[key];
    }
  }
  return out;
}

const VENDOR: Record<string, Rule> = {
  tp: isVendorBoolean,
  fp_static: isVendorBoolean,
  fp_dyn: isVendorBoolean,
  tp_split: isVendorBoolean,
  enable_legacy_compatibility: isVendorBoolean,
  url_dots_to_dashes: isVendorBoolean,
  enable_flash: isVendorBoolean,
  install_flash: isVendorBoolean,
  // The loader appends "/version/…" to it: an origin, nothing more.
  tp_host: (value) => URL_RULE(value) && /^https?:\/\/[^/?#]+$/.test(value),
  tp_resource: /^[\w.-]+\.js$/,
  fp_static_override_uri: URL_RULE,
};

const POST: Record<string, Rule> = {
  url: URL_RULE,
  headers: (value) => isPlainObject(value) && Object.values(value).every((header) => typeof header === 'string'),
  credentials: /^(omit|same-origin|include)$/,
  body: 'function',
  maxAttempts: (value) => Number.isInteger(value) && value > 0 && value <= 10,
  timeoutMs: ms,
  fetch: 'function',
};

const OPTIONS: Record<keyof CaptureOptions, Rule> = {
  loaderUrl: URL_RULE,
  globalName: isIdentifier,
  uriHook: isUriHook,
  version: /^(general5|early5|\d+\.\d+\.\d+)$/,
  // The loader URL-encodes the subkey, so any printable text is safe.
  // eslint-disable-next-line no-control-regex -- control characters are what it refuses
  subkey: /^[^\0-\x1f\x7f]+$/,
  enableRip: 'boolean',
  inject: 'boolean',
  onTrace: 'function',
  onUpdate: 'function',
  onOutcome: 'function',
  degradedGraceMs: (value) => value === 0 || ms(value),
  // An element id, or an input or textarea element.
  field: (value) => (typeof value === 'string' ? value : /^(INPUT|TEXTAREA)$/.test(value?.tagName)),
  post: (value) => typeof value === 'string' || isPlainObject(value),
  timeoutMs: ms,
  nonce: printable,
  captureNonce: printable,
  orderToken: printable,
  consent: (value) => typeof value === 'function' || typeof value?.then === 'function',
  signal: isSignal,
  vendor: isPlainObject,
};

/**
 * The lean entry's rules (lean.ts), as checked() runs them: every rule of its options here,
 * `loaderUrl`'s the URL rule itself (checked() requires it).
 */
export const LEAN_RULES: Rules = {
  ...Object.fromEntries(
    LEAN_KEYS.map((key) => [key, (value: unknown) => valid(OPTIONS[key as keyof CaptureOptions], value)]),
  ),
  loaderUrl: URL_RULE,
};

/**
 * Validates every option and fills the defaults that calls compare; throws
 * `invalid_option`. Each option is read once, into a snapshot, and only the snapshot
 * is validated and used.
 */
export function normalizeOptions(input: unknown): NormalizedOptions {
  if (!isPlainObject(input)) invalidOption('options', input);
  const options = snapshot(input);
  if (options.loaderUrl === undefined) invalidOption('loaderUrl', undefined);
  const normalized: Record<string, any> = { vendor: {}, timeoutMs: 15_000, ...check('', options, OPTIONS) };
  if (normalized.post) {
    const post = typeof normalized.post === 'string' ? { url: normalized.post } : snapshot(normalized.post);
    if (isPlainObject(post.headers)) post.headers = snapshot(post.headers);
    normalized.post = check('post.', post, POST);
  }
  if (normalized.post && !normalized.post.url) invalidOption('post.url', undefined);
  const vendor = check('vendor.', snapshot(normalized.vendor), VENDOR);
  // The loader's fp_dyn defaults to true and is invalid without fp_static: say so instead of guessing.
  if (!OFF.includes(`${vendor.fp_dyn}`) && OFF.includes(`${vendor.fp_static}`))
    invalidOption('vendor.fp_dyn', vendor.fp_dyn);
  return { ...normalized, vendor } as NormalizedOptions;
}
