/**
 * A first-party collection script that "loaded" but did not parse (an HTML page in its
 * place): the loader saw a load and goes on, but its chain can deliver nothing. Only scripts
 * under the proxy path or the static override count: a broken script of the page's own does
 * not. A chunk of its own, loaded only when a script fails (capture.ts), handed what it needs
 * so that it imports nothing from the entry.
 */
import type { VendorLoaderConfig } from '../shared/types.js';

/** The failed script's name (`fp_static_wdp`, `fp_fp_static` for an override), or '' for none of ours. */
export function unparsedScript(event: Event, loader: VendorLoaderConfig): string {
  const { filename, error } = event as Omit<ErrorEvent, 'error'> & { error?: Error };
  const file = error?.name === 'SyntaxError' && filename.split('?')[0]!;
  return file &&
    [loader.uri_hook + '/', loader.fp_static_override_uri].some(
      (start) => start && file.startsWith(new URL(start, document.baseURI).href.split('?')[0]!),
    )
    ? 'fp_' + file.split('/').pop()!.split('.')[0]
    : '';
}
