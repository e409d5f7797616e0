import { createServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { forwardedAddress, forwardedProto, forwardIgnored } from '../../../../src/server/adapter/node/forwarded.js';
import { createFirstPartyProxy, toNodeHandler } from '../../../../src/server/index.js';
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

describe('the scheme the shopper used, behind a named front', () => {
  const proto = forwardedProto(['10.0.0.0/8']);

  it("is a trusted front's X-Forwarded-Proto, the first of a list: http or https only", () => {
    expect(proto('10.1.2.3', 'https')).toBe('https');
    expect(proto('10.1.2.3', 'HTTP')).toBe('http');
    expect(proto('10.1.2.3', 'https, http')).toBe('https');
    expect(proto('10.1.2.3', ['https', 'http'])).toBe('https');
    expect(proto('10.1.2.3', 'gopher')).toBeUndefined();
    expect(proto('10.1.2.3', undefined)).toBeUndefined();
  });

  it("is none from anyone else: the request's own scheme stands", () => {
    expect(proto('192.0.2.7', 'https')).toBeUndefined();
    expect(forwardedProto([])('10.1.2.3', 'https')).toBeUndefined();
  });

  it('tells the collector https behind a TLS front, and the plain hop from anyone else', async () => {
    const sent: Array<string | null> = [];
    const fetch = async (_url: RequestInfo | URL, init?: RequestInit) => {
      sent.push(new Headers(init?.headers).get('x-forwarded-proto'));
      return new Response('ok', { headers: { 'content-type': 'application/javascript' } });
    };
    const proxy = createFirstPartyProxy({ collectorUrl: 'https://collector.example/', fetch });
    const trusting = await listening(createServer(toNodeHandler(proxy, { trustedFronts: ['127.0.0.1'] })));
    const plain = await listening(createServer(toNodeHandler(proxy)));
    for (const url of [trusting, plain])
      await (await globalThis.fetch(`${url}/iojs/general5/x.js`, { headers: { 'x-forwarded-proto': 'https' } })).text();
    expect(sent).toEqual(['https', 'http']);
  });
});

describe('forwardIgnored', () => {
  it('names the address of a request whose X-Forwarded-For comes from no named front', () => {
    const ignored = forwardIgnored(['10.0.0.0/8']);
    expect(ignored('::ffff:127.0.0.1', '203.0.113.9')).toBe('127.0.0.1');
    expect(ignored('127.0.0.1', ['203.0.113.9'])).toBe('127.0.0.1');
    // From a front, or without the header: nothing ignored.
    expect(ignored('10.1.2.3', '203.0.113.9')).toBeUndefined();
    expect(ignored('127.0.0.1', undefined)).toBeUndefined();
    expect(forwardIgnored([])('10.1.2.3', '203.0.113.9')).toBe('10.1.2.3');
  });

  it('toNodeHandler tells onForwardIgnored of each such request, and of no other', async () => {
    const ignored: string[] = [];
    const handler = () => new Response('ok');
    const onForwardIgnored = (address: string) => ignored.push(address);
    const plain = await listening(createServer(toNodeHandler(handler, { onForwardIgnored })));
    const trusting = await listening(
      createServer(toNodeHandler(handler, { trustedFronts: ['127.0.0.1'], onForwardIgnored })),
    );
    const forwarded = { 'x-forwarded-for': '203.0.113.9' };
    for (const [url, headers] of [
      [plain, forwarded],
      [plain, {}],
      [trusting, forwarded],
    ] as const)
      await (await fetch(`${url}/`, { headers })).text();
    expect(ignored).toEqual(['127.0.0.1']);
  });
});
