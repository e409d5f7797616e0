/**
 * Declarative start for script tags: a tag carrying `data-loader-url` starts a
 * capture with no page code and reports on `document` through `blackbox` and
 * `blackboxerror` events.
 */
import { captureBlackbox } from './capture.js';
import type { CaptureOptions } from './options.js';

/** data-* attribute (as a dataset key) -> option. */
const ATTRIBUTES = {
  globalName: 'globalName',
  uriHook: 'uriHook',
  version: 'version',
  subkey: 'subkey',
  field: 'field',
  postUrl: 'post',
} as const;

export function startFromScriptTag(script: HTMLScriptElement | SVGScriptElement | null): Promise<string> | undefined {
  const data = script && (script as HTMLScriptElement).dataset;
  if (!data || data.loaderUrl === undefined) return undefined;
  const options: Record<string, unknown> = { loaderUrl: data.loaderUrl };
  for (const [attribute, option] of Object.entries(ATTRIBUTES)) {
    if (data[attribute] !== undefined) options[option] = data[attribute];
  }
  // "abc" and "" become NaN and 0, which validation rejects with invalid_option.
  if (data.timeoutMs !== undefined) options.timeoutMs = data.timeoutMs.trim() === '' ? NaN : Number(data.timeoutMs);
  const nonce = (script as HTMLScriptElement).nonce || script!.getAttribute('nonce');
  if (nonce) options.nonce = nonce;

  const start = () =>
    captureBlackbox(options as unknown as CaptureOptions).then(
      (blackbox) => {
        document.dispatchEvent(new CustomEvent('blackbox', { detail: blackbox }));
        return blackbox;
      },
      (error: unknown) => {
        document.dispatchEvent(new CustomEvent('blackboxerror', { detail: error }));
        throw error;
      },
    );
  // A tag in <head> runs before the field exists: wait for the document, not longer.
  if (data.field && document.readyState === 'loading' && !document.getElementById(data.field)) {
    return new Promise<string>((resolve, reject) =>
      document.addEventListener('DOMContentLoaded', () => start().then(resolve, reject), { once: true }),
    );
  }
  return start();
}
