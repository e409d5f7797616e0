/**
 * A script tag in `<head>` without `data-checkout-id` runs once per page run: Turbo Drive runs no
 * head script whose markup the current head has already, so a later checkout's field stays
 * empty, with nothing said (docs/browser.md#one-blackbox-per-checkout). Both builds warn, once,
 * of the first page Turbo renders after the capture has ended with the tag's field empty.
 *
 * The text is in the messages chunk, requested only by a tag set up this way, as the capture
 * starts: by the time Turbo renders another page it is at hand, and a production page pays
 * for the check alone.
 */
import { PREFIX } from './errors.js';
import { noop } from './loader-run.js';

export function warnTagKeptInHead(tag: HTMLOrSVGScriptElement, started: Promise<unknown>): void {
  const { field, checkoutId } = (tag as HTMLScriptElement).dataset;
  if (!field || checkoutId !== undefined || tag.parentNode !== document.head) return;
  /** True from the capture's end until the warning is given: once. */
  let ended: boolean | undefined;
  const end = () => (ended = true);
  started.then(end, end);
  let text: ((field: string) => string) | undefined;
  // No text (the network gone): no warning.
  const texts = import('./messages.js').then(({ WARNINGS }) => (text = WARNINGS.tag_kept_in_head), noop);
  const say = () => text && console.warn(PREFIX + text(field));
  const onLoad = () => {
    const element = document.getElementById(field) as HTMLInputElement | null;
    if (ended && element && !element.value) {
      ended = false;
      // At once when the text is at hand, as it is by the time Turbo renders another page.
      if (text) say();
      else void texts.then(say);
    }
  };
  document.addEventListener('turbo:load', onLoad);
}
