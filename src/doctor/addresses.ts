/**
 * Which addresses are not on the public internet: loopback, private, link-local, unique-local,
 * shared (CGNAT), "this network", cloud metadata and the like. The doctor fetches none of them
 * for a page that is not on one itself (doctor.ts). Pure, for the command and the page alike.
 */

/** An IPv4 address as its four bytes; undefined unless it is four decimal parts of 0 to 255. */
function ipv4Bytes(text: string): number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((part) => /^\d{1,3}$/.test(part) && Number(part) <= 255)) return undefined;
  return parts.map(Number);
}

/** An IPv6 address as its eight 16-bit groups (a dotted IPv4 tail and "::" allowed); undefined if it is none. */
function ipv6Groups(text: string): number[] | undefined {
  let head = text.toLowerCase().replace(/%.*$/, ''); // a zone ("fe80::1%eth0") names no other address
  const groups: number[] = [];
  const tail = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(head);
  let tailGroups: number[] = [];
  if (tail) {
    const bytes = ipv4Bytes(tail[2]!);
    if (!bytes) return undefined;
    tailGroups = [(bytes[0]! << 8) | bytes[1]!, (bytes[2]! << 8) | bytes[3]!];
    head = tail[1]!.endsWith('::') ? tail[1]! : tail[1]!.slice(0, -1);
  }
  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const parse = (half: string) => (half === '' ? [] : half.split(':'));
  const [left, right = undefined] = halves.map(parse);
  for (const group of [...left!, ...(right ?? [])]) if (!/^[0-9a-f]{1,4}$/.test(group)) return undefined;
  const known = left!.length + (right?.length ?? 0) + tailGroups.length;
  if (right === undefined ? known !== 8 : known > 7) return undefined;
  groups.push(...left!.map((g) => parseInt(g, 16)));
  if (right !== undefined) groups.push(...new Array<number>(8 - known).fill(0), ...right.map((g) => parseInt(g, 16)));
  groups.push(...tailGroups);
  return groups;
}

/** [first address, prefix length, what the range is] */
const IPV4_RANGES: Array<[string, number, string]> = [
  ['0.0.0.0', 8, '"this network" (0.0.0.0/8)'],
  ['10.0.0.0', 8, 'private (10.0.0.0/8)'],
  ['100.64.0.0', 10, 'shared, carrier-grade NAT (100.64.0.0/10)'],
  ['127.0.0.0', 8, 'loopback (127.0.0.0/8)'],
  ['169.254.0.0', 16, 'link-local, cloud metadata (169.254.0.0/16)'],
  ['172.16.0.0', 12, 'private (172.16.0.0/12)'],
  ['192.0.0.0', 24, 'IETF protocol assignments (192.0.0.0/24)'],
  ['192.168.0.0', 16, 'private (192.168.0.0/16)'],
  ['198.18.0.0', 15, 'benchmarking (198.18.0.0/15)'],
  ['168.63.129.16', 32, 'cloud metadata (168.63.129.16, Azure)'],
  ['224.0.0.0', 4, 'multicast (224.0.0.0/4)'],
  ['240.0.0.0', 4, 'reserved (240.0.0.0/4)'],
];

const IPV6_RANGES: Array<[string, number, string]> = [
  ['::', 128, 'unspecified (::)'],
  ['::1', 128, 'loopback (::1)'],
  ['fe80::', 10, 'link-local (fe80::/10)'],
  ['fec0::', 10, 'site-local (fec0::/10)'],
  ['fc00::', 7, 'unique-local (fc00::/7)'],
  ['ff00::', 8, 'multicast (ff00::/8)'],
];

/** Whether the first `length` bits of two byte or group lists agree (`width` bits an element). */
function samePrefix(a: number[], b: number[], length: number, width: number): boolean {
  for (let bit = 0; bit < length; bit += width) {
    const bits = Math.min(width, length - bit);
    const shift = width - bits;
    if (a[bit / width]! >> shift !== b[bit / width]! >> shift) return false;
  }
  return true;
}

function ipv4Range(bytes: number[]): string | undefined {
  for (const [first, length, name] of IPV4_RANGES) if (samePrefix(bytes, ipv4Bytes(first)!, length, 8)) return name;
  return undefined;
}

/**
 * What kind of non-public address `address` is (its range, in words), or undefined for a public
 * one. IPv4, IPv6, and IPv4 inside IPv6 (mapped `::ffff:10.0.0.1` or `::ffff:a00:1`, compatible
 * `::10.0.0.1`, NAT64 `64:ff9b::10.0.0.1`) judged by the IPv4 address they carry. Something that
 * is no address at all is refused too.
 */
export function nonPublicRange(address: string): string | undefined {
  const text = address.replace(/^\[(.*)\]$/, '$1');
  const v4 = ipv4Bytes(text);
  if (v4) return ipv4Range(v4);
  const groups = ipv6Groups(text);
  if (!groups) return 'not an IP address';
  const zeros = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  const embedded = [groups[6]! >> 8, groups[6]! & 255, groups[7]! >> 8, groups[7]! & 255];
  const carried =
    (zeros(0, 5) && groups[5] === 0xffff) || // ::ffff:a.b.c.d, mapped
    (zeros(0, 6) && !(groups[6] === 0 && groups[7]! <= 1)) || // ::a.b.c.d, compatible (:: and ::1 are below)
    (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)); // 64:ff9b::a.b.c.d, NAT64
  if (carried) {
    const range = ipv4Range(embedded);
    return range && `${range} as IPv6`;
  }
  for (const [first, length, name] of IPV6_RANGES) if (samePrefix(groups, ipv6Groups(first)!, length, 16)) return name;
  return undefined;
}

/** The address a URL's host names when it is an IP address (brackets removed); undefined for a name. */
export function literalAddress(hostname: string): string | undefined {
  const text = hostname.replace(/^\[(.*)\]$/, '$1');
  return ipv4Bytes(text) || ipv6Groups(text) ? text : undefined;
}
