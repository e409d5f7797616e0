/**
 * Declarative start for script tags: a tag carrying `data-loader-url` starts a
 * capture with no page code and reports on `document` through `blackbox`,
 * `blackboxerror` and `blackboxoutcome` events.
 */
import { captureBlackbox, isField, writeField } from './capture.js';
import type { CaptureOptions } from './options.js';

export function startFromScriptTag(tag: HTMLOrSVGScriptElement | null): Promise<string> | undefined {
  const data = (tag as HTMLScriptElement | null)?.dataset;
  if (!data?.loaderUrl) return undefined;
  const {
    loaderUrl,
    globalName,
    uriHook,
    version,
    subkey,
    field,
    postUrl: post,
    timeoutMs,
    captureNonce,
    orderToken,
  } = data;
  const options: Record<string, unknown> = {
    loaderUrl,
    globalName,
    uriHook,
    version,
    subkey,
    field,
    post,
    captureNonce,
    orderToken,
    nonce: (tag as HTMLScriptElement).nonce || tag!.getAttribute('nonce') || undefined,
  };
  // data-consent="tcf:<vendorId>": consent from the page's TCF v2 CMP (the adapter is a chunk of its own).
  const consent = /^tcf:(\d+)$/.exec(data.consent ?? '');
  if (consent)
    options.consent = () => import('./tcf.js').then(({ tcfConsent }) => tcfConsent({ vendorId: +consent[1]! })());
  else if (data.consent !== undefined) options.consent = data.consent; // anything else: refused as invalid_option
  // "abc" and "" become NaN, which validation rejects with invalid_option.
  if (timeoutMs !== undefined) options.timeoutMs = timeoutMs.trim() ? +timeoutMs : NaN;
  // data-inject="false": the page's own loader tag follows this one (adopt mode).
  if (data.inject !== undefined)
    options.inject =
      data.inject === 'false' ? false : data.inject === 'true' || data.inject === '' ? true : data.inject;
  for (const key in options) if (options[key] === undefined) delete options[key];

  const dispatch = (type: string, detail: unknown) => document.dispatchEvent(new CustomEvent(type, { detail }));
  options.onOutcome = (outcome: unknown) => dispatch('blackboxoutcome', outcome);
  // A tag in <head> runs before its field is parsed. The loader must not wait for the
  // document (a loader tag after this one runs at once), so the field is looked up on
  // every update until it exists.
  if (field && document.readyState === 'loading' && !document.getElementById(field)) {
    delete options.field;
    options.onUpdate = (blackbox: string) => {
      const element = document.getElementById(field);
      if (isField(element)) writeField(element, blackbox);
    };
  }
  return captureBlackbox(options as unknown as CaptureOptions).then(
    (blackbox) => {
      dispatch('blackbox', blackbox);
      return blackbox;
    },
    (error: unknown) => {
      dispatch('blackboxerror', error);
      throw error;
    },
  );
}
