// A front left out of TRUSTED_FRONTS, said (src/gateway/fronts.ts): from a local address only.
import { describe, expect, it } from 'vitest';
import { untrustedFrontTeller } from '../../src/gateway/fronts.js';

describe('untrustedFrontTeller', () => {
  it('tells of an ignored X-Forwarded-For from a loopback, private, shared or link-local address', () => {
    const told: string[] = [];
    const tell = untrustedFrontTeller((key, message, fields) =>
      told.push(`${key} ${fields.level} ${fields.event} ${fields.code} ${message}`),
    );
    for (const address of [
      '127.0.0.1',
      '10.88.0.1',
      '172.17.0.1',
      '192.168.1.2',
      '100.64.0.1',
      '169.254.1.1',
      '::1',
      'fd00::1',
      'fe80::1',
    ])
      tell(address);
    expect(told).toHaveLength(9);
    expect(told[1]).toBe(
      `forward_ignored warn gateway forward_ignored forward_ignored: X-Forwarded-For from 10.88.0.1 ignored, 10.88.0.1 is not in TRUSTED_FRONTS: if a front of yours runs there, every shopper behind it counts as that one address (docs/gateway.md#trusted-fronts)`,
    );
  });

  it("says nothing of one from a public address: a client's own header, not a front's", () => {
    const told: string[] = [];
    const tell = untrustedFrontTeller((key) => told.push(key));
    for (const address of ['203.0.113.7', '172.32.0.1', '2001:db8::1', '8.8.8.8']) tell(address);
    expect(told).toEqual([]);
  });
});
