/**
 * Which requests the first-party proxy takes, and the collector path each one names: only a
 * path under the prefix, and only one that can name nothing but a file under the collector's
 * base path (docs/proxy.md, "The kit's proxy, in detail").
 */

/**
 * The path after the prefix, when it can only name a file under the collector's base
 * path: undefined for anything else. Checked as sent and after each of up to two
 * decodings, so encoded and double-encoded forms fail as the plain ones do.
 */
export function collectorPath(rest: string): string | undefined {
  let layer = rest;
  for (let decodings = 0; ; decodings++) {
    // Printable ASCII path characters only: no scheme or port colon, no backslash, no control
    // character, no empty segment ("//" would start a host), no "." or ".." segment, and no
    // ";": some servers (Tomcat) read "..;" as "..", and the vendor's paths have none.
    if (!/^[A-Za-z0-9\-._~!$&'()*+,=@/%]*$/.test(layer) || layer.startsWith('/') || layer.includes('//'))
      return undefined;
    if (layer.split('/').some((segment) => segment === '.' || segment === '..')) return undefined;
    if (!layer.includes('%')) return rest;
    // An encoded slash or backslash is a path separator in disguise.
    if (/%(2f|5c)/i.test(layer) || decodings === 2) return undefined;
    // Stryker disable BlockStatement: a malformed escape fails again on the next pass, and the pass limit refuses it
    try {
      layer = decodeURIComponent(layer);
    } catch {
      return undefined; // a malformed escape
    }
    // Stryker restore BlockStatement
  }
}

/** The request's path as sent, before any decoding: what the browser asked for. */
export function rawPathOf(request: Request): string {
  // Stryker disable next-line Regex: a request URL starts with its scheme, so its first origin is at the start
  const afterOrigin = request.url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '');
  return afterOrigin.split(/[?#]/)[0]!; // split() always gives a first part
}

/** Whether a raw path is the prefix or under it (`/iojsx` is not). */
export const underPrefix = (path: string, prefix: string) => path === prefix || path.startsWith(prefix + '/');
