// Which of the browser's cookies the kit's proxy sends to the collector (src/server/proxy/cookies.ts):
// only `name=value` pairs of the vendor's, however the Cookie lines were joined.
import { describe, expect, it } from 'vitest';
import { vendorCookies } from '../../../src/server/proxy/cookies.js';

const config = { cookiePrefix: 'bbc_', allowCookies: new Set(['fpjs']), basePath: '/', prefix: '/iojs' };
const sent = (header: string | null) => vendorCookies(header, config);

describe('vendorCookies', () => {
  it.each([
    // Two Cookie lines joined as the Fetch standard's Headers joins any header.
    ['session=s3cr3t, bbc_fpc=v', 'fpc=v'],
    ['bbc_fpc=v, session=s3cr3t; csrf=t0ken', 'fpc=v'],
    ['bbc_a=1; session=s3cr3t, csrf=t0ken; bbc_b=2', 'a=1; b=2'],
    ['bbc_a=1,bbc_b=2', 'a=1; b=2'],
    // As undici joins them.
    ['session=s3cr3t; bbc_fpc=v', 'fpc=v'],
  ])('a comma ends a cookie as ";" does: %s sends %s', (header, expected) => {
    expect(sent(header)).toBe(expected);
  });

  it.each([
    ['sessionsecret123; bbc_fpc=v', 'fpc=v'],
    ['bbc_sessionsecret; bbc_fpc=v', 'fpc=v'],
    ['bbc_sessionsecret', undefined],
    ['fpjs; bbc_fpc=v', 'fpc=v'],
    ['=bbc_x; bbc_fpc=v', 'fpc=v'],
  ])('a cookie without a name and "=" is a nameless one, never the vendor’s: %s sends %s', (header, expected) => {
    expect(sent(header)).toBe(expected);
  });

  it('the allow-listed names go as they are, the namespaced ones unprefixed; nothing else', () => {
    expect(sent('fpjs=1; bbc_io=abc; bbc_=empty; session=s')).toBe('fpjs=1; io=abc');
    expect(sent('session=s')).toBeUndefined();
    expect(sent(null)).toBeUndefined();
  });
});
