/** Where callbacks may come from: the service's addresses and CIDR ranges, IPv4 and IPv6. */
import { DeviceRiskError, ERR_INVALID_CONFIGURATION } from '../errors.js';
import { parseAddress } from '../net/address.js';
import { callbackMessages } from '../messages.js';

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
