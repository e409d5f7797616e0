/**
 * The first-party scripts through the front: the classic proxy bugs (prefix not stripped: a
 * 404; no route: the site's fallback page answers HTML), and the dynamic script, which embeds
 * per-request values, from no cache.
 */
import type { Add } from '../doctor.js';
import { readText, type Get } from '../fetching.js';

export const JAVASCRIPT = /^(text|application)\/(x-)?(javascript|ecmascript)\b/i;
/** Bytes read of a script's answer: enough to tell a script from an HTML page. */
export const MAX_SCRIPT_BYTES = 256 * 1024;

/** The static_script and dyn_script findings; the dynamic script's answer when it was the script. */
export async function checkFirstPartyScripts(
  get: Get,
  add: Add,
  context: { page: URL; prefix: string; version: string },
): Promise<Response | undefined> {
  const { page, prefix, version } = context;
  const base = `${page.origin}${prefix}/${version}`;
  /** The dynamic script's answer, when it was the script: the cache and cookie checks read it. */
  let dyn: Response | undefined;
  for (const [id, file] of [
    ['static_script', 'static_wdp.js'],
    ['dyn_script', 'dyn_wdp.js'],
  ] as const) {
    const url = `${base}/${file}`;
    try {
      const response = await get(url);
      const type = response.headers.get('content-type') ?? '';
      const { text: body } = await readText(response, MAX_SCRIPT_BYTES);
      if (response.status === 404 && /^\s*\{"error":\{"code":"not_found"\}\}\s*$/.test(body)) {
        // The kit's own proxy answered, for a path without its prefix: something before it took the prefix off.
        add(
          id,
          'fail',
          `${url} answered 404 from the kit's proxy, which got a path without "${prefix}"`,
          `mount the proxy on the full path, as Express's app.all('${prefix}/*splat', toNodeHandler(iojs)): app.use('${prefix}', …) strips "${prefix}" before the proxy sees it; or give createFirstPartyProxy the prefix the page uses`,
        );
      } else if (response.status === 404) {
        add(
          id,
          'fail',
          `${url} answered 404`,
          `the proxy must strip "${prefix}" before forwarding (nginx: proxy_pass with a trailing slash), or no proxy route exists for ${prefix}/`,
        );
      } else if (/html/i.test(type) || /^\s*</.test(body)) {
        add(
          id,
          'fail',
          `${url} answered HTML (${response.status}): the site's fallback page, not the script`,
          `route ${prefix}/ to the vendor's first-party host before the SPA fallback (createFirstPartyProxy, or the shipped nginx location)`,
        );
      } else if (!response.ok || !JAVASCRIPT.test(type)) {
        add(
          id,
          'fail',
          `${url} answered ${response.status} ${type || 'without a content type'}`,
          "pass the collector's Content-Type back unchanged",
        );
      } else {
        add(id, 'pass', `${url} answered JavaScript`);
        if (id === 'dyn_script') dyn = response;
      }
    } catch (error) {
      add(
        id,
        'fail',
        `${url} could not be fetched (${(error as Error).message})`,
        `route ${prefix}/ to the vendor's first-party host`,
      );
    }
  }
  return dyn;
}

/** The dyn_not_cached finding: no-store, and no Age. */
export function checkDynamicNotCached(add: Add, dyn: Response): void {
  const cacheControl = dyn.headers.get('cache-control') ?? '';
  const age = dyn.headers.get('age');
  if (age !== null)
    add(
      'dyn_not_cached',
      'fail',
      `dyn_wdp.js came from a cache (Age: ${age})`,
      'exclude dyn_wdp.js from every cache and CDN: Cache-Control: no-store, private',
    );
  else if (!/\bno-store\b/i.test(cacheControl))
    add(
      'dyn_not_cached',
      'fail',
      `dyn_wdp.js may be cached (Cache-Control: ${cacheControl || 'none'})`,
      'answer dyn_wdp.js with Cache-Control: no-store, private (createFirstPartyProxy does)',
    );
  else add('dyn_not_cached', 'pass', 'dyn_wdp.js is no-store and came from no cache');
}
