// Who may send callbacks: addresses and CIDR ranges, IPv4, IPv6 and IPv4-mapped, parsed strictly.
import { describe, expect, it } from 'vitest';
import { createCallbackHandler, type DeviceRiskClient } from '../../../src/server/index.js';

const client = { retrievalOrigin: 'https://retrieval.test', clientId: 'c' } as unknown as DeviceRiskClient;
const handlerFor = (allowedSources: string[]) => createCallbackHandler({ client, allowedSources, onResult: () => {} });
/** 403 when the source is refused; otherwise the next check answers (415: no JSON). */
const allowed = async (allowedSources: string[], clientAddress: string) =>
  (
    await handlerFor(allowedSources)(new Request('https://shop.test/cb', { method: 'POST', body: 'x' }), {
      clientAddress,
    })
  ).status !== 403;

describe('allowedSources', () => {
  it.each([
    [['192.0.2.1'], '192.0.2.1', true],
    [['192.0.2.1'], '192.0.2.10', false],
    [['10.20.30.40'], '10.20.30.40', true],
    [['10.20.30.40/32'], '10.20.30.41', false],
    [['1.2.3.4'], '1.2.3.4.5', false],
    [['1.2.3.4'], 'x1.2.3.4', false],
    [['1.2.3.0/24'], '1.2.3.255', true],
    [['1.2.3.0/24'], '1.2.3.256', false],
    [['1.2.3.0/24'], '1.2.4.1', false],
    [['0.0.0.0/0'], '203.0.113.7', true],
    [['0.0.0.0/0'], '::1', false],
    [['192.0.2.0/24'], '::ffff:192.0.2.9', true],
    [['::1'], '::1', true],
    [['::1'], '[::1]', true],
    [['::1'], '::2', false],
    [['2001:db8::/32'], '2001:db8:0:0:0:0:0:1', true],
    [['2001:db8::/32'], '2001:0DB8::abcd', true],
    [['2001:db8::/32'], '2001:db9::1', false],
    [['2001:db8::/32'], '2001:db8::1::2', false],
    [['2001:db8::/32'], '2001:db8::g', false],
    [['2001:db8::/32'], '2001:db8:1:2:3:4:5:6:7', false],
    [['2001:db8::/32'], '12345::1', false],
    [['::/0'], '192.0.2.1', false],
  ])('%j lets %s in: %s', async (sources, address, expected) => {
    expect(await allowed(sources, address)).toBe(expected);
  });

  it.each([
    '10.0.0.0/33',
    '10.0.0.0/-1',
    '10.0.0.0/x',
    '10.0.0.0/8.5',
    'host.example',
    '::/129',
    '1.2.3.256',
    '1.2.3',
    '',
    '10.0.0.0/',
    '10.0.0.0/+8',
    '10.0.0.0/ 8',
    '10.0.0.0/0x8',
    '10.0.0.0/1e1',
  ])('refuses the entry %j at creation', (entry) => {
    expect(() => handlerFor([entry])).toThrow(expect.objectContaining({ code: 'invalid_configuration' }));
  });
});

describe('the service published sources, per region (src/server/api/regions.ts)', () => {
  it('takes every region list as allowedSources; an address of another region is refused', async () => {
    const { CALLBACK_SOURCES, REGIONS } = await import('../../../src/server/index.js');
    expect(Object.keys(CALLBACK_SOURCES)).toEqual(Object.keys(REGIONS));
    for (const sources of Object.values(CALLBACK_SOURCES)) expect(sources.length).toBeGreaterThan(0);
    expect(await allowed([...CALLBACK_SOURCES.US], '34.202.241.227')).toBe(true);
    expect(await allowed([...CALLBACK_SOURCES.US], '34.253.41.236')).toBe(false);
    expect(await allowed([...CALLBACK_SOURCES.EU], '34.253.41.236')).toBe(true);
    expect(await allowed([...CALLBACK_SOURCES.SG], '3.0.109.121')).toBe(true);
  });
});
