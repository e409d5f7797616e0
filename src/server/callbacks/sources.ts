/** Where callbacks may come from: the service's addresses and CIDR ranges, IPv4 and IPv6. */
import { DeviceRiskError, ERR_INVALID_CONFIGURATION } from '../errors.js';
import { plainAddress } from '../http.js';
import { callbackMessages } from '../messages.js';

/** An IPv4 or IPv6 address as a number and its width in bits; undefined when it is neither. */
function parseAddress(text: string): { value: bigint; bits: number } | undefined {
  const address = plainAddress(text).replace(/^\[|\]$/g, '');
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
  return { value: all.reduce((n, g) => (n << 16n) | BigInt(parseInt(g, 16)), 0n), bits: 128 };
}

/** A matcher for addresses and CIDR ranges; throws on an entry that is neither. */
export function sourceMatcher(entries: readonly string[]): (address: string) => boolean {
  const ranges = entries.map((entry) => {
    const [base = '', prefix] = entry.split('/');
    const parsed = parseAddress(base);
    // Digits only: Number('') is 0, and "10.0.0.0/" must not mean every address.
    const length = prefix === undefined ? parsed?.bits : /^\d{1,3}$/.test(prefix) ? Number(prefix) : undefined;
    if (!parsed || length === undefined || length > parsed.bits) {
      throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, callbackMessages.notASource(entry));
    }
    const shift = BigInt(parsed.bits - length);
    return { bits: parsed.bits, shift, network: parsed.value >> shift };
  });
  return (address) => {
    const parsed = parseAddress(address);
    return (
      !!parsed && ranges.some((range) => range.bits === parsed.bits && parsed.value >> range.shift === range.network)
    );
  };
}
