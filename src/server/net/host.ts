/**
 * The Host check shared by the Node adapter (src/server/adapter/node/request.ts) and the first-party proxy, which also
 * runs on edge runtimes: this module imports nothing, so the proxy need not load the adapter.
 */

/** A Host header value: a DNS name, IPv4 or bracketed IPv6 address, with an optional port. */
export function validHost(host: string): boolean {
  if (
    !/^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/.test(
      host,
    )
  )
    return false;
  // What the pattern lets through must also make a URL: "99999999999" reads as an IPv4 address out of range.
  return URL.canParse(`http://${host}/`);
}
