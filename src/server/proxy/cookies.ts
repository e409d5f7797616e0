/**
 * The vendor's cookies through the first-party proxy: only they reach the collector, under
 * their own names, and the collector's come back in the vendor's namespace, host-only and
 * confined to the prefix (docs/proxy.md, "The contract of a first-party front").
 */
import { COOKIE_NAME, type ProxyConfig } from './options.js';

type CookieConfig = Pick<ProxyConfig, 'cookiePrefix' | 'allowCookies' | 'basePath' | 'prefix'>;

/**
 * The browser's cookies that belong to the vendor, under their own names; undefined if none.
 * Only `name=value` pairs: a cookie without "=" is a nameless one to a browser, whatever its
 * value (RFC 6265bis, parsing a cookie), and never the vendor's. A comma ends a cookie as ";" does: a
 * cookie's value holds none (RFC 6265 4.1.1), and runtimes join repeated Cookie lines (HTTP/2
 * sends them split, RFC 9113 8.2.3) with ", " as `Headers` joins any header (docs/proxy.md,
 * the contract).
 */
export function vendorCookies(header: string | null, config: CookieConfig): string | undefined {
  const { allowCookies, cookiePrefix } = config;
  if (header === null) return undefined;
  const kept: string[] = [];
  for (const pair of header.split(/[;,]/)) {
    const trimmed = pair.trim();
    const at = trimmed.indexOf('=');
    if (at < 1) continue;
    const name = trimmed.slice(0, at);
    if (allowCookies.has(name)) kept.push(trimmed);
    else if (name.startsWith(cookiePrefix) && name.length > cookiePrefix.length)
      kept.push(trimmed.slice(cookiePrefix.length));
  }
  return kept.length ? kept.join('; ') : undefined;
}

/** A collector cookie as the browser gets it: in the vendor's namespace, host-only, under the prefix. */
export function rewriteSetCookie(line: string, config: CookieConfig): string | undefined {
  const { allowCookies, cookiePrefix, basePath, prefix } = config;
  const attributes = line.split(';');
  const pair = attributes.shift()!; // split() always gives a first part
  const at = pair.indexOf('=');
  const name = pair.slice(0, at).trim();
  if (at < 1 || !COOKIE_NAME.test(name)) return undefined;
  // Stryker disable next-line StringLiteral: no Path and Path=/ both map to the prefix itself
  let path = '/';
  const kept: string[] = [];
  for (const attribute of attributes) {
    const key = attribute.split('=')[0]!.trim().toLowerCase();
    if (key === 'path') path = attribute.slice(attribute.indexOf('=') + 1).trim();
    else if (key !== 'domain') kept.push(attribute.trim()); // Domain dropped: the cookie stays on this host
  }
  // The collector's path, mapped under the prefix; anything odd becomes the prefix itself.
  const mapped = path.startsWith(basePath) ? path.slice(basePath.length - 1) : path;
  const confined =
    /^\/[A-Za-z0-9\-._~/]*$/.test(mapped) && !mapped.split('/').includes('..')
      ? prefix + mapped.replace(/\/$/, '')
      : prefix;
  const outName = allowCookies.has(name) ? name : cookiePrefix + name;
  return [`${outName}=${pair.slice(at + 1).trim()}`, `Path=${confined}`, ...kept].join('; ');
}
