/**
 * Option types and their validation. Validation is pure: it reads no window or
 * document, so bad options are rejected before anything on the page changes.
 * The rules are tables of small checks, to keep the bundle small.
 */
import type { VendorPassthrough } from '../shared/types.js';
import { BlackboxCaptureError, invalidOption } from './errors.js';
import * as messages from './messages.js';

export type FieldTarget = string | HTMLInputElement | HTMLTextAreaElement;

export interface PostOptions {
  /** The integrator's endpoint: an https URL, or a path on the page's origin. */
  url: string;
  /** Extra request headers, e.g. a CSRF token. */
  headers?: Record<string, string>;
  /** fetch credentials mode (default `same-origin`). */
  credentials?: RequestCredentials;
  /** Builds the JSON body (default `{ blackbox }`). */
  body?: (blackbox: string) => unknown;
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
  /** An input or textarea (or its id) that receives every update. */
  field?: FieldTarget;
  /** Deliver the final blackbox to the integrator's endpoint. */
  post?: string | PostOptions;
  /** Time limit for the final blackbox in ms. Default 15000. */
  timeoutMs?: number;
  /** CSP nonce for the injected loader tag. Default: taken from a `script[nonce]` on the page. */
  nonce?: string;
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

export type NormalizedPost = Required<Omit<PostOptions, 'fetch'>> & Pick<PostOptions, 'fetch'>;

/** The options that reach the vendor's config: they must agree across calls on one page. */
export const LOADER_KEYS = ['loaderUrl', 'globalName', 'uriHook', 'version', 'subkey', 'enableRip', 'vendor', 'inject'] as const;
export type LoaderOptions = Pick<NormalizedOptions, (typeof LOADER_KEYS)[number]>;

export interface NormalizedOptions extends Omit<CaptureOptions, 'post' | 'vendor' | 'timeoutMs'> {
  vendor: VendorPassthrough;
  post?: NormalizedPost;
  timeoutMs: number;
}

type Check = (name: string, value: unknown) => unknown;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A string matching `pattern`, else invalid_option naming `expected`. */
const matching =
  (pattern: RegExp, expected: string): Check =>
  (name, value) =>
    typeof value === 'string' && pattern.test(value) ? value : invalidOption(name, expected, value);

const PRINTABLE = /^[^\s\0-\x1f\x7f]+$/;
const URL_EXPECTED = "an https URL or a path on the page's origin";

/** An https URL (http only on loopback, for local testing), or a path on the page's origin. */
const url: Check = (name, value) => {
  const text = matching(PRINTABLE, URL_EXPECTED)(name, value) as string;
  let ok = !/^\/\/|\\/.test(text);
  if (/^[a-z][a-z\d+.-]*:/i.test(text)) {
    try {
      const parsed = new URL(text);
      ok = (parsed.protocol === 'https:' || (parsed.protocol === 'http:' && /^(localhost|127(\.\d+){3}|\[::1\])$/.test(parsed.hostname))) && !parsed.username && !parsed.password;
    } catch {
      ok = false;
    }
  }
  return ok ? text : invalidOption(name, URL_EXPECTED, value);
};

const ofType =
  (type: string, expected: string): Check =>
  (name, value) =>
    typeof value === type ? value : invalidOption(name, expected, value);
const fn = ofType('function', 'a function');
const bool = ofType('boolean', 'true or false');
const ms: Check = (name, value) => (typeof value === 'number' && value > 0 && value <= 600_000 ? value : invalidOption(name, 'a number of milliseconds from 1 to 600000', value));
const vendorBool: Check = (name, value) => ([true, false, '1', '0', 'true', 'false'].includes(value as string) ? value : invalidOption(name, 'true, false, "1", "0", "true" or "false"', value));

/** Rejects names not in `table`, then runs each check; returns the checked values. */
function checkAll(prefix: string, value: Record<string, unknown>, table: Record<string, Check>): Record<string, unknown> {
  const known = Object.keys(table);
  const out: Record<string, unknown> = {};
  for (const key in value) {
    if (!known.includes(key)) throw new BlackboxCaptureError('invalid_option', messages.unknownOption(prefix + key, known));
    if (value[key] !== undefined) out[key] = table[key]!(prefix + key, value[key]);
  }
  return out;
}

const VENDOR: Record<string, Check> = {
  tp: vendorBool,
  fp_static: vendorBool,
  fp_dyn: vendorBool,
  tp_split: vendorBool,
  enable_legacy_compatibility: vendorBool,
  url_dots_to_dashes: vendorBool,
  enable_flash: vendorBool,
  install_flash: vendorBool,
  // The loader appends "/version/…" to it: an origin, nothing more.
  tp_host: (name, value) => {
    const text = url(name, value) as string;
    return /^https?:\/\/[^/?#]+$/.test(text) ? text : invalidOption(name, 'an origin such as "https://host.example"', value);
  },
  tp_resource: matching(/^[\w.-]+\.js$/, 'a script file name such as "wdp.js"'),
  fp_static_override_uri: url,
};

/** One shared default, so that repeated calls with the same options compare equal. */
const defaultBody = (blackbox: string) => ({ blackbox });

const POST: Record<string, Check> = {
  url,
  headers: (name, value) => (isObject(value) && Object.values(value).every((h) => typeof h === 'string') ? value : invalidOption(name, 'an object of string values', value)),
  credentials: matching(/^(omit|same-origin|include)$/, '"omit", "same-origin" or "include"'),
  body: fn,
  maxAttempts: (name, value) => (Number.isInteger(value) && (value as number) > 0 && (value as number) <= 10 ? value : invalidOption(name, 'a whole number from 1 to 10', value)),
  timeoutMs: ms,
  fetch: fn,
};

const OPTIONS: Record<keyof CaptureOptions, Check> = {
  loaderUrl: url,
  globalName: matching(/^[A-Za-z_$][\w$]*$/, 'a JavaScript identifier such as "IGLOO"'),
  // A path on the page's own domain, never a complete URL: no scheme, host, port, "//", "..", query or fragment.
  uriHook: (name, value) =>
    typeof value === 'string' && PRINTABLE.test(value) && !/^\/\/|[:?#\\]|(^|\/)\.\.(\/|$)|^[\w-]+(\.[\w-]+)+(\/|$)/.test(value)
      ? value
      : invalidOption(name, 'a path such as "/iojs" (no host, port, "//", "..", query or fragment)', value),
  version: matching(/^(general5|early5|\d+\.\d+\.\d+)$/, '"general5", "early5" or a version such as "5.2.2"'),
  // The loader URL-encodes the subkey, so any printable text is safe.
  subkey: matching(/^[^\0-\x1f\x7f]+$/, 'a non-empty string'),
  enableRip: bool,
  inject: bool,
  onTrace: fn,
  onUpdate: fn,
  field: (name, value) =>
    (typeof value === 'string' ? value : /^(INPUT|TEXTAREA)$/.test((value as { tagName?: string } | null)?.tagName ?? ''))
      ? value
      : invalidOption(name, 'an element id, or an input or textarea element', value),
  post: (name, value) => {
    const post = checkAll('post.', typeof value === 'string' ? { url: value } : isObject(value) ? value : invalidOption(name, 'a URL or an object with "url"', value), POST);
    return { url: url('post.url', post.url), headers: {}, credentials: 'same-origin', body: defaultBody, maxAttempts: 4, timeoutMs: 10_000, ...post };
  },
  timeoutMs: ms,
  nonce: matching(PRINTABLE, 'a non-empty string'),
  signal: (name, value) =>
    typeof (value as AbortSignal | null)?.aborted === 'boolean' && typeof (value as AbortSignal).addEventListener === 'function' ? value : invalidOption(name, 'an AbortSignal', value),
  vendor: (name, value) => {
    const vendor = checkAll('vendor.', isObject(value) ? value : invalidOption(name, 'an object of loader keys', value), VENDOR);
    // The loader's fp_dyn defaults to true and is invalid without fp_static: say so instead of guessing.
    const on = (v: unknown) => v === undefined || v === true || v === '1' || v === 'true';
    return on(vendor.fp_static) || !on(vendor.fp_dyn) ? vendor : invalidOption('vendor.fp_dyn', 'false when vendor.fp_static is off', vendor.fp_dyn);
  },
};

/** Validates every option and fills per-call defaults; throws `invalid_option`. */
export function normalizeOptions(options: unknown): NormalizedOptions {
  if (!isObject(options)) return invalidOption('options', 'an object with "loaderUrl"', options);
  if (options.loaderUrl === undefined) return invalidOption('loaderUrl', URL_EXPECTED + ' (it is required)', undefined);
  return { vendor: {}, timeoutMs: 15_000, ...checkAll('', options, OPTIONS) } as unknown as NormalizedOptions;
}
