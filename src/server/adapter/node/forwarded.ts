/**
 * The shopper's address behind a front the integrator names (`trustedFronts` of
 * toNodeHandler): a request whose socket comes from one of them is the shopper's whose
 * address the front appended last to X-Forwarded-For; from anyone else, the header is
 * ignored (anyone can write it). Fronts in a chain are skipped from the right, so that a CDN
 * before a load balancer both named gives the address the CDN saw (docs/gateway.md#trusted-fronts).
 */
import { parseAddress } from '../../net/address.js';
import { sourceMatcher } from '../../callbacks/sources.js';
import { plainAddress } from '../../net/http.js';

/** Whether an address is one of the named fronts; none named, none is. */
const trustedMatcher = (trustedFronts: readonly string[]): ((address: string) => boolean) =>
  trustedFronts.length ? sourceMatcher(trustedFronts) : () => false;

/** The client address of a request from `socketAddress` carrying `forwardedFor`, given the trusted fronts. */
export function forwardedAddress(
  trustedFronts: readonly string[],
): (socketAddress: string, forwardedFor: string | string[] | undefined) => string {
  const trusted = trustedMatcher(trustedFronts);
  return (socketAddress, forwardedFor) => {
    let address = plainAddress(socketAddress);
    if (!trusted(address) || forwardedFor === undefined) return address;
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = plainAddress(hops[i]!.trim());
      // A hop that is no address (a front's garbage): the last good one stands.
      if (!parseAddress(hop)) return address;
      address = hop;
      if (!trusted(hop)) return hop;
    }
    return address;
  };
}

/**
 * The scheme the shopper used, as a trusted front says it (X-Forwarded-Proto, the first of a
 * list: the front nearest the shopper's): `http` or `https`; none from anyone else, or for
 * any other value, so that the request's own scheme stands.
 */
export function forwardedProto(
  trustedFronts: readonly string[],
): (socketAddress: string, forwardedProto: string | string[] | undefined) => 'http' | 'https' | undefined {
  const trusted = trustedMatcher(trustedFronts);
  return (socketAddress, forwardedProto) => {
    if (!trusted(plainAddress(socketAddress)) || forwardedProto === undefined) return undefined;
    const first = (Array.isArray(forwardedProto) ? forwardedProto.join(',') : forwardedProto).split(',')[0]!;
    const scheme = first.trim().toLowerCase();
    return scheme === 'http' || scheme === 'https' ? scheme : undefined;
  };
}

/**
 * The address of a request whose X-Forwarded-For is ignored (it comes from no named front);
 * undefined for one without the header, or from a front.
 */
export function forwardIgnored(
  trustedFronts: readonly string[],
): (socketAddress: string, forwardedFor: string | string[] | undefined) => string | undefined {
  const trusted = trustedMatcher(trustedFronts);
  return (socketAddress, forwardedFor) => {
    const address = plainAddress(socketAddress);
    return forwardedFor === undefined || trusted(address) ? undefined : address;
  };
}
