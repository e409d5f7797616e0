/**
 * The failed-script analysis, a chunk loaded on the first script error (capture.ts): which
 * collection scripts failed (the loader's failure flags, or no parse) and what that means for
 * the run. Handed what it needs, so that it imports nothing from the entry: a page whose scripts
 * all load never fetches it (docs/browser.md#what-a-page-loads).
 */
import type { VendorLoaderConfig } from '../shared/types.js';

/**
 * The collection scripts the loader may load, by the name of their failure flag
 * (`<list>_<file>`), in the order errors name them; a `tp_resource` or
 * `fp_static_override_uri` file gets a flag of its own name, listed after these.
 */
const SCRIPTS = ['fp_static_wdp', 'fp_dyn_wdp', 'io_wdp', 'io_static_wdp', 'io_dyn_wdp'];

/**
 * A first-party collection script that "loaded" but did not parse (an HTML page in its
 * place): the loader saw a load and goes on, but its chain can deliver nothing. Only scripts
 * under the proxy path or the static override count: a broken script of the page's own does
 * not. The failed script's name (`fp_static_wdp`, `fp_fp_static` for an override), or '' for none of ours.
 */
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

/**
 * The collection scripts that failed so far (a failure flag, or no parse), in a stable order.
 * @public (loaded by capture.ts with import())
 */
export function failedScripts(
  loader: VendorLoaderConfig,
  unparsed: string[],
  flaggedScript: (key: string) => string,
  vendorFlag: (value: unknown, fallback?: boolean) => boolean,
): string[] {
  const failed = new Set(unparsed);
  for (const key in loader) {
    const script = flaggedScript(key);
    if (script && vendorFlag(loader[key])) failed.add(script);
  }
  // Not listed: -1, which >>> 0 makes the largest.
  const rank = (name: string) => SCRIPTS.indexOf(name) >>> 0;
  return [...failed].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : 1));
}

/**
 * What the failed scripts mean for the run: 2 when every chain this configuration starts has
 * failed (the run fails at once), 1 when the first party has failed and the third party has
 * not (the degraded grace may start), else 0. The loader loads each list (first party `fp`,
 * third party `io`) as a chain: the next script only from the previous one's `load`. So one
 * failed script ends its chain, whether it was the first (the rest are never requested) or a
 * later one; while any chain is intact it may still deliver (an ad blocker takes only the
 * third party).
 * @public (loaded by capture.ts with import())
 */
export function verdict(
  loader: VendorLoaderConfig,
  failed: string[],
  vendorFlag: (value: unknown, fallback?: boolean) => boolean,
): 0 | 1 | 2 {
  const broken = (list: string) => failed.some((name) => name.startsWith(list));
  const chains = [vendorFlag(loader.fp_static, true) && 'fp_', vendorFlag(loader.tp, true) && 'io_'].filter(
    (list): list is string => !!list,
  );
  return chains[0] && chains.every(broken) ? 2 : broken('fp_') && !broken('io_') ? 1 : 0;
}
