// Caller addresses: one parser for callback sources and visitors, and the visitor an address
// belongs to (its network under addressPrefix: an IPv6 /64 and an IPv4 address by default).
import { describe, expect, it } from 'vitest';
import {
  addressGroup,
  checkAddressPrefix,
  DEFAULT_ADDRESS_PREFIX,
  parseAddress,
} from '../../../src/server/net/address.js';

const group = (address: string) => addressGroup(address, DEFAULT_ADDRESS_PREFIX);

describe('parseAddress', () => {
  it.each([
    ['192.0.2.1', 'c0000201', 32],
    ['::ffff:192.0.2.1', 'c0000201', 32],
    ['::FFFF:c000:201', 'c0000201', 32],
    ['[::ffff:192.0.2.1]', 'c0000201', 32],
    ['::1', '1', 128],
    ['[::1]', '1', 128],
    ['fe80::1%eth0', 'fe800000000000000000000000000001', 128],
    ['[fe80::1%25en0]', 'fe800000000000000000000000000001', 128],
  ])('%s is 0x%s of %d bits', (text, hex, bits) => {
    const parsed = parseAddress(text);
    expect([parsed?.value.toString(16), parsed?.bits]).toEqual([hex, bits]);
  });

  it.each(['', 'host.example', '1.2.3.256', '1.2.3', '2001:db8::1::2', '::ffff:1.2.3.256', '[::1'])(
    '%j is no address',
    (text) => expect(parseAddress(text)).toBeUndefined(),
  );
});

describe('addressGroup: the visitor an address belongs to', () => {
  it('groups IPv6 by its /64 by default: every address of one /64 is one visitor', () => {
    expect(group('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:1:2::/64');
    expect(group('2001:db8:1:2::7')).toBe('2001:db8:1:2::/64');
    expect(group('[2001:DB8:1:2:ffff::1]')).toBe('2001:db8:1:2::/64');
    expect(group('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(group('fe80::1%eth0')).toBe('fe80::/64');
  });

  it('keeps IPv4 by its exact address by default, an IPv4-mapped address as the IPv4 one', () => {
    expect(group('192.0.2.7')).toBe('192.0.2.7');
    expect(group('192.0.2.8')).toBe('192.0.2.8');
    expect(group('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(group('::ffff:c000:207')).toBe('192.0.2.7');
  });

  it('takes prefixes of its own', () => {
    const wide = checkAddressPrefix({ ipv4: 24, ipv6: 48 });
    expect(addressGroup('192.0.2.7', wide)).toBe('192.0.2.0/24');
    expect(addressGroup('::ffff:192.0.2.200', wide)).toBe('192.0.2.0/24');
    expect(addressGroup('2001:db8:1:2::1', wide)).toBe('2001:db8:1::/48');
    expect(addressGroup('2001:db8:1:ffff::1', wide)).toBe('2001:db8:1::/48');
    expect(addressGroup('2001:db8:1:2::1', checkAddressPrefix({ ipv6: 128 }))).toBe('2001:db8:1:2::1/128');
    expect(addressGroup('192.0.2.7', checkAddressPrefix({ ipv6: 56 }))).toBe('192.0.2.7');
  });

  it('text that is no address stands for itself', () => {
    expect(group('unknown')).toBe('unknown');
  });
});

describe('checkAddressPrefix', () => {
  it('fills in the defaults', () => {
    expect(checkAddressPrefix(undefined)).toEqual({ ipv4: 32, ipv6: 64 });
    expect(checkAddressPrefix({ ipv6: 56 })).toEqual({ ipv4: 32, ipv6: 56 });
  });

  it.each([
    ['null', null],
    ['a number', 64],
    ['no ipv4 bits', { ipv4: 0 }],
    ['too many ipv4 bits', { ipv4: 33 }],
    ['too many ipv6 bits', { ipv6: 129 }],
    ['a fraction', { ipv6: 63.5 }],
    ['a string', { ipv6: '64' }],
    ['a negative', { ipv4: -8 }],
  ])('refuses %s with invalid_configuration naming the option', (_, prefix) => {
    expect(() => checkAddressPrefix(prefix as never)).toThrow(
      expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining('addressPrefix') }),
    );
  });
});
