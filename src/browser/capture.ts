/**
 * The core: one loader run per page, shared by every captureBlackbox() call.
 *
 * The vendor loader runs once per page (its run-once guard ignores later copies),
 * so this module keeps one "run" that owns the config object, the loader tag and
 * the latest blackbox. Each call subscribes to the run with its own field,
 * callback, time limit, signal and delivery.
 */
import type { VendorConfig, VendorLoaderConfig } from '../shared/types.js';
import { deliver } from './deliver.js';
import { BlackboxCaptureError } from './errors.js';
import { writeField } from './field.js';
import { findScript, injectScript, pageNonce } from './inject.js';
import { messages } from './messages.js';
import { normalizeOptions, type CaptureOptions, type LoaderOptions, type NormalizedOptions } from './options.js';

type Field = HTMLInputElement | HTMLTextAreaElement;
/** Our handlers carry the page's own one, so a later run chains to the page's, not to ours. */
type Chained<F> = F & { page?: F; bbc?: true };
type BbCallback = Chained<NonNullable<VendorConfig['bb_callback']>>;
type TraceHandler = Chained<NonNullable<VendorLoaderConfig['trace_handler']>>;
const pageHandler = <F>(handler: Chained<F> | undefined): F | undefined => (handler?.bbc ? handler.page : handler);

/** The options that reach the vendor's config: every call on a page must agree on them. */
const LOADER_KEYS = ['loaderUrl', 'globalName', 'uriHook', 'version', 'subkey', 'enableRip', 'vendor'] as const;

/** The collection scripts the loader may load, by the name of their failure flag. */
const COLLECTION_SCRIPTS = ['fp_static_wdp', 'fp_dyn_wdp', 'io_wdp', 'io_static_wdp', 'io_dyn_wdp'] as const;
type CollectionScript = (typeof COLLECTION_SCRIPTS)[number];

interface Call {
  options: NormalizedOptions;
  promise: Promise<string>;
}

interface Run {
  loaderOptions: LoaderOptions;
  config: VendorConfig;
  loader: VendorLoaderConfig;
  script?: HTMLScriptElement;
  blackbox?: string;
  complete?: boolean;
  error?: BlackboxCaptureError;
  failed: Set<CollectionScript>;
  listeners: Set<() => void>;
  traces: Set<(message: string) => void>;
  calls: Call[];
  stopWatching: () => void;
}

let run: Run | undefined;

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
};

/** The vendor's boolean parsing: true/false, "1"/"0", "true"/"false". */
const vendorBool = (value: unknown, fallback: boolean): boolean =>
  value === true || value === '1' || value === 'true' || value === 1
    ? true
    : value === false || value === '0' || value === 'false' || value === 0
      ? false
      : fallback;

/** Deep equality of option values; functions, elements and signals by identity. */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!isPlainObject(a) || !isPlainObject(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => same(a[k], b[k]));
}

/** The collection scripts this configuration makes the loader load. */
function expectedScripts(loader: VendorLoaderConfig): CollectionScript[] {
  const fpStatic = vendorBool(loader.fp_static, true);
  const list: CollectionScript[] = [];
  if (fpStatic) list.push('fp_static_wdp');
  if (fpStatic && vendorBool(loader.fp_dyn, true)) list.push('fp_dyn_wdp');
  if (vendorBool(loader.tp, true)) list.push(...(vendorBool(loader.tp_split, false) ? (['io_static_wdp', 'io_dyn_wdp'] as const) : (['io_wdp'] as const)));
  return list;
}

function notify(r: Run): void {
  r.listeners.forEach((listener) => listener());
}

/** Reports an integrator callback's exception without breaking the vendor's flow. */
function safely(fn: () => void): void {
  try {
    fn();
  } catch (error) {
    // Shown in the console like any uncaught error, without breaking the caller.
    if (typeof reportError === 'function') reportError(error);
    else
      setTimeout(() => {
        throw error;
      });
  }
}

function fail(r: Run, error: BlackboxCaptureError): void {
  if (r.error || r.complete) return;
  r.error = error;
  r.stopWatching();
  if (r.script && error.code === 'loader_failed') r.script.remove();
  if (error.code === 'collection_failed') {
    // Undo the loader's run-once marker and flags so that a later call can run it again.
    r.script?.remove();
    for (const key of ['loaderMain', 'loaderVer', ...COLLECTION_SCRIPTS.map((s) => s + '_load_failure')]) delete r.loader[key];
  }
  if (run === r) run = undefined; // the next call starts afresh
  notify(r);
}

/** "first-party static_wdp.js, third-party wdp.js (cause…)" for messages; "" for none. */
function describeScripts(r: Run, scripts: CollectionScript[]): string {
  if (scripts.length === 0) return '';
  const names = scripts.map((s) => s.replace('fp_', 'first-party ').replace('io_', 'third-party ') + '.js').join(', ');
  const causes = [
    scripts.some((s) => s.startsWith('fp_')) ? messages.firstPartyCause(String(r.loader.uri_hook ?? '/iojs/')) : '',
    scripts.some((s) => s.startsWith('io_')) ? messages.thirdPartyCause() : '',
  ].filter(Boolean);
  return `${names}. ${causes.join(' ')}`;
}

function onScriptFailed(r: Run, script: CollectionScript): void {
  r.failed.add(script);
  const expected = expectedScripts(r.loader);
  if (r.complete || !expected.every((s) => r.failed.has(s))) return; // a working source may still finish
  fail(r, new BlackboxCaptureError('collection_failed', messages.collectionFailed(describeScripts(r, expected)), r.blackbox === undefined ? {} : { blackbox: r.blackbox }));
}

/**
 * Watches the loader's `*_load_failure` flags (it sets them on a script's error
 * event) and same-origin collection scripts that fail to parse (an HTML page
 * answered in place of `dyn_wdp.js`), so that a dead capture fails at once.
 */
function watchFailures(r: Run): () => void {
  for (const script of COLLECTION_SCRIPTS) {
    const key = script + '_load_failure';
    let value = r.loader[key];
    if (value !== undefined && vendorBool(value, true)) r.failed.add(script);
    Object.defineProperty(r.loader, key, {
      configurable: true,
      enumerable: true,
      get: () => value,
      set: (next) => {
        value = next;
        if (vendorBool(next, true)) onScriptFailed(r, script);
      },
    });
  }
  const onError = (event: ErrorEvent) => {
    const file = /\/(static|dyn)_wdp\.js(\?|$)/.exec(event.filename || '');
    if (file && (event.error as Error | null)?.name === 'SyntaxError' && new URL(event.filename).origin === location.origin) {
      onScriptFailed(r, file[1] === 'static' ? 'fp_static_wdp' : 'fp_dyn_wdp');
    }
  };
  window.addEventListener('error', onError);
  return () => window.removeEventListener('error', onError);
}

/** The loader option that differs, as [name, running, requested]. */
function conflict(running: LoaderOptions, requested: LoaderOptions): [string, unknown, unknown] | undefined {
  for (const key of LOADER_KEYS) {
    if (!same(running[key], requested[key])) return [key, running[key], requested[key]];
  }
  return undefined;
}

/** Builds or merges the page's config object and starts (or adopts) the loader. */
function startRun(options: NormalizedOptions): Run {
  const w = window as unknown as Record<string, unknown>;
  const pageName = w.io_global_object_name;
  if (options.globalName && pageName !== undefined && pageName !== options.globalName) {
    throw new BlackboxCaptureError('option_conflict', messages.conflict('io_global_object_name', pageName, options.globalName));
  }
  const name = options.globalName ?? (typeof pageName === 'string' ? pageName : 'IGLOO');
  const existing = w[name];
  if (existing !== undefined && !isPlainObject(existing)) {
    throw new BlackboxCaptureError('invalid_option', messages.shadowedGlobal(name, existing));
  }
  const config = (existing ?? {}) as VendorConfig;
  const loader = (isPlainObject(config.loader) ? config.loader : {}) as VendorLoaderConfig;
  const vendorTopLevel = ['enable_flash', 'install_flash'];
  const wanted: Record<string, unknown> = { version: options.version, uri_hook: options.uriHook, subkey: options.subkey };
  for (const [key, value] of Object.entries(options.vendor)) if (!vendorTopLevel.includes(key)) wanted[key] = value;

  if (loader.loaderMain) {
    // The loader has run already: settings it did not see would be silently ignored.
    for (const [key, value] of Object.entries(wanted)) {
      if (value !== undefined && loader[key] !== value) {
        throw new BlackboxCaptureError('option_conflict', messages.conflict('loader.' + key, loader[key], value));
      }
    }
  }

  // Nothing was written before this point.
  if (name !== 'IGLOO') w.io_global_object_name = name;
  w[name] = config;
  config.loader = loader;
  for (const [key, value] of Object.entries(wanted)) if (value !== undefined) loader[key] = value;
  loader.version ??= 'general5';
  loader.uri_hook ??= '/iojs';
  for (const key of vendorTopLevel) if (key in options.vendor) config[key] = options.vendor[key as 'enable_flash'];
  if (options.enableRip !== undefined || config.enable_rip === undefined) config.enable_rip = options.enableRip ?? true;

  const loaderOptions = {} as Record<string, unknown>;
  for (const key of LOADER_KEYS) loaderOptions[key] = options[key];
  const r: Run = {
    loaderOptions: loaderOptions as unknown as LoaderOptions,
    config,
    loader,
    failed: new Set(),
    listeners: new Set(),
    traces: new Set(),
    calls: [],
    stopWatching: () => {},
  };

  const pageTrace = pageHandler(loader.trace_handler as TraceHandler | undefined);
  const trace: TraceHandler = (message) => {
    if (pageTrace) safely(() => pageTrace(message));
    r.traces.forEach((onTrace) => safely(() => onTrace(message)));
  };
  trace.page = pageTrace;
  trace.bbc = true;
  loader.trace_handler = trace;

  const pageCallback = pageHandler(config.bb_callback as BbCallback | undefined);
  const accept = (blackbox: unknown, complete: unknown) => {
    if (r.complete || r.error || typeof blackbox !== 'string') return;
    r.blackbox = blackbox;
    if (vendorBool(complete, false)) {
      if (!blackbox) return fail(r, new BlackboxCaptureError('collection_failed', messages.emptyBlackbox()));
      r.complete = true;
      r.stopWatching();
    }
    notify(r);
  };
  const callback: BbCallback = (blackbox, complete) => {
    if (pageCallback) safely(() => pageCallback(blackbox, complete));
    accept(blackbox, complete);
  };
  callback.page = pageCallback;
  callback.bbc = true;
  config.bb_callback = callback;

  r.stopWatching = watchFailures(r);

  const state = config.getBlackbox?.();
  if (state?.blackbox) accept(state.blackbox, state.finished); // adopting a loader that already produced values

  if (!loader.loaderMain) {
    const href = new URL(options.loaderUrl, document.baseURI).href;
    const onLoad = () => {
      if (!loader.loaderMain) fail(r, new BlackboxCaptureError('loader_failed', messages.loaderNotRun(href), { url: href }));
    };
    const onError = (cause?: unknown) =>
      fail(r, new BlackboxCaptureError('loader_failed', messages.loaderFailed(href), { url: href, cause }));
    const found = findScript(href);
    if (found) {
      // The page's own tag (or ours from a failed run that the page kept): wait for it.
      found.addEventListener('load', onLoad);
      found.addEventListener('error', () => onError());
    } else {
      r.script = injectScript(href, options.nonce ?? pageNonce(), onLoad, onError);
      if (r.error) r.script.remove(); // it failed while being inserted
    }
  }
  return r;
}

function subscribe(r: Run, options: NormalizedOptions, field: Field | undefined): Promise<string> {
  const { signal, onUpdate, onTrace, post, timeoutMs } = options;
  let done = false;
  let lastSeen: string | undefined;
  return new Promise<string>((resolve, reject) => {
    const finish = (error: unknown, blackbox?: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      r.listeners.delete(listener);
      signal?.removeEventListener('abort', onAbort);
      if (error) {
        r.calls = r.calls.filter((c) => c.options !== options);
        reject(error);
      } else resolve(blackbox!);
    };
    const onAbort = () =>
      finish(new BlackboxCaptureError('aborted', messages.aborted(), { cause: signal!.reason, ...(r.blackbox === undefined ? {} : { blackbox: r.blackbox }) }));
    const listener = () => {
      if (r.error) return finish(r.error);
      const blackbox = r.blackbox;
      if (blackbox === undefined || (blackbox === lastSeen && !r.complete)) return;
      lastSeen = blackbox;
      // The page config's bbout_element_id is looked up on every write: the page may render it late.
      const target = field ?? (r.config.bbout_element_id ? (document.getElementById(r.config.bbout_element_id) as Field | null) : null);
      if (target) writeField(target, blackbox);
      if (onUpdate) safely(() => onUpdate(blackbox, !!r.complete));
      if (!r.complete) return;
      r.listeners.delete(listener);
      clearTimeout(timer);
      if (!post) return finish(undefined, blackbox);
      deliver(blackbox, post, signal).then(
        () => finish(undefined, blackbox),
        (error) => (signal?.aborted ? onAbort() : finish(error)),
      );
    };
    const timer = setTimeout(
      () =>
        finish(
          new BlackboxCaptureError('timeout', messages.timeout(timeoutMs, r.blackbox !== undefined, describeScripts(r, [...r.failed])), r.blackbox === undefined ? {} : { blackbox: r.blackbox }),
        ),
      timeoutMs,
    );
    signal?.addEventListener('abort', onAbort, { once: true });
    if (onTrace) r.traces.add(onTrace); // for the page's lifetime: traces go on after completion
    r.listeners.add(listener);
    listener(); // a late caller catches up with what the run already has
  });
}

/**
 * Captures the device blackbox: writes the vendor's config object, injects the
 * loader once per page, and resolves with the final blackbox (after delivering
 * it, when `post` is given).
 */
export function captureBlackbox(options: CaptureOptions): Promise<string> {
  try {
    const normalized = normalizeOptions(options);
    if (typeof window === 'undefined' || typeof document === 'undefined') {
      throw new BlackboxCaptureError('not_browser', messages.notBrowser());
    }
    const { signal, field } = normalized;
    if (signal?.aborted) throw new BlackboxCaptureError('aborted', messages.aborted(), { cause: signal.reason });
    const repeat = run?.calls.find((c) => same(c.options, normalized));
    if (repeat) return repeat.promise;

    let element: Field | undefined;
    if (typeof field === 'string') {
      const found = document.getElementById(field);
      if (!found || !/^(INPUT|TEXTAREA)$/.test(found.tagName)) throw new BlackboxCaptureError('invalid_option', messages.fieldMissing(field));
      element = found as Field;
    } else element = field;

    if (run) {
      const differs = conflict(run.loaderOptions, normalized);
      if (differs) throw new BlackboxCaptureError('option_conflict', messages.conflict(...differs));
    }
    let r = run;
    if (!r) {
      r = startRun(normalized);
      if (!r.error) run = r;
    }
    const promise = subscribe(r, normalized, element);
    r.calls.push({ options: normalized, promise });
    return promise;
  } catch (error) {
    return Promise.reject(error);
  }
}

