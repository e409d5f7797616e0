// Which addresses the doctor keeps away from for a page on a public one (src/doctor/addresses.ts),
// and the command's look-up that gives it every address of a name (src/doctor/resolve.ts).
import { describe, expect, it } from 'vitest';
import { literalAddress, nonPublicRange } from '../../src/doctor/addresses.js';
import { resolveAll } from '../../src/doctor/resolve.js';

describe('nonPublicRange', () => {
  it.each([
    ['0.0.0.0', '"this network"'],
    ['0.255.1.2', '"this network"'],
    ['10.0.0.1', 'private (10.0.0.0/8)'],
    ['100.64.0.1', 'shared, carrier-grade NAT'],
    ['100.100.100.200', 'shared, carrier-grade NAT'], // Alibaba Cloud's metadata
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'link-local, cloud metadata'],
    ['168.63.129.16', 'cloud metadata'],
    ['172.16.0.1', 'private (172.16.0.0/12)'],
    ['172.31.255.255', 'private (172.16.0.0/12)'],
    ['192.168.1.1', 'private (192.168.0.0/16)'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['::', 'unspecified'],
    ['::1', 'loopback (::1)'],
    ['[::1]', 'loopback (::1)'],
    ['0:0:0:0:0:0:0:1', 'loopback (::1)'],
    ['fe80::1', 'link-local (fe80::/10)'],
    ['febf::1', 'link-local (fe80::/10)'],
    ['fc00::1', 'unique-local'],
    ['fd00:ec2::254', 'unique-local'], // AWS's IPv6 metadata
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback (127.0.0.0/8) as IPv6'],
    ['::ffff:7f00:1', 'loopback (127.0.0.0/8) as IPv6'],
    ['::FFFF:A9FE:A9FE', 'link-local, cloud metadata (169.254.0.0/16) as IPv6'],
    ['0:0:0:0:0:ffff:10.0.0.1', 'private (10.0.0.0/8) as IPv6'],
    ['::10.0.0.1', 'private (10.0.0.0/8) as IPv6'],
    ['64:ff9b::192.168.0.1', 'private (192.168.0.0/16) as IPv6'],
    ['192.0.0.192', 'IETF protocol assignments'],
    ['198.19.0.1', 'benchmarking'],
    ['fec0::1', 'site-local'],
    ['fe80::1%eth0', 'link-local'],
    ['::2', '"this network" (0.0.0.0/8) as IPv6'],
    ['::ffff:10.20.30.40', 'private (10.0.0.0/8) as IPv6'],
    ['1.2.3', 'not an IP address'],
    [' 1.2.3.4', 'not an IP address'],
    ['1e2.0.0.1', 'not an IP address'],
    ['::ffff:1.2.3.4x', 'not an IP address'],
    ['::ffff:300.1.1.1', 'not an IP address'],
    ['g::1', 'not an IP address'],
    ['::12345', 'not an IP address'],
    ['1:2:3:4:5:6:7', 'not an IP address'],
    ['1:2:3:4::5:6:7:8', 'not an IP address'],
    ['x[::1]', 'not an IP address'],
    ['[::1]x', 'not an IP address'],
    ['256.1.1.1', 'not an IP address'],
    ['1::2::3', 'not an IP address'],
    ['example.com', 'not an IP address'],
  ])('%s is %s', (address, range) => {
    expect(nonPublicRange(address)).toContain(range);
  });

  it.each([
    '1.1.1.1',
    '8.8.8.8',
    '9.255.255.255',
    '11.0.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '126.255.255.255',
    '128.0.0.0',
    '169.253.255.255',
    '169.255.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.167.255.255',
    '192.169.0.0',
    '223.255.255.255',
    '2606:4700::1111',
    '2001:db8::1',
    'fbff::1',
    'fe7f::1',
    '::ffff:8.8.8.8',
    '1:2:3:4:5:6::7',
    '64::a00:1',
    '1:ff9b::a00:1',
    '64:ff9b::8.8.8.8',
  ])('%s is public', (address) => {
    expect(nonPublicRange(address)).toBeUndefined();
  });

  it('literalAddress: the address in a URL host, brackets removed; a name is none', () => {
    expect(literalAddress('127.0.0.1')).toBe('127.0.0.1');
    expect(literalAddress(new URL('http://[::ffff:127.0.0.1]/').hostname)).toBe('::ffff:7f00:1');
    expect(literalAddress(new URL('http://2130706433/').hostname)).toBe('127.0.0.1'); // URL writes it dotted
    expect(literalAddress('shop.example')).toBeUndefined();
    expect(literalAddress('x[::1]')).toBeUndefined();
    expect(literalAddress('[::1]x')).toBeUndefined();
    expect(literalAddress('127.0.0.1.nip.io')).toBeUndefined();
  });
});

describe("resolveAll (the command's look-up)", () => {
  it('gives every address of a name, IPv4 and IPv6 alike', async () => {
    const addresses = await resolveAll('localhost');
    expect(addresses.length).toBeGreaterThan(0);
    for (const address of addresses) expect(nonPublicRange(address)).toMatch(/loopback/);
  });

  it('rejects for a name that does not exist', async () => {
    await expect(resolveAll('no-such-host.invalid')).rejects.toThrow();
  });
});
