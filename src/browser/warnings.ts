/**
 * Development build only: warnings for set-ups that are legal but costly or fragile.
 * The production build swaps this module for warnings.production.ts, which warns of
 * nothing, so checkout pages pay for none of it.
 */
import { PREFIX } from './errors.js';
import type { NormalizedOptions } from './options.js';

const warned = new Set<string>();
/** The loader URL whose tag a copy of the package added (development builds only). */
const INJECTED = Symbol.for('blackbox-capture.injected');

/** Each warning once per page, also when a failed run is started again. */
function warn(message: string): void {
  if (warned.has(message)) return;
  warned.add(message);
  console.warn(PREFIX + message);
}

/** Called as a run starts, before the loader tag is written; `href` is the loader's absolute URL. */
export function warnRiskySetup(options: NormalizedOptions, href: string): void {
  const { uriHook, inject } = options;
  if (uriHook !== undefined && uriHook[0] !== '/') {
    warn(
      `uriHook "${uriHook}" is relative: the first-party scripts resolve against each page's own path. Use "/${uriHook}".`,
    );
  }
  const loaderOrigin = new URL(href).origin;
  const hinted = Array.from(
    document.querySelectorAll<HTMLLinkElement>('link[rel~=preconnect],link[rel~=preload]'),
  ).some((link) => new URL(link.href, document.baseURI).origin === loaderOrigin);
  if (loaderOrigin !== location.origin && !hinted) {
    warn(
      `The loader is on ${loaderOrigin} and the page has no preconnect hint for it: add <link rel="preconnect" href="${loaderOrigin}"> to the page's head.`,
    );
  }
  // The package's own tag, added by another copy of it (a script tag that Turbo or htmx ran
  // again), is no tag of the page's: the copies mark it on the window, as they add it.
  const page = window as unknown as Record<symbol, string | undefined>;
  const tagged = Array.from(document.scripts).some((script) => script.src === href);
  if (inject !== false && !tagged) page[INJECTED] = href;
  if (inject !== false && tagged && page[INJECTED] !== href) {
    warn(
      `The page already has a tag for ${href}: the package watches it instead of adding another. Say so with inject: false.`,
    );
  }
}
