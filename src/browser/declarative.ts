/**
 * Declarative start for script tags: a tag carrying `data-loader-url` starts a
 * capture with no page code and reports on `document` through `blackbox`,
 * `blackboxerror` and `blackboxoutcome` events.
 */
import { writeField } from './field.js';
import { captureBlackbox, isField, nonceOf } from './capture.js';
import { explain, fault } from './errors.js';
import type { CaptureOptions } from './options.js';
import { warnTagKeptInHead } from './head-tag.js';

export function startFromScriptTag(tag: HTMLOrSVGScriptElement | null): Promise<string> | undefined {
  const data = (tag as HTMLScriptElement | null)?.dataset;
  if (!data?.loaderUrl) return undefined;
  const { field, timeoutMs } = data;
  const options: Record<string, unknown> = {
    post: data.postUrl,
    nonce: nonceOf(tag),
  };
  // The attributes that are options as they are (data-loader-url is loaderUrl).
  for (const key of ['loaderUrl', 'globalName', 'uriHook', 'version', 'subkey', 'field', 'captureNonce', 'orderToken'])
    options[key] = data[key];
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
  // The capture's errors come explained already; the checkout's refusal is explained here.
  const failed = (error: unknown) =>
    explain(error).then((explained) => {
      dispatch('blackboxerror', explained);
      throw explained;
    });
  const capture = () =>
    captureBlackbox(options as unknown as CaptureOptions).then((blackbox) => {
      dispatch('blackbox', blackbox);
      return blackbox;
    }, failed);
  // data-checkout-id: the page run's blackbox is one checkout's; another checkout reloads the
  // page, once (docs/browser.md#one-blackbox-per-checkout). A chunk of its own (tag-checkout.ts).
  const started = data.checkoutId
    ? import('./tag-checkout.js').then(({ claimTag }) => claimTag(data, fault, options)).then(capture, failed)
    : capture();
  warnTagKeptInHead(tag!, started);
  return started;
}
