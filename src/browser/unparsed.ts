/**
 * The failed-script analysis, a chunk loaded on the first script error (capture.ts): which
 * collection scripts failed (the loader's failure flags, or no parse), what that means for
 * the run, and the judgement itself: failing the run, or the degraded grace. Handed what it
 * needs (run()), so that it imports nothing from the entry: a page whose scripts all load
 * never fetches it (docs/browser.md#what-a-page-loads).
 */
import type { VendorLoaderConfig } from '../shared/types.js';
import type { BlackboxCaptureError, FaultArgs } from './errors.js';
import type { NormalizedOptions } from './options.js';

/**
 * The run as the core hands it, read afresh at each use: the loader config, the scripts found
 * unparsed (one array per run: the run's identity), the latest blackbox, when it became final,
 * the options of the call that started it (undefined once it ended), and how to end it.
 */
export type Run = [
  loader: VendorLoaderConfig,
  unparsed: string[],
  latest: string | undefined,
  complete: number | false | undefined,
  running: NormalizedOptions | undefined,
  fail: (error: BlackboxCaptureError) => void,
  accept: (blackbox: unknown, done: unknown) => void,
  fault: (...fact: FaultArgs) => BlackboxCaptureError,
];

// The core's rules (rules.ts, capture.ts), copied: an import would make this chunk load the entry.
const ON = ['1', 'true'];
const OFF = ['0', 'false'];
/** The vendor's boolean parsing: true/false, "1"/"0", "true"/"false"; anything else is `fallback`. */
const vendorFlag = (value: unknown, fallback?: boolean): boolean =>
  // eslint-disable-next-line @typescript-eslint/restrict-template-expressions -- the vendor reads any value as its string
  ON.includes(`${value}`) || (!!fallback && !OFF.includes(`${value}`));
const FLAG_END = '_load_failure';
/** The script a loader failure flag names (`fp_static_wdp_load_failure` names `fp_static_wdp`), or '' for any other key. */
const flaggedScript = (key: string): string =>
  (key.startsWith('fp_') || key.startsWith('io_')) && key.endsWith(FLAG_END) ? key.slice(0, -FLAG_END.length) : '';

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
export function failedScripts(loader: VendorLoaderConfig, unparsed: string[]): string[] {
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
 */
function verdict(loader: VendorLoaderConfig, failed: string[]): 0 | 1 | 2 {
  const broken = (list: string) => failed.some((name) => name.startsWith(list));
  const chains = [vendorFlag(loader.fp_static, true) && 'fp_', vendorFlag(loader.tp, true) && 'io_'].filter(
    (list): list is string => !!list,
  );
  // Stryker disable next-line StringLiteral: every failed name starts fp_ or io_ (SCRIPTS, flags), so '' finds what 'fp_' does once 'io_' finds none
  return chains[0] && chains.every(broken) ? 2 : broken('fp_') && !broken('io_') ? 1 : 0;
}

/** The run whose degraded grace has started (its unparsed array): one grace a run. */
let graced: string[] | undefined;

/**
 * What the failed scripts mean for the run: it fails at once when every chain it starts has
 * failed; when every first-party chain has failed (flags or an unparsed script) with the third
 * party delivered, the loader may never complete (an HTML page in place of a script looks
 * loaded to it): wait a short grace, then finish with what the third party gave, as a final
 * update of the latest blackbox would (unless the run has ended or another has started by then).
 * @public (loaded by capture.ts with import())
 */
export function judge(run: () => Run): void {
  const [loader, unparsed, latest, complete, running, fail, , fault] = run();
  const failed = failedScripts(loader, unparsed);
  const found = verdict(loader, failed);
  if (found > 1) fail(fault('collection_failed', [failed, loader.uri_hook], { blackbox: latest, scripts: failed }));
  else if (found && !complete && running && latest) {
    // Stryker disable next-line ConditionalExpression: a second grace of one run, started later, ends it no sooner than the first
    if (graced === unparsed) return;
    graced = unparsed;
    setTimeout(() => {
      const [, now, latest, , , , accept] = run();
      if (now === unparsed) accept(latest, true);
    }, running.degradedGraceMs ?? 2000);
  }
}

/**
 * Judges the run a task from now, for `event` (a script error, which may name a script that did
 * not parse) or for an adopted loader: the loader sets its failure flags in its own handlers,
 * which run after the core's capture listener. `judged`: tells the core the judgement is no
 * longer due.
 * @public (loaded by capture.ts with import())
 */
export function judgeSoon(run: () => Run, judged: () => void, event?: Event): void {
  const [loader, unparsed] = run();
  const name = event && unparsedScript(event, loader);
  if (name) unparsed.push(name);
  setTimeout(() => {
    judged();
    judge(run);
  });
}
