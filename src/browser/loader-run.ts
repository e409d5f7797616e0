/**
 * The page's run: one loader run per page, shared by every call of every entry
 * (captureBlackbox() in capture.ts, the lean one in lean.ts).
 *
 * The vendor loader runs once per page (its run-once guard ignores later copies),
 * so this module keeps the page's one run in module state: the config object, the
 * loader tag, the latest blackbox, and the calls it tells of each update and of its
 * failure. What a call does with them (a field, callbacks, outcomes, delivery) is the
 * call's own (capture.ts, lean.ts).
 *
 * Every byte here is paid by every checkout page, so: module state rather than an
 * object (local names minify, property names do not), and what the smallest call never
 * runs in chunks of their own (docs/browser.md#what-a-page-loads): the failed-script
 * analysis (unparsed.ts), loaded on the first script error (or by an adoption), which
 * judges the run (collection_failed, the degraded grace).
 */
import { DEFAULT_URI_HOOK } from '../shared/constants.js';
import type { VendorConfig, VendorLoaderConfig } from '../shared/types.js';
import { fault, type BlackboxCaptureError } from './errors.js';
import type { NormalizedOptions } from './options.js';
import { isPlainObject, LOADER_KEYS, vendorFlag } from './rules.js';
import { warnRiskySetup } from './warnings.js';

export type Listener = (error?: BlackboxCaptureError) => void;
/** A call of the page's run: its options (to join it), its promise, and how the run tells it of an update or a failure. */
export type Call = [NormalizedOptions, Promise<string>, Listener];
type TrustedTypesPolicy = { createScriptURL(url: string): string };
type Analysis = typeof import('./unparsed.js');
type Run = import('./unparsed.js').Run;

/**
 * What a collection_failed run undoes on the loader config, so that a later call can run the
 * loader again: its run-once marker, its version, and its failure flags
 * (`fp_static_wdp_load_failure`; which script a flag names is the analysis chunk's to read).
 * Tested only when a run fails that way, so its compile is no cost of a page whose run does not.
 */
const RUN_MARKS = /^(loaderMain|loaderVer|(fp|io)_(.*_)?load_failure)$/;

/** Options of the call that started the page's current run (its loader options count); undefined when none runs. */
export let running: NormalizedOptions | undefined;
export let config: VendorConfig;
export let loader: VendorLoaderConfig;
/** The loader tag this package injected, if it did. */
let tag: HTMLScriptElement | undefined;
export let latest: string | undefined;
/**
 * Unset until the run's blackbox is final (complete, or degraded after the grace), then when it
 * became final, in ms since the epoch: its age travels with it (deliver.ts). Never reset: only a
 * failed run makes way for another, and a run fails only before it is final.
 */
export let complete: number | undefined;
/** First-party scripts that failed to parse (an HTML page in place of `dyn_wdp.js`). */
let unparsed: string[];
/** The page's trace handlers, then the calls' (for the page's lifetime: traces go on after completion). */
export let traces: Array<VendorLoaderConfig['trace_handler']>;
/** The run's calls, in the order they came: one notify path serves them all. */
let calls: Call[];
/** Ends the watch; a no-op until the first one starts (an injection that fails before it). */
let stopWatching = (): void => {};
/** The page's own handlers, which ours pass every value on to. */
let pageCallback: VendorConfig['bb_callback'];
/** undefined: not tried yet; null: Trusted Types absent, or our policy name is not allowed. */
let policy: TrustedTypesPolicy | null | undefined;
/**
 * The failed-script analysis (unparsed.ts): a chunk requested on the first script error (or
 * for a loader adopted after its run), then at hand. It judges the run (and starts the
 * degraded grace) through run(). Until it is at hand, no update looks for failed scripts: the
 * look costs more than the rest of our `bb_callback`, and every failure is followed by a
 * judgement once it is there.
 */
let analysing: Promise<Analysis> | undefined;
/**
 * Judgements due: one from each script error until the analysis has judged the run for it (a
 * task after the chunk is at hand), and one for an adopted loader. A final update waits for
 * them: the loader may say "complete" in its own handler of the very error that ends the last chain.
 */
let judging = 0;
let analyser: Analysis | undefined;

/** Deep equality of option values; functions, elements and signals by identity. */
const same = (a: unknown, b: unknown): boolean =>
  a === b ||
  (isPlainObject(a) &&
    isPlainObject(b) &&
    Object.keys(a).length === Object.keys(b).length &&
    Object.keys(a).every((k) => same(a[k], b[k])));

export const noop = () => {};

/**
 * Fails the run: the loader's script did not load (`loaded`: it loaded but did not run), or
 * could not be inserted. Returns the error.
 */
const failLoader = (url: string, loaded: boolean, cause?: unknown): BlackboxCaptureError =>
  fail(fault('loader_failed', [url, loaded], { url, cause }));

/**
 * Calls an integrator callback, if there is one, and reports its exception without breaking
 * the vendor's flow.
 */
export function safely<Args extends unknown[]>(callback: ((...args: Args) => void) | undefined, ...args: Args): void {
  try {
    callback?.(...args);
  } catch (error) {
    // Shown in the console like any uncaught error.
    if (typeof reportError === 'function') reportError(error);
    else
      setTimeout(() => {
        throw error;
      });
  }
}

/**
 * A script's CSP nonce, read the way browsers expose it (the attribute is hidden, the property
 * is not); undefined for none.
 */
export const nonceOf = (script: HTMLOrSVGScriptElement | null): string | undefined =>
  script?.nonce || script?.getAttribute('nonce') || undefined;

/** The collection scripts that failed so far: none before the analysis has loaded, which a failure loads. */
export const failedNow = (): string[] => analyser?.failedScripts(loader, unparsed) ?? [];

/** A call's time limit of `ms` ran out: `timeout`, with the partial blackbox and what failed so far. */
export function timedOut(ms: number): BlackboxCaptureError {
  const scripts = failedNow();
  return fault('timeout', [ms, latest !== undefined, scripts, loader.uri_hook], { blackbox: latest, scripts });
}

/**
 * The run as the analysis chunk sees it when it judges: what it reads, and how it ends the
 * run (a function, read afresh each time: the chunk imports nothing from this one).
 */
const run = (): Run => [loader, unparsed, latest, complete, running, fail, accept, fault];

/**
 * Has the run judged once the analysis is at hand, and a task later: the loader sets its
 * failure flags in its own handlers, which run after our capture listener. `event`: the script
 * error that asks for it, which may name a script that did not parse. Due until then (`judging`).
 */
function judgeSoon(event?: Event): void {
  // A count that never falls back to 0 only makes every later final update wait a task, for the same answer:
  // Stryker disable next-line UpdateOperator
  judging++;
  // Stryker disable next-line ArrowFunction,UpdateOperator
  const judged = () => judging--;
  void (analysing ??= import('./unparsed.js').then((chunk) => (analyser = chunk))).then(
    (chunk) => chunk.judgeSoon(run, judged, event),
    judged,
  );
}

/**
 * Tells calls of the run's latest blackbox, or of its failure. A final one comes only once no
 * judgement is due (accept()), so its outcome names the failed scripts.
 */
function notify(error?: BlackboxCaptureError): void {
  calls.forEach((call) => call[2](error));
}

/** Ends the run with `error`, unless it has ended or is final; returns `error`, for a caller to throw. */
function fail(error: BlackboxCaptureError): BlackboxCaptureError {
  if (running && !complete) {
    stopWatching();
    tag?.remove(); // a later call injects afresh
    if (error.code === 'collection_failed') {
      // Undo the loader's run-once marker and flags so that a later call can run it again.
      for (const key in loader) if (RUN_MARKS.test(key)) delete loader[key];
    }
    running = undefined;
    notify(error);
  }
  return error;
}

function accept(blackbox: unknown, done: unknown, judged?: boolean): void {
  if (!running || complete || typeof blackbox !== 'string') return;
  // Stryker disable next-line ConditionalExpression: a partial update that waits too keeps its order, for the same answer
  if (vendorFlag(done) && !judged && judging) {
    // A script failed and its judgement is due: the loader may say "complete" with what the
    // broken chains left first. The run is judged before it completes (the chunk judges a
    // task after it loads; this, queued after it, a task later).
    // Stryker disable next-line BooleanLiteral: waiting again while a judgement is due ends the same way, later
    const later = () => setTimeout(() => accept(blackbox, done, true));
    return void analysing!.then(later, later);
  }
  latest = blackbox;
  if (vendorFlag(done)) {
    // Stryker disable next-line ArrayDeclaration: the empty_blackbox message takes no arguments
    if (!blackbox) return void fail(fault('collection_failed', [], {}, 'empty_blackbox'));
    complete = Date.now();
    stopWatching();
    // Stryker disable next-line ConditionalExpression: always looking is the slower way to the same answer (judge finds nothing failed)
  } else analyser?.judge(run);
  notify();
}

// Installed once on the config object; they read the current run from module state.
function onBlackbox(blackbox: string, done: boolean): void {
  safely(pageCallback, blackbox, done);
  accept(blackbox, done);
}
function onTraceMessage(message: string): void {
  for (const handler of traces) safely(handler, message);
}

/**
 * Watches script events: the loader tag's `load` (did it run?) and `error`, and any
 * other script's `error` — the loader sets its `*_load_failure` flags in its own
 * handlers, which run after this capture listener (and after the microtasks it
 * queues: the stack is empty between listeners), hence a task — plus
 * same-origin collection scripts that fail to parse. Element `load` events stop
 * at the document; errors reach the window, runtime ones start there.
 */
function watch(href: string): void {
  const onLoad = (event: Event) =>
    (event.target as HTMLScriptElement).src === href && !loader.loaderMain && failLoader(href, true);
  const onError = (event: Event) => {
    if ((event.target as HTMLScriptElement).src === href) return failLoader(href, false);
    // Another script failed: which one, and what that means for the run, is the analysis
    // chunk's, loaded now the first time.
    judgeSoon(event);
  };
  // Held from the start: the run may end after its page went away (a torn-down test
  // environment, a removed frame), when these globals are gone.
  const doc = document;
  const off = removeEventListener;
  doc.addEventListener('load', onLoad, true);
  addEventListener('error', onError, true);
  stopWatching = () => {
    doc.removeEventListener('load', onLoad, true);
    off('error', onError, true);
  };
}

/** Appends the loader tag, with the page's nonce and through a Trusted Types policy where the page has them. */
function inject(href: string, nonce: string | undefined): void {
  tag = document.createElement('script');
  tag.async = true;
  if (nonce) tag.nonce = nonce;
  try {
    if (policy === undefined) {
      try {
        // It passes only the URL it is handed, and it is handed only loader URLs that validation accepted.
        policy =
          (
            window as { trustedTypes?: { createPolicy(name: string, rules: TrustedTypesPolicy): TrustedTypesPolicy } }
          ).trustedTypes?.createPolicy('blackbox-capture', { createScriptURL: (url) => url }) ?? null;
      } catch {
        policy = null; // the page's CSP does not allow our policy name: a plain string may still pass
      }
    }
    tag.src = policy ? policy.createScriptURL(href) : href;
  } catch (cause) {
    // Trusted Types enforced without an allowed policy: the run fails, and so does the call that started it.
    throw failLoader(href, false, cause);
  }
  document.head.append(tag);
}

/**
 * Builds or merges the page's config object and starts (or adopts) the loader. `settings`: the
 * vendor's settings the call gives, by the vendor's names (an undefined one is none): the
 * loader's, and the top-level ones (enable_rip, the Flash ones). `name`: the config object's
 * name the call asks for (the full entry's globalName, which it checks against the page's
 * io_global_object_name); by default the page's. The third party's preconnect hint is the
 * full entry's (capture.ts), after it.
 */
export function startRun(options: NormalizedOptions, settings: Record<string, unknown>, name?: string): void {
  const w = window as unknown as Record<string, unknown>;
  name ??= (w.io_global_object_name as string | undefined) ?? 'IGLOO';
  const pageConfig = (w[name] ?? {}) as VendorConfig;
  // A name taken by another global (`undefined`, `name`, `constructor`), or a config object that
  // refuses a write (frozen, sealed, a read-only or throwing member): a typed error, and no run.
  if (!isPlainObject(pageConfig)) throw fault('invalid_option', [name, pageConfig], {}, 'shadowed_global');
  const pageLoader: VendorLoaderConfig = isPlainObject(pageConfig.loader) ? pageConfig.loader : {};
  let pageTraces: typeof traces;
  const topLevel: Record<string, unknown> = {};
  const wanted: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(settings))
    if (value !== undefined) (key === 'enable_rip' || key.includes('flash') ? topLevel : wanted)[key] = value;
  for (const key in wanted) {
    // The loader has run already: settings it did not see would be silently ignored.
    if (pageLoader.loaderMain && pageLoader[key] !== wanted[key])
      throw fault('option_conflict', ['loader.' + key, pageLoader[key], wanted[key]]);
  }

  try {
    // Nothing was written before this point; the first write is the one a read-only name refuses.
    w[name] = pageConfig;
    if (name !== 'IGLOO') w.io_global_object_name = name;
    pageConfig.loader = pageLoader;
    Object.assign(pageLoader, wanted);
    Object.assign(pageConfig, topLevel);
    pageLoader.version ??= 'general5';
    pageLoader.uri_hook ??= DEFAULT_URI_HOOK;
    pageConfig.enable_rip ??= true;
    // (A failed write leaves these two set: the next run sets them afresh.)
    if (pageConfig.bb_callback !== onBlackbox) {
      pageCallback = pageConfig.bb_callback;
      pageConfig.bb_callback = onBlackbox;
    }
    // Loader 5.2.2 traces to the top-level `trace_handler`; the spec names `loader.trace_handler`.
    pageTraces = [pageConfig.trace_handler, pageLoader.trace_handler].filter((handler) => handler !== onTraceMessage);
    pageConfig.trace_handler = pageLoader.trace_handler = onTraceMessage;
  } catch (cause) {
    // The module state is untouched: the next call starts afresh.
    throw fault('invalid_option', [name, pageConfig], { cause }, 'shadowed_global');
  }
  running = options;
  config = pageConfig;
  loader = pageLoader;
  tag = latest = undefined;
  unparsed = [];
  traces = pageTraces;
  // Stryker disable next-line ArrayDeclaration: an entry that is no [options, promise] pair never matches a call
  calls = [];

  const href = new URL(options.loaderUrl, document.baseURI).href;
  warnRiskySetup(options, href);
  // The loader request first, the watch after it: the tag's events come a task later at the
  // earliest, and the loader's fetch starts before the rest of our work (docs/performance.md#script-time).
  // Adopt mode, a loader that ran, or the page's own tag already there: watched, not doubled.
  if (!loader.loaderMain && options.inject !== false && ![...document.scripts].some((script) => script.src === href))
    // The page's CSP nonce.
    inject(href, options.nonce ?? nonceOf(document.querySelector('script[nonce]')));
  watch(href);
  if (loader.loaderMain) {
    // Adopting a loader that already ran: what it produced, and what already failed. (Before
    // its run nothing can have failed: the flags are the loader's, and watch() just started.)
    // Judged first: its final value waits for the judgement (accept()).
    judgeSoon();
    const state = config.getBlackbox?.();
    if (state?.blackbox) accept(state.blackbox, state.finished);
  }
}

/**
 * What the run makes of a new call: the promise of an identical call before it, if there is
 * one; `option_conflict` (thrown) when it asks the running loader for other settings;
 * undefined when the call is to be added (enter()), after startRun() if no run is running.
 */
export function joined(options: NormalizedOptions): Promise<string> | undefined {
  if (running) {
    const repeat = calls.find((call) => same(call[0], options));
    if (repeat) return repeat[1];
    for (const key of LOADER_KEYS)
      if (!same(running[key], options[key])) throw fault('option_conflict', [key, running[key], options[key]]);
  }
  return undefined;
}

/** Adds a call to the run, which tells it of each update and of its failure; a late call catches up at once. */
export function enter(call: Call): void {
  calls.push(call);
  if (latest !== undefined) call[2]();
}

/** Takes a call that failed out of the run: a later identical call starts afresh. */
export function leave(options: NormalizedOptions): void {
  calls = calls.filter((call) => call[0] !== options);
}
