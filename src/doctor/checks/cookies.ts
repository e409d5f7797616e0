/**
 * The vendor's cookies through the front: each in the kit's namespace and under the prefix
 * (leaks.ts's cookieScope, with or without the collector), and, given the collector, the
 * cookies it sets compared with those that came through.
 */
import type { Add } from '../doctor.js';
import type { Get } from '../fetching.js';
import { cookieScope } from '../leaks.js';

/** The set_cookie finding. */
export async function checkCookies(
  get: Get,
  add: Add,
  dyn: Response,
  context: { page: URL; prefix: string; version: string; cookiePrefix: string; collectorUrl: string | undefined },
): Promise<void> {
  const { page, prefix, version, cookiePrefix } = context;
  const base = `${page.origin}${prefix}/${version}`;
  const proxied = dyn.headers.getSetCookie();
  const scope = cookieScope(proxied, { prefix, cookiePrefix, requestPath: new URL(base).pathname + '/dyn_wdp.js' });
  if (scope) add('set_cookie', 'fail', scope.message, scope.fix);
  else if (context.collectorUrl) {
    try {
      const direct = await get(new URL(`${version}/dyn_wdp.js`, context.collectorUrl.replace(/\/?$/, '/')));
      await direct.body?.cancel();
      const sent = direct.headers.getSetCookie();
      // A warning, not a failure: collection works without the device cookie, with less continuity between visits.
      if (sent.length > 0 && proxied.length === 0)
        add(
          'set_cookie',
          'warn',
          `the collector sets ${sent.length} cookie(s); none came through the proxy`,
          'pass Set-Cookie back: createFirstPartyProxy does, in its own namespace (the shipped nginx configuration drops cookies on purpose: nginx cannot namespace them)',
        );
      else
        add('set_cookie', 'pass', `${proxied.length} cookie(s) through the proxy, ${sent.length} from the collector`);
    } catch (error) {
      add(
        'set_cookie',
        'warn',
        `the collector could not be fetched (${(error as Error).message})`,
        'check --collector-url',
      );
    }
  } else if (proxied.length > 0) add('set_cookie', 'pass', `${proxied.length} cookie(s) through the proxy`);
  else
    add(
      'set_cookie',
      'warn',
      "no Set-Cookie in the proxy's answer",
      "give --collector-url to compare with the collector's own answer",
    );
}
