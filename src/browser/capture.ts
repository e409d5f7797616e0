/**
 * captureBlackbox(): a call of the page's run (loader-run.ts) with every option: its field, its
 * callbacks, its outcome, its signal, its delivery and consent. What the smallest call never
 * runs is in chunks of its own (docs/browser.md#what-a-page-loads): the messages, loaded only
 * on failure; delivery (deliver.ts), loaded only with `post`; consent (consent.ts).
 */
import type { CaptureOutcome, CaptureOutcomeKind } from '../shared/types.js';
import type { DeliveryFailure } from './deliver.js';
import { explain, explained, fault, type BlackboxCaptureError } from './errors.js';
import { normalizeOptions, type CaptureOptions, type NormalizedOptions } from './options.js';
import { isField, writeField } from './field.js';
import { vendorFlag } from './rules.js';
import {
  complete,
  config,
  enter,
  failedNow,
  joined,
  latest,
  leave,
  loader,
  noop,
  running,
  safely,
  startRun,
  timedOut,
  traces,
  type Call,
  type Listener,
} from './loader-run.js';

export { nonceOf } from './loader-run.js';
export { isField } from './field.js';

type Field = HTMLInputElement | HTMLTextAreaElement;

/** The outcome kind of an ending: a resolved call by what failed, a rejected one by its code. */
function outcomeKind(failed: string[], error?: BlackboxCaptureError): CaptureOutcomeKind {
  if (error) return error.code === 'timeout' ? 'timeout-partial' : (error.code as CaptureOutcomeKind);
  return failed.some((name) => name.startsWith('fp_'))
    ? 'degraded-first-party'
    : failed.length
      ? 'degraded-third-party'
      : 'complete';
}

/**
 * Tells how a call ended: to `onOutcome`, and, for a capture that produced no final
 * blackbox, to the endpoint as an outcome alone (sent once, kept alive if the page goes).
 */
function tell({ onOutcome, post }: NormalizedOptions, outcome: CaptureOutcome, report?: boolean): void {
  safely(onOutcome, outcome);
  if (report && post) import('./deliver.js').then((chunk) => chunk.report(post, outcome)).catch(noop);
}

/**
 * Joins the call to the run: one entry of `calls`, which the run tells of each update and of
 * its failure. What a call does with them (its field, onUpdate, its outcome, its delivery) is
 * its own.
 */
function subscribe(options: NormalizedOptions, field: Field | null, timeoutMs = options.timeoutMs): Promise<string> {
  const { signal, onUpdate, onTrace, captureNonce, orderToken } = options;
  const post = options.post && { ...options.post, captureNonce, orderToken };
  const started = performance.now();
  // Start fetching the delivery code now, so that it is there when the blackbox is.
  const delivery = post && import('./deliver.js');
  delivery?.catch(noop); // a failure is reported when the code is needed
  /** How the capture went, as of now; `error` for one that failed. */
  const outcomeNow = (error?: BlackboxCaptureError): CaptureOutcome => {
    // A collection failure has cleared the loader's flags by now (for a later run): its error keeps the list.
    const scripts = error?.scripts ?? failedNow();
    return { outcome: outcomeKind(scripts, error), scripts, durationMs: Math.round(performance.now() - started) };
  };
  let outcome: CaptureOutcome | undefined;
  let settled: boolean | undefined;
  let finish!: (error?: BlackboxCaptureError, blackbox?: string) => void;
  // The first way out wins: an abort from code the final update runs (onUpdate, a framework's
  // handler of the field's input event) ends the call before it completes or delivers.
  const promise = new Promise<string>(
    (resolve, reject) =>
      (finish = (error, blackbox) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        // Stryker disable next-line StringLiteral: a listener left behind runs after the promise settled; the aborted check before any cache lookup answers the same
        signal?.removeEventListener('abort', onAbort);
        // The outcome is set already when the capture reached its final value: a failed or
        // aborted delivery does not change how the capture went.
        tell(options, outcome ?? outcomeNow(error), !outcome && !!error);
        if (error) {
          leave(options);
          void explain(error).then(reject);
        } else resolve(blackbox!);
      }),
  );
  // Stryker disable next-line ArrayDeclaration: the aborted message takes no arguments
  const onAbort = () => finish(fault('aborted', [], { cause: signal!.reason, blackbox: latest }));
  /**
   * What the run tells the call: its failure, or an update: the field, onUpdate, and once final
   * the outcome and delivery. After a final update the run tells nothing more: its blackbox and
   * time stay as they are.
   */
  const listener: Listener = (error) => {
    if (settled) return;
    if (error) return finish(error);
    const blackbox = latest!;
    const done = complete;
    // The page config's bbout_element_id is looked up on every write: the page may render it late.
    const id = config.bbout_element_id;
    const target = field ?? ((id && document.getElementById(id)) as Field | null);
    if (target) {
      // An element without a value (a <script>, a <div>) would throw inside the vendor's callback.
      if (!isField(target)) return finish(fault('invalid_option', ['bbout_element_id', target], { blackbox }));
      writeField(target, blackbox);
    }
    safely(onUpdate, blackbox, !!done);
    if (!done || settled) return;
    clearTimeout(timer);
    outcome = outcomeNow();
    if (!post) return finish(undefined, blackbox);
    // The delivery chunk reports what failed; the error is made here, so that the chunk
    // imports nothing from this one (and the entry exports nothing but the API).
    delivery!
      .then(
        ({ deliver }) => deliver(blackbox, post, outcome!, signal, done),
        (cause: unknown): never => {
          // '': the messages write "the delivery code did not load" (deliveryDetail), not this core.
          const failure: DeliveryFailure = { detail: '', cause };
          throw failure;
        },
      )
      .then(
        () => finish(undefined, blackbox),
        (failure: DeliveryFailure) =>
          signal?.aborted
            ? onAbort()
            : finish(
                fault('post_failed', [post.url, failure.detail], {
                  blackbox,
                  url: post.url,
                  status: failure.status,
                  cause: failure.cause,
                }),
              ),
      );
  };
  const timer = setTimeout(() => finish(timedOut(timeoutMs)), timeoutMs);
  // Without `once`: finish() removes it.
  signal?.addEventListener('abort', onAbort);
  // Stryker disable next-line ConditionalExpression: an undefined handler is skipped where traces are passed on
  if (onTrace) traces.push(onTrace);
  const call: Call = [options, promise, listener];
  enter(call);
  return promise;
}

/**
 * Captures the device blackbox: writes the vendor's config object, injects the
 * loader once per page, and resolves with the final blackbox (after delivering
 * it, when `post` is given).
 */
export function captureBlackbox(options: CaptureOptions): Promise<string> {
  try {
    const normalized = normalizeOptions(options);
    if (typeof window === 'undefined' || typeof document === 'undefined') throw fault('not_browser');
    const { signal } = normalized;
    // Stryker disable next-line ArrayDeclaration: the aborted message takes no arguments
    if (signal?.aborted) throw fault('aborted', [], { cause: signal.reason });
    return normalized.consent ? afterConsent(normalized).catch(explained) : start(normalized);
  } catch (error) {
    return explained(error);
  }
}

/**
 * Starts the page's run, or joins it, for a call whose options are valid (and whose consent is
 * given). Throws what stops it. A call after consent comes without `consent` and with what is
 * left of its limit apart: calls that differ only in those join one subscription, one delivery.
 */
function start(normalized: NormalizedOptions, timeoutMs?: number): Promise<string> {
  const { field } = normalized;
  const repeat = joined(normalized);
  if (repeat) return repeat;
  const element = (typeof field === 'string' ? document.getElementById(field) : field) as Field | null;
  if (field && !isField(element)) throw fault('invalid_option', ['field', field]);
  if (!running) {
    const { globalName, vendor } = normalized;
    const pageName = (window as { io_global_object_name?: string }).io_global_object_name;
    if (globalName && pageName !== undefined && pageName !== globalName)
      throw fault('option_conflict', ['io_global_object_name', pageName, globalName]);
    // Throws when the loader fails while it is being inserted.
    startRun(
      normalized,
      {
        version: normalized.version,
        uri_hook: normalized.uriHook,
        subkey: normalized.subkey,
        enable_rip: normalized.enableRip,
        ...vendor,
      },
      globalName,
    );
    // The loader opens its connection to the third party only once it has run (a TCP and TLS
    // handshake on the critical path): open it now, unless the loader ran already (adopted).
    // None for the page's own origin (an http(s) page's URL is its origin and a path;
    // `location` would cost a first touch).
    const tpOrigin =
      !loader.loaderMain &&
      vendorFlag(loader.tp, true) &&
      new URL(loader.tp_host ?? 'https://mpsnare.iesnare.com').origin;
    if (
      tpOrigin &&
      !document.URL.startsWith(tpOrigin + '/') &&
      !document.querySelector(`link[rel=preconnect][href="${tpOrigin}"]`)
    ) {
      document.head.append(Object.assign(document.createElement('link'), { rel: 'preconnect', href: tpOrigin }));
    }
  }
  return subscribe(normalized, element, timeoutMs);
}

/**
 * Consent first: its code is a chunk loaded only by calls that give `consent`, and it is
 * handed what it needs from here (so that the chunk imports nothing from the entry).
 */
function afterConsent(options: NormalizedOptions): Promise<string> {
  return import('./consent.js').then(({ afterConsent }) => afterConsent(options, start, fault, tell, outcomeKind));
}
