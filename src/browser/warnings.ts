/**
 * Development build only: warnings for set-ups that are legal but costly or fragile.
 * The production build swaps this module for warnings.production.ts, which warns of
 * nothing, so checkout pages pay for none of it.
 */
import type { NormalizedOptions } from './options.js';

const PREFIX = '[blackbox-capture] ';
const warned = new Set<string>();

function warn(kind: string, message: string): void {
  if (warned.has(kind)) return;
  warned.add(kind);
  console.warn(PREFIX + message);
}

/** Called as a run starts, before the loader tag is written; `href` is the loader's absolute URL. */
export function warnRiskySetup(options: NormalizedOptions, href: string): void {
  const { uriHook, inject } = options;
  if (uriHook !== undefined && uriHook[0] !== '/') {
    warn('relative_uri_hook', `uriHook "${uriHook}" is relative: the first-party scripts resolve against each page's own path. Use "/${uriHook}".`);
  }
  const loaderOrigin = new URL(href).origin;
  const hinted = Array.from(document.querySelectorAll<HTMLLinkElement>('link[rel~=preconnect],link[rel~=preload]')).some(
    (link) => link.href === href || new URL(link.href, document.baseURI).origin === loaderOrigin,
  );
  if (loaderOrigin !== location.origin && !hinted) {
    warn('no_preconnect', `The loader is on ${loaderOrigin} and the page has no preconnect hint for it: add <link rel="preconnect" href="${loaderOrigin}"> to the page's head.`);
  }
  if (inject !== false && Array.from(document.scripts).some((script) => script.src === href)) {
    warn('inject_with_tag', `The page already has a tag for ${href}: the package watches it instead of adding another. Say so with inject: false.`);
  }
}
