/**
 * The core: one loader run per page, shared by every captureBlackbox() call.
 *
 * The vendor loader runs once per page (its run-once guard ignores later copies),
 * so this module keeps the page's one run in module state: the config object, the
 * loader tag, the latest blackbox. Each call subscribes to the run with its own
 * field, callback, time limit, signal and delivery. (Module state rather than an
 * object: local names minify, property names would not.)
 */
import type { VendorConfig, VendorLoaderConfig } from '../shared/types.js';
import { BlackboxCaptureError } from './errors.js';
import { writeField } from './field.js';
import { findScript, injectScript, pageNonce } from './inject.js';
import * as messages from './messages.js';
import { LOADER_KEYS, normalizeOptions, type CaptureOptions, type LoaderOptions, type NormalizedOptions } from './options.js';

type Field = HTMLInputElement | HTMLTextAreaElement;
/** Our handlers carry the page's own one, so a later run chains to the page's, not to ours. */
type Chained<F> = F & { page?: F; bbc?: 1 };
type Listener = (error?: BlackboxCaptureError) => void;

/** The collection scripts the loader may load, by the name of their failure flag. */
const SCRIPTS = ['fp_static_wdp', 'fp_dyn_wdp', 'io_wdp', 'io_static_wdp', 'io_dyn_wdp'];

/** Loader options of the page's current run; undefined when none runs. */
let running: LoaderOptions | undefined;
let config: VendorConfig;
let loader: VendorLoaderConfig;
let script: HTMLScriptElement | undefined;
let latest: string | undefined;
let complete: boolean;
let failure: BlackboxCaptureError | undefined;
let failed: string[];
let listeners: Set<Listener>;
let traces: Set<(message: string) => void>;
let calls: Array<[NormalizedOptions, Promise<string>]>;
/** Bumped when a run ends, so the handlers it left on the config object go quiet. */
let generation = 0;
let stopWatching: () => void;

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  !!value && typeof value === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(value));

/** The vendor's boolean parsing: true/false, "1"/"0", "true"/"false". */
const vendorBool = (value: unknown, fallback: boolean): boolean =>
  [true, 1, '1', 'true'].includes(value as string) ? true : [false, 0, '0', 'false'].includes(value as string) ? false : fallback;

/** Deep equality of option values; functions, elements and signals by identity. */
const same = (a: unknown, b: unknown): boolean =>
  a === b ||
  (isPlainObject(a) && isPlainObject(b) && Object.keys(a).length === Object.keys(b).length && Object.keys(a).every((k) => same(a[k], b[k])));

/** Reports an integrator callback's exception without breaking the vendor's flow. */
function safely(callback: () => void): void {
  try {
    callback();
  } catch (error) {
    // Shown in the console like any uncaught error.
    typeof reportError === 'function'
      ? reportError(error)
      : setTimeout(() => {
          throw error;
        });
  }
}

const pageHandler = <F>(handler: Chained<F> | undefined): F | undefined => (handler?.bbc ? handler.page : handler);
const chained = <F>(handler: F, page: F | undefined): Chained<F> => Object.assign(handler as Chained<F>, { page, bbc: 1 as const });

/** The collection scripts this configuration makes the loader load. */
function expectedScripts(): string[] {
  const fpStatic = vendorBool(loader.fp_static, true);
  const split = vendorBool(loader.tp_split, false);
  return SCRIPTS.filter((name, i) =>
    i < 2 ? fpStatic && (i === 0 || vendorBool(loader.fp_dyn, true)) : vendorBool(loader.tp, true) && (i === 2) !== split,
  );
}

/** "first-party static_wdp.js, third-party wdp.js. First party: …" for messages; "" for none. */
function describeScripts(list: string[]): string {
  const names = SCRIPTS.filter((name) => list.includes(name)); // a stable order, whatever failed first
  const firstParty = names.some((name) => name.startsWith('fp'));
  return names.length
    ? messages.failedScripts(
        names.map((name) => name.replace('fp_', 'first-party ').replace('io_', 'third-party ') + '.js').join(', '),
        firstParty && String(loader.uri_hook),
        names.some((name) => name.startsWith('io')),
      )
    : '';
}

function notify(error?: BlackboxCaptureError): void {
  listeners.forEach((listener) => listener(error));
}

function fail(error: BlackboxCaptureError): void {
  if (!running || complete) return;
  stopWatching();
  script?.remove(); // a later call injects afresh
  if (error.code === 'collection_failed') {
    // Undo the loader's run-once marker and flags so that a later call can run it again.
    for (const key of ['loaderMain', 'loaderVer', ...SCRIPTS.map((name) => name + '_load_failure')]) delete loader[key];
  }
  running = undefined;
  failure = error;
  generation++;
  notify(error);
}

function scriptFailed(name: string): void {
  if (!failed.includes(name)) failed.push(name);
  const expected = expectedScripts();
  // When only some failed, a working source may still finish (an ad blocker takes only the third party).
  if (expected.every((s) => failed.includes(s))) {
    fail(new BlackboxCaptureError('collection_failed', messages.collectionFailed(describeScripts(expected)), { blackbox: latest }));
  }
}

/**
 * Watches the loader's `*_load_failure` flags (it sets them on a script's error
 * event) and same-origin collection scripts that fail to parse (an HTML page
 * answered in place of `dyn_wdp.js`), so that a dead capture fails at once.
 */
function watchFailures(run: number): () => void {
  for (const name of SCRIPTS) {
    const key = name + '_load_failure';
    let value = loader[key];
    if (vendorBool(value, false)) failed.push(name);
    Object.defineProperty(loader, key, {
      configurable: true,
      enumerable: true,
      get: () => value,
      set(next) {
        value = next;
        if (run === generation && vendorBool(next, false)) scriptFailed(name);
      },
    });
  }
  const onError = ({ filename, error }: ErrorEvent) => {
    const file = /\/(static|dyn)_wdp\.js(\?|$)/.exec(filename);
    if (file && (error as Error | null)?.name === 'SyntaxError' && filename.startsWith(location.origin + '/')) scriptFailed(`fp_${file[1]}_wdp`);
  };
  addEventListener('error', onError);
  return () => removeEventListener('error', onError);
}

/** Builds or merges the page's config object and starts (or adopts) the loader. */
function startRun(options: NormalizedOptions): void {
  const w = window as unknown as Record<string, unknown>;
  const pageName = w.io_global_object_name as string | undefined;
  if (options.globalName && pageName !== undefined && pageName !== options.globalName) {
    throw new BlackboxCaptureError('option_conflict', messages.conflict('io_global_object_name', pageName, options.globalName));
  }
  const name = options.globalName ?? pageName ?? 'IGLOO';
  const existing = w[name];
  if (existing !== undefined && !isPlainObject(existing)) throw new BlackboxCaptureError('invalid_option', messages.shadowedGlobal(name, existing));
  const pageConfig = (existing ?? {}) as VendorConfig;
  const pageLoader = (isPlainObject(pageConfig.loader) ? pageConfig.loader : {}) as VendorLoaderConfig;
  const topLevel: Record<string, unknown> = { enable_rip: options.enableRip };
  const wanted: Record<string, unknown> = { version: options.version, uri_hook: options.uriHook, subkey: options.subkey };
  for (const [key, value] of Object.entries(options.vendor)) (/flash/.test(key) ? topLevel : wanted)[key] = value;
  if (pageLoader.loaderMain) {
    // The loader has run already: settings it did not see would be silently ignored.
    for (const [key, value] of Object.entries(wanted)) {
      if (value !== undefined && pageLoader[key] !== value) throw new BlackboxCaptureError('option_conflict', messages.conflict('loader.' + key, pageLoader[key], value));
    }
  }

  // Nothing was written before this point.
  const run = ++generation;
  running = {} as LoaderOptions;
  for (const key of LOADER_KEYS) (running as Record<string, unknown>)[key] = options[key];
  config = pageConfig;
  loader = pageLoader;
  script = latest = failure = undefined;
  complete = false;
  failed = [];
  listeners = new Set();
  traces = new Set();
  calls = [];
  if (name !== 'IGLOO') w.io_global_object_name = name;
  w[name] = config;
  config.loader = loader;
  for (const [key, value] of Object.entries(wanted)) if (value !== undefined) loader[key] = value;
  for (const [key, value] of Object.entries(topLevel)) if (value !== undefined) config[key] = value;
  loader.version ??= 'general5';
  loader.uri_hook ??= '/iojs';
  config.enable_rip ??= true;

  const pageTrace = pageHandler(loader.trace_handler as Chained<(message: string) => void> | undefined);
  loader.trace_handler = chained((message: string) => {
    if (pageTrace) safely(() => pageTrace(message));
    traces.forEach((onTrace) => safely(() => onTrace(message)));
  }, pageTrace);

  const accept = (blackbox: unknown, done: unknown) => {
    if (run !== generation || complete || typeof blackbox !== 'string') return;
    latest = blackbox;
    if (vendorBool(done, false)) {
      if (!blackbox) return fail(new BlackboxCaptureError('collection_failed', messages.emptyBlackbox()));
      complete = true;
      stopWatching();
    }
    notify();
  };
  const pageCallback = pageHandler(config.bb_callback as Chained<NonNullable<VendorConfig['bb_callback']>> | undefined);
  config.bb_callback = chained((blackbox: string, done: boolean) => {
    if (pageCallback) safely(() => pageCallback(blackbox, done));
    accept(blackbox, done);
  }, pageCallback);

  stopWatching = watchFailures(run);
  // Adopting a loader that already produced values.
  const state = config.getBlackbox?.();
  if (state?.blackbox) accept(state.blackbox, state.finished);

  if (!loader.loaderMain) {
    const href = new URL(options.loaderUrl, document.baseURI).href;
    // Warm up the connections the loader is about to need.
    preconnect([href, options.vendor.tp_host]);
    const onLoad = () => run === generation && !loader.loaderMain && fail(new BlackboxCaptureError('loader_failed', messages.loaderFailed(href, true), { url: href }));
    const onError = (cause?: unknown) => run === generation && fail(new BlackboxCaptureError('loader_failed', messages.loaderFailed(href, false), { url: href, cause }));
    if (options.inject === false || findScript(href)) {
      // The page's own tag (already there, or following this one): watch it instead of adding a second.
      // Element load and error events do not bubble, but a capture listener on document sees them.
      const watch = (event: Event) => {
        if ((event.target as HTMLScriptElement).src !== href) return;
        document.removeEventListener('load', watch, true);
        document.removeEventListener('error', watch, true);
        event.type === 'load' ? onLoad() : onError();
      };
      document.addEventListener('load', watch, true);
      document.addEventListener('error', watch, true);
    } else {
      script = injectScript(href, options.nonce ?? pageNonce(), onLoad, onError);
      if (run !== generation) script.remove(); // it failed while being inserted
    }
  }
}

/** `<link rel="preconnect">` for the origins among `urls` that are not the page's own. */
function preconnect(urls: Array<string | undefined>): void {
  for (const url of urls) {
    const origin = url && new URL(url).origin;
    if (!origin || origin === location.origin || document.querySelector(`link[rel=preconnect][href="${origin}"]`)) continue;
    const link = document.createElement('link');
    link.rel = 'preconnect';
    link.href = origin;
    document.head.appendChild(link);
  }
}

function subscribe(options: NormalizedOptions, field: Field | undefined): Promise<string> {
  const { signal, onUpdate, onTrace, post, timeoutMs } = options;
  // Start fetching the delivery code now, so that it is there when the blackbox is.
  const delivery = post && import('./deliver.js');
  delivery?.catch(() => {}); // a failure is reported when the code is needed
  return new Promise<string>((resolve, reject) => {
    const finish = (error?: unknown, blackbox?: string) => {
      clearTimeout(timer);
      listeners.delete(listener);
      signal?.removeEventListener('abort', onAbort);
      if (error) {
        calls = calls.filter((call) => call[0] !== options);
        reject(error);
      } else resolve(blackbox!);
    };
    const onAbort = () => finish(new BlackboxCaptureError('aborted', messages.aborted(), { cause: signal!.reason, blackbox: latest }));
    const listener: Listener = (error) => {
      if (error) return finish(error);
      const blackbox = latest!;
      // The page config's bbout_element_id is looked up on every write: the page may render it late.
      const target = field ?? ((config.bbout_element_id && document.getElementById(config.bbout_element_id)) as Field | null);
      if (target) writeField(target, blackbox);
      if (onUpdate) safely(() => onUpdate(blackbox, complete));
      if (!complete) return;
      clearTimeout(timer);
      listeners.delete(listener);
      if (!post) return finish(undefined, blackbox);
      delivery!
        .then(
          ({ deliver }) => deliver(blackbox, post, signal),
          (cause: unknown) => {
            throw new BlackboxCaptureError('post_failed', messages.postFailed(post.url, 'the delivery code did not load'), { blackbox, url: post.url, cause });
          },
        )
        .then(
          () => finish(undefined, blackbox),
          (error: unknown) => (signal?.aborted ? onAbort() : finish(error)),
        );
    };
    const timer = setTimeout(
      () => finish(new BlackboxCaptureError('timeout', messages.timeout(timeoutMs, latest !== undefined, describeScripts(failed)), { blackbox: latest })),
      timeoutMs,
    );
    signal?.addEventListener('abort', onAbort, { once: true });
    if (onTrace) traces.add(onTrace); // for the page's lifetime: traces go on after completion
    listeners.add(listener);
    if (latest !== undefined) listener(); // a late caller catches up with what the run already has
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
    if (typeof window === 'undefined' || typeof document === 'undefined') throw new BlackboxCaptureError('not_browser', messages.notBrowser());
    const { signal, field } = normalized;
    if (signal?.aborted) throw new BlackboxCaptureError('aborted', messages.aborted(), { cause: signal.reason });
    if (running) {
      const repeat = calls.find((call) => same(call[0], normalized));
      if (repeat) return repeat[1];
      for (const key of LOADER_KEYS) {
        if (!same(running[key], normalized[key])) throw new BlackboxCaptureError('option_conflict', messages.conflict(key, running[key], normalized[key]));
      }
    }
    const element = (typeof field === 'string' ? document.getElementById(field) : field) as Field | null | undefined;
    if (field && !/^(INPUT|TEXTAREA)$/.test(element?.tagName ?? '')) {
      throw new BlackboxCaptureError('invalid_option', messages.invalidOption('field', 'the id of an input or textarea on the page', field));
    }
    if (!running) startRun(normalized);
    // Still none: the loader failed while it was being inserted.
    if (!running) throw failure;
    const promise = subscribe(normalized, element ?? undefined);
    calls.push([normalized, promise]);
    return promise;
  } catch (error) {
    return Promise.reject(error);
  }
}
