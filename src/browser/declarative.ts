/**
 * Declarative start for script tags: a tag carrying `data-loader-url` starts a
 * capture with no page code and reports on `document` through `blackbox` and
 * `blackboxerror` events.
 */
import { captureBlackbox } from './capture.js';
import type { CaptureOptions } from './options.js';

export function startFromScriptTag(tag: HTMLOrSVGScriptElement | null): Promise<string> | undefined {
  const data = (tag as HTMLScriptElement | null)?.dataset;
  if (!data?.loaderUrl) return undefined;
  const { loaderUrl, globalName, uriHook, version, subkey, field, postUrl: post, timeoutMs } = data;
  const options: Record<string, unknown> = { loaderUrl, globalName, uriHook, version, subkey, field, post, nonce: (tag as HTMLScriptElement).nonce || tag!.getAttribute('nonce') || undefined };
  // "abc" and "" become NaN, which validation rejects with invalid_option.
  if (timeoutMs !== undefined) options.timeoutMs = timeoutMs.trim() ? +timeoutMs : NaN;
  for (const key in options) if (options[key] === undefined) delete options[key];

  const dispatch = (type: string, detail: unknown) => document.dispatchEvent(new CustomEvent(type, { detail }));
  const start = () =>
    captureBlackbox(options as unknown as CaptureOptions).then(
      (blackbox) => (dispatch('blackbox', blackbox), blackbox),
      (error: unknown) => {
        dispatch('blackboxerror', error);
        throw error;
      },
    );
  // A tag in <head> runs before the field exists: wait for the document, not longer.
  return field && document.readyState === 'loading' && !document.getElementById(field)
    ? new Promise<string>((resolve, reject) => document.addEventListener('DOMContentLoaded', () => start().then(resolve, reject), { once: true }))
    : start();
}
