// The client's and the token source's settings: every option of createDeviceRiskClient has a row, and each
// row refuses a bad value when the client is made, with invalid_configuration naming it.
import { describe, expect, it } from 'vitest';
import { createDeviceRiskClient, type DeviceRiskClientOptions } from '../../../src/server/api/device-risk-client.js';
import { CLIENT_OPTIONS } from '../../../src/server/api/settings.js';
import { createTokenSource } from '../../../src/server/api/token-source.js';

const base = (): DeviceRiskClientOptions =>
  ({ tokenSource: { token: async () => 't' }, region: 'US', userAgent: 'Shop/1.0' }) as never;

/** A value each option must refuse (the addresses, region and userAgent keep their own messages: hostsOf). */
const BAD: Partial<Record<keyof typeof CLIENT_OPTIONS, unknown>> = {
  tokenSource: 'token',
  fetch: {},
  accountsPath: 'api/v1/accounts',
  finalizeMethod: 'PATCH',
  maxAttempts: 0,
  timeoutMs: -1,
  accountTimeoutMs: '60s',
  expiryMarginMs: -1,
  now: 1,
  sleep: 1,
  limits: 'many',
};

describe('CLIENT_OPTIONS', () => {
  it.each(Object.keys(BAD))('refuses a bad %s when the client is made, naming it', (name) => {
    expect(() => createDeviceRiskClient({ ...base(), [name]: BAD[name as keyof typeof BAD] })).toThrow(
      expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining(`${name} must be`) }),
    );
  });

  it('refuses a client without a token source', () => {
    const { tokenSource: _, ...rest } = base();
    expect(() => createDeviceRiskClient(rest as never)).toThrow(
      expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining('tokenSource') }),
    );
  });

  it('takes good values', () => {
    const client = createDeviceRiskClient({ ...base(), finalizeMethod: 'POST', maxAttempts: 1, expiryMarginMs: 0 });
    expect(client.uploadTimeoutMs).toBe(CLIENT_OPTIONS.timeoutMs.default);
  });
});

describe('TOKEN_SOURCE_OPTIONS', () => {
  const source = { clientId: 'id', clientSecret: 'secret', region: 'US', userAgent: 'Shop/1.0' } as const;
  it.each<[string, unknown]>([
    ['fetch', 'fetch'],
    ['store', 'redis'],
    ['storeTimeoutMs', 0],
    ['lockLeaseMs', -1],
    ['refreshMarginSeconds', '60'],
    ['maxRequestsPerSecond', 0],
    ['maxAttempts', 1.5],
    ['timeoutMs', Number.NaN],
    ['maxRetryAfterSeconds', -30],
    ['sleep', 1],
    ['now', 1],
  ])('refuses a bad %s when the source is made, naming it', (name, value) => {
    expect(() => createTokenSource({ ...source, [name]: value })).toThrow(
      expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining(`${name} must be`) }),
    );
  });
});
