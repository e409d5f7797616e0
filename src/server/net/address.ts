/**
 * Caller addresses, IPv4 and IPv6, as numbers: the callback sources' ranges
 * (callbacks/sources.ts) and the endpoint's visitors (a network one party holds, counted as
 * one: endpoint/admission.ts, and the memory queue's fair order) use this one parser.
 */
import { DeviceRiskError, ERR_INVALID_CONFIGURATION } from '../errors.js';
import { plainAddress } from './http.js';
import { endpointMessages } from '../messages.js';

/** An address as a number and its width in bits: 32 for IPv4, 128 for IPv6. */
export interface ParsedAddress {
  value: bigint;
  bits: 32 | 128;
}

/** The IPv4-mapped IPv6 range, ::ffff:0:0/96. */
const MAPPED = 0xffffn;

/**
 * An IPv4 or IPv6 address as a number; undefined when it is neither. Brackets (`[::1]`) and
 * an IPv6 zone id (`fe80::1%eth0`) are dropped; an IPv4-mapped IPv6 address
 * (`::ffff:192.0.2.1`, `::ffff:c000:201`) is the IPv4 address it carries.
 */
export function parseAddress(text: string): ParsedAddress | undefined {
  const address = plainAddress(
    text
      .trim()
      .replace(/^\[(.*)\]$/, '$1')
      .replace(/%[^%]*$/, ''),
  );
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(address);
  if (v4) {
    const parts = v4.slice(1).map(Number);
    return parts.every((p) => p <= 255)
      ? { value: parts.reduce((n, p) => (n << 8n) | BigInt(p), 0n), bits: 32 }
      : undefined;
  }
  if (!/^[0-9a-fA-F:]+$/.test(address) || address.split('::').length > 2) return undefined;
  const [head = '', tail] = address.split('::');
  const groups = (part: string) => (part ? part.split(':') : []);
  const missing = 8 - groups(head).length - groups(tail ?? '').length;
  const all =
    tail === undefined ? groups(head) : [...groups(head), ...Array<string>(missing).fill('0'), ...groups(tail)];
  if (all.length !== 8 || all.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) return undefined;
  const value = all.reduce((n, g) => (n << 16n) | BigInt(parseInt(g, 16)), 0n);
  return value >> 32n === MAPPED ? { value: value & 0xffffffffn, bits: 32 } : { value, bits: 128 };
}

/** How many leading bits name one visitor's network, per family. */
export interface AddressPrefix {
  /** Default 32: one IPv4 address is one visitor (many shoppers share one behind a NAT). */
  ipv4?: number;
  /** Default 64: one IPv6 /64 is one visitor (a home, a phone, a server each get a whole /64). */
  ipv6?: number;
}

export const DEFAULT_ADDRESS_PREFIX: Required<AddressPrefix> = { ipv4: 32, ipv6: 64 };

/** The prefix lengths given, checked (whole numbers from 1 to 32 and 128), with the defaults for the others. */
export function checkAddressPrefix(prefix: AddressPrefix | undefined, name = 'addressPrefix'): Required<AddressPrefix> {
  if (prefix === undefined) return DEFAULT_ADDRESS_PREFIX;
  const within = (n: unknown, most: number) =>
    n === undefined || (typeof n === 'number' && Number.isInteger(n) && n > 0 && n <= most);
  if (typeof prefix !== 'object' || prefix === null || !within(prefix.ipv4, 32) || !within(prefix.ipv6, 128))
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, endpointMessages.badAddressPrefix(name));
  return { ...DEFAULT_ADDRESS_PREFIX, ...prefix };
}

/**
 * The visitor an address belongs to: its network under `prefix` as text (`192.0.2.7`,
 * `2001:db8:0:1::/64`); text that is no address stands for itself.
 */
export function addressGroup(address: string, prefix: Required<AddressPrefix>): string {
  const parsed = parseAddress(address);
  if (!parsed) return address;
  const length = parsed.bits === 32 ? prefix.ipv4 : prefix.ipv6;
  const shift = BigInt(parsed.bits - length);
  const network = (parsed.value >> shift) << shift;
  if (parsed.bits === 32) {
    const text = [24n, 16n, 8n, 0n].map((s) => (network >> s) & 0xffn).join('.');
    return length === 32 ? text : `${text}/${length}`;
  }
  const groups = Array.from({ length: 8 }, (_, i) => ((network >> BigInt(112 - 16 * i)) & 0xffffn).toString(16));
  return `${groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::')}/${length}`;
}
