// The proxy's options table: each option of the wrong kind refused when the proxy is made,
// naming it, before the finer rules of proxyConfig; the defaults proxyConfig fills are the table's.
import { describe, expect, it } from 'vitest';
import { proxyConfig } from '../../../src/server/proxy/options.js';
import { PROXY_OPTIONS } from '../../../src/server/proxy/settings.js';

const collectorUrl = 'https://collector.example/';

describe('PROXY_OPTIONS', () => {
  it.each<[keyof typeof PROXY_OPTIONS, unknown]>([
    ['prefix', 5],
    ['fetch', 'fetch'],
    ['timeoutMs', 0],
    ['methods', 'GET'],
    ['maxBodyBytes', 1.5],
    ['cookiePrefix', ''],
    ['allowCookies', 'a'],
    ['trustProxy', 'yes'],
    ['publicHost', 1],
    ['onError', true],
  ])('a bad %s is invalid_configuration naming it', (name, value) => {
    expect(() => proxyConfig({ collectorUrl, [name]: value })).toThrow(
      expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining(`${name} must be`) }),
    );
  });

  it('fills the defaults of the table', () => {
    const config = proxyConfig({ collectorUrl });
    expect(config).toMatchObject({
      prefix: PROXY_OPTIONS.prefix.default,
      cookiePrefix: PROXY_OPTIONS.cookiePrefix.default,
      trustProxy: PROXY_OPTIONS.trustProxy.default,
      timeoutMs: PROXY_OPTIONS.timeoutMs.default,
      maxBodyBytes: PROXY_OPTIONS.maxBodyBytes.default,
    });
  });
});
