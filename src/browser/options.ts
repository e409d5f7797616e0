/**
 * Option types and their validation. Validation is pure: it reads no window or
 * document, so bad options are rejected before anything on the page changes.
 */
import type { VendorPassthrough } from '../shared/types.js';
import { BlackboxCaptureError, invalidOption } from './errors.js';
import { messages } from './messages.js';

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
}

export interface NormalizedPost {
  url: string;
  headers: Record<string, string>;
  credentials: RequestCredentials;
  body: (blackbox: string) => unknown;
  maxAttempts: number;
  timeoutMs: number;
  fetch?: typeof fetch;
}

/** The options that reach the vendor's config: they must agree across calls on one page. */
export interface LoaderOptions {
  loaderUrl: string;
  globalName?: string;
  uriHook?: string;
  version?: string;
  subkey?: string;
  enableRip?: boolean;
  vendor: VendorPassthrough;
}

export interface NormalizedOptions extends LoaderOptions {
  onTrace?: (message: string) => void;
  onUpdate?: (blackbox: string, complete: boolean) => void;
  field?: FieldTarget;
  post?: NormalizedPost;
  timeoutMs: number;
  nonce?: string;
  signal?: AbortSignal;
}

const OPTION_NAMES = [
  'loaderUrl', 'globalName', 'uriHook', 'version', 'subkey', 'enableRip', 'onTrace', 'onUpdate',
  'field', 'post', 'timeoutMs', 'nonce', 'signal', 'vendor',
] as const;
const POST_NAMES = ['url', 'headers', 'credentials', 'body', 'maxAttempts', 'timeoutMs', 'fetch'] as const;
const VENDOR_BOOLEANS = [
  'tp', 'fp_static', 'fp_dyn', 'tp_split', 'enable_legacy_compatibility', 'url_dots_to_dashes',
  'enable_flash', 'install_flash',
] as const;
const VENDOR_NAMES = [...VENDOR_BOOLEANS, 'tp_host', 'tp_resource', 'fp_static_override_uri'] as const;

const SCHEME = /^[a-z][a-z\d+.-]*:/i;
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;
const HAS_SPACE_OR_CONTROL = /[\s\u0000-\u001f\u007f]/;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function checkKeys(where: string, value: Record<string, unknown>, known: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) throw new BlackboxCaptureError('invalid_option', messages.unknownOption(where + key, known));
  }
}

function checkString(name: string, value: unknown, expected = 'a non-empty string'): string {
  if (typeof value !== 'string' || value === '' || HAS_SPACE_OR_CONTROL.test(value)) {
    throw invalidOption(name, expected, value);
  }
  return value;
}

/** An https URL (http only on loopback, for local testing), or a path on the page's origin. */
function checkUrl(name: string, value: unknown): string {
  const expected = 'an https URL or a path on the page\'s origin';
  const url = checkString(name, value, expected);
  if (SCHEME.test(url)) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw invalidOption(name, expected, value);
    }
    const secure = parsed.protocol === 'https:' || (parsed.protocol === 'http:' && LOOPBACK.test(parsed.hostname));
    if (!secure || parsed.username || parsed.password) throw invalidOption(name, expected, value);
  } else if (url.startsWith('//') || url.includes('\\')) {
    throw invalidOption(name, expected, value);
  }
  return url;
}

/** `uri_hook`: a path on the page's own domain, never a complete URL. */
function checkUriHook(value: unknown): string {
  const expected = 'a path such as "/iojs" (no scheme, host, port, "//", "..", query or fragment)';
  const hook = checkString('uriHook', value, expected);
  const firstSegment = hook.split('/')[0]!;
  if (
    hook.startsWith('//') ||
    /[:?#\\]/.test(hook) ||
    hook.split('/').includes('..') ||
    /^[\w-]+(\.[\w-]+)+$/.test(firstSegment) // "example.com/iojs": a host without a scheme
  ) {
    throw invalidOption('uriHook', expected, value);
  }
  return hook;
}

function checkFunction<T>(name: string, value: unknown): T {
  if (typeof value !== 'function') throw invalidOption(name, 'a function', value);
  return value as T;
}

function checkTimeout(name: string, value: unknown): number {
  if (typeof value !== 'number' || !(value > 0 && value <= 600_000)) {
    throw invalidOption(name, 'a number of milliseconds from 1 to 600000', value);
  }
  return value;
}

function checkVendor(value: unknown): VendorPassthrough {
  if (value === undefined) return {};
  if (!isObject(value)) throw invalidOption('vendor', 'an object of loader keys', value);
  checkKeys('vendor.', value, VENDOR_NAMES);
  for (const key of VENDOR_BOOLEANS) {
    const v = value[key];
    if (v !== undefined && v !== true && v !== false && v !== '1' && v !== '0' && v !== 'true' && v !== 'false') {
      throw invalidOption('vendor.' + key, 'true, false, "1", "0", "true" or "false"', v);
    }
  }
  const host = value.tp_host;
  if (host !== undefined && (checkUrl('vendor.tp_host', host), !SCHEME.test(host as string) || new URL(host as string).origin !== host)) {
    throw invalidOption('vendor.tp_host', 'an origin such as "https://host.example" (no path, no trailing slash)', host);
  }
  if (value.tp_resource !== undefined && !/^[\w.-]+\.js$/.test(String(value.tp_resource))) {
    throw invalidOption('vendor.tp_resource', 'a script file name such as "wdp.js"', value.tp_resource);
  }
  if (value.fp_static_override_uri !== undefined) checkUrl('vendor.fp_static_override_uri', value.fp_static_override_uri);
  const on = (v: unknown) => v === undefined || v === true || v === '1' || v === 'true';
  // The loader's fp_dyn defaults to true and is invalid without fp_static: say so instead of guessing.
  if (!on(value.fp_static) && on(value.fp_dyn)) {
    throw invalidOption('vendor.fp_dyn', 'false when vendor.fp_static is off (the dynamic script needs the static one)', value.fp_dyn);
  }
  return { ...(value as VendorPassthrough) };
}

/** One shared function, so that repeated calls with the same options compare equal. */
const defaultBody = (blackbox: string) => ({ blackbox });

function checkPost(value: unknown): NormalizedPost {
  const post = typeof value === 'string' ? { url: value } : value;
  if (!isObject(post)) throw invalidOption('post', 'a URL or an object with "url"', value);
  checkKeys('post.', post, POST_NAMES);
  const headers = post.headers ?? {};
  if (!isObject(headers) || Object.values(headers).some((h) => typeof h !== 'string')) {
    throw invalidOption('post.headers', 'an object of string values', headers);
  }
  const credentials = post.credentials ?? 'same-origin';
  if (credentials !== 'omit' && credentials !== 'same-origin' && credentials !== 'include') {
    throw invalidOption('post.credentials', '"omit", "same-origin" or "include"', credentials);
  }
  const maxAttempts = post.maxAttempts ?? 4;
  if (typeof maxAttempts !== 'number' || !Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 10) {
    throw invalidOption('post.maxAttempts', 'a whole number from 1 to 10', maxAttempts);
  }
  return {
    url: checkUrl('post.url', post.url),
    headers: headers as Record<string, string>,
    credentials,
    body: post.body === undefined ? defaultBody : checkFunction('post.body', post.body),
    maxAttempts,
    timeoutMs: post.timeoutMs === undefined ? 10_000 : checkTimeout('post.timeoutMs', post.timeoutMs),
    ...(post.fetch === undefined ? {} : { fetch: checkFunction<typeof fetch>('post.fetch', post.fetch) }),
  };
}

/** Validates every option and fills per-call defaults; throws `invalid_option`. */
export function normalizeOptions(options: unknown): NormalizedOptions {
  if (!isObject(options)) throw invalidOption('options', 'an object with "loaderUrl"', options);
  checkKeys('', options, OPTION_NAMES);
  const o = options as Record<(typeof OPTION_NAMES)[number], unknown>;
  const out: NormalizedOptions = {
    loaderUrl: checkUrl('loaderUrl', o.loaderUrl),
    vendor: checkVendor(o.vendor),
    timeoutMs: o.timeoutMs === undefined ? 15_000 : checkTimeout('timeoutMs', o.timeoutMs),
  };
  if (o.globalName !== undefined) {
    out.globalName = checkString('globalName', o.globalName, 'a JavaScript identifier such as "IGLOO"');
    if (!/^[A-Za-z_$][\w$]*$/.test(out.globalName)) throw invalidOption('globalName', 'a JavaScript identifier such as "IGLOO"', o.globalName);
  }
  if (o.uriHook !== undefined) out.uriHook = checkUriHook(o.uriHook);
  if (o.version !== undefined && !/^(general5|early5|\d+\.\d+\.\d+)$/.test(out.version = checkString('version', o.version))) {
    throw invalidOption('version', '"general5", "early5" or a version such as "5.2.2"', o.version);
  }
  if (o.subkey !== undefined) {
    // The loader URL-encodes the subkey, so any printable text is safe.
    if (typeof o.subkey !== 'string' || !/^[^\u0000-\u001f\u007f]+$/.test(o.subkey)) throw invalidOption('subkey', 'a non-empty string', o.subkey);
    out.subkey = o.subkey;
  }
  if (o.enableRip !== undefined) {
    if (typeof o.enableRip !== 'boolean') throw invalidOption('enableRip', 'true or false', o.enableRip);
    out.enableRip = o.enableRip;
  }
  if (o.onTrace !== undefined) out.onTrace = checkFunction('onTrace', o.onTrace);
  if (o.onUpdate !== undefined) out.onUpdate = checkFunction('onUpdate', o.onUpdate);
  if (o.field !== undefined) {
    const field = o.field as { tagName?: unknown };
    if (typeof field === 'string' ? field === '' : !(isObject(field) && /^(INPUT|TEXTAREA)$/.test(String(field.tagName)))) {
      throw invalidOption('field', 'an element id, or an input or textarea element', o.field);
    }
    out.field = o.field as FieldTarget;
  }
  if (o.post !== undefined) out.post = checkPost(o.post);
  if (o.nonce !== undefined) out.nonce = checkString('nonce', o.nonce);
  if (o.signal !== undefined) {
    const signal = o.signal as AbortSignal;
    if (!isObject(signal) || typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
      throw invalidOption('signal', 'an AbortSignal', o.signal);
    }
    out.signal = signal;
  }
  return out;
}
