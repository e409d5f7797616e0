import { createServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { forwardedAddress } from '../../../../src/server/adapter/node/forwarded.js';
import { toNodeHandler } from '../../../../src/server/index.js';
import { closeServers, listening } from '../../../support/http.js';

afterEach(closeServers);

describe('the shopper address behind a named front', () => {
  const address = forwardedAddress(['10.0.0.0/8', '127.0.0.1']);

  it('is the address the trusted front appended last', () => {
    expect(address('10.1.2.3', '203.0.113.9')).toBe('203.0.113.9');
    // What the shopper wrote itself comes before: never believed.
    expect(address('10.1.2.3', '198.51.100.1, 203.0.113.9')).toBe('203.0.113.9');
    // Two named fronts in a chain: the address the first one saw.
    expect(address('127.0.0.1', '198.51.100.1, 203.0.113.9, 10.9.9.9')).toBe('203.0.113.9');
    expect(address('::ffff:10.1.2.3', '::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(address('10.1.2.3', ['198.51.100.1', '203.0.113.9'])).toBe('203.0.113.9');
  });

  it('is the socket address from anyone else, whatever the header says', () => {
    expect(address('192.0.2.7', '203.0.113.9')).toBe('192.0.2.7');
    expect(forwardedAddress([])('10.1.2.3', '203.0.113.9')).toBe('10.1.2.3');
  });

  it('stops at a hop that is no address, and keeps the socket address without a header', () => {
    expect(address('10.1.2.3', undefined)).toBe('10.1.2.3');
    expect(address('10.1.2.3', 'unknown')).toBe('10.1.2.3');
    expect(address('10.1.2.3', 'garbage, 10.2.2.2')).toBe('10.2.2.2');
  });

  it('refuses a front that is no address or range', () => {
    expect(() => forwardedAddress(['nginx'])).toThrow(expect.objectContaining({ code: 'invalid_configuration' }));
  });

  it('reaches the handler as clientAddress through toNodeHandler', async () => {
    const seen: Array<string | undefined> = [];
    const handler = (_request: Request, context?: { clientAddress?: string }) => {
      seen.push(context?.clientAddress);
      return new Response('ok');
    };
    const trusting = await listening(createServer(toNodeHandler(handler, { trustedFronts: ['127.0.0.1'] })));
    const plain = await listening(createServer(toNodeHandler(handler)));
    for (const url of [trusting, plain]) await fetch(url, { headers: { 'x-forwarded-for': '203.0.113.9' } });
    expect(seen).toEqual(['203.0.113.9', '127.0.0.1']);
  });
});
