// The emulator's vendor origins as pure functions: which paths answer what, with which
// headers, and the collection scripts' embedded values.
import { describe, expect, it } from 'vitest';
import { collectionScript } from '../../src/emulator/scripts/loader.js';
import {
  createVendorHandlers,
  decodeBlackbox,
  SERVED_VERSION,
  vendorAsset,
  type VendorSettings,
} from '../../src/emulator/scripts/routes.js';

const SETTINGS: VendorSettings = { defaultTpHost: 'http://127.0.0.1:4001' };
/** What a collection script embeds: its payload, as the page reads it. */
const payloadOf = (body: string) =>
  JSON.parse(JSON.parse(/var payload = (".*");/.exec(body)![1]!) as string) as Record<string, string>;
const headers =
  (values: Record<string, string> = {}) =>
  (name: string) =>
    values[name] ?? null;

describe('SERVED_VERSION', () => {
  it.each(['general5', 'early5', '5.2.2', '15.12.102', '5-2-2', '15-12-102'])('serves %s', (version) => {
    expect(SERVED_VERSION.test(version)).toBe(true);
  });
  it.each([
    'general6',
    'xgeneral5',
    'general5x',
    '5.2',
    '5.2.2.1',
    'a.2.2',
    '5.b.2',
    '5.2.c',
    'v5.2.2',
    '5.2.2x',
    '5-2',
    'a-2-2',
    '5-b-2',
    '5-2-c',
    '5-2-2-',
    '-5-2-2',
  ])('not %s', (version) => {
    expect(SERVED_VERSION.test(version)).toBe(false);
  });
});

describe('vendorAsset', () => {
  it('the loader origin serves /loader.js only, as cacheable JavaScript', () => {
    const loader = vendorAsset('loader', '/loader.js', headers(), SETTINGS);
    expect(loader).toMatchObject({
      status: 200,
      headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=300' },
    });
    expect(loader.body).toContain(SETTINGS.defaultTpHost);
    expect(vendorAsset('loader', '/other.js', headers(), SETTINGS)).toEqual({
      status: 404,
      headers: { 'content-type': 'text/plain; charset=utf-8' },
      body: 'not found: /other.js',
    });
    expect(vendorAsset('loader', '/loader.js/x', headers(), SETTINGS).status).toBe(404);
  });

  it('a loaderSource is served instead, its default third-party host replaced', () => {
    const body = vendorAsset('loader', '/loader.js', headers(), {
      ...SETTINGS,
      loaderSource: 'var a = "https://mpsnare.iesnare.com"; var b = "https://mpsnare.iesnare.com/x";',
    }).body;
    expect(body).toBe(`var a = "${SETTINGS.defaultTpHost}"; var b = "${SETTINGS.defaultTpHost}/x";`);
  });

  it('the collector serves static_wdp.js (cacheable) and dyn_wdp.js (no-store, embedding the request, with a device cookie), nothing else', () => {
    const fixed = vendorAsset('collector', '/general5/SUB/static_wdp.js', headers({ 'user-agent': 'UA-1' }), SETTINGS);
    expect(fixed).toMatchObject({
      status: 200,
      headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=300' },
    });
    expect(fixed.headers['set-cookie']).toBeUndefined();
    expect(fixed.body).toContain('emulated collection script: fp_static');
    expect(payloadOf(fixed.body)).toEqual({ s: 'fp_static', version: 'general5' });
    const dynamic = vendorAsset(
      'collector',
      '/5.2.2//dyn_wdp.js',
      headers({ 'user-agent': 'UA-1', 'accept-language': 'de-CH' }),
      SETTINGS,
    );
    expect(dynamic.headers['cache-control']).toBe('no-store');
    expect(dynamic.headers['set-cookie']).toMatch(/^fpc=[\w-]{16}; Path=\/; Max-Age=31536000; SameSite=Lax$/);
    expect(dynamic.body).toContain('emulated collection script: fp_dyn');
    expect(payloadOf(dynamic.body)).toEqual({
      s: 'fp_dyn',
      version: '5.2.2',
      ua: 'UA-1',
      lang: 'de-CH',
      token: expect.stringMatching(/^[\w-]{16}$/),
    });
    expect(dynamic.headers['set-cookie']).toContain(`fpc=${payloadOf(dynamic.body).token};`);
    const anonymous = vendorAsset('collector', '/general5/dyn_wdp.js', headers(), SETTINGS);
    expect(payloadOf(anonymous.body)).toMatchObject({ ua: '', lang: '' });
    expect(vendorAsset('collector', '/general5/SUB/wdp.js', headers(), SETTINGS).status).toBe(404);
    expect(vendorAsset('collector', '/general6/SUB/static_wdp.js', headers(), SETTINGS).status).toBe(404);
    expect(vendorAsset('collector', '/general5/SUB/static_wdp.js.map', headers(), SETTINGS).status).toBe(404);
    expect(vendorAsset('collector', '/general5/a/b/static_wdp.js', headers(), SETTINGS).status).toBe(404);
  });

  it('the third-party origin serves wdp.js (or any resource), static_wdp.js and dyn_wdp.js', () => {
    expect(vendorAsset('thirdParty', '/general5/SUB/wdp.js', headers(), SETTINGS).body).toContain(
      'collection script: tp */',
    );
    expect(vendorAsset('thirdParty', '/general5/SUB/custom-name.js', headers(), SETTINGS).body).toContain(
      'collection script: tp */',
    );
    expect(vendorAsset('thirdParty', '/general5/SUB/static_wdp.js', headers(), SETTINGS).body).toContain(
      'collection script: tp_static',
    );
    const dyn = vendorAsset('thirdParty', '/general5/SUB/dyn_wdp.js', headers({ 'user-agent': 'UA-2' }), SETTINGS);
    expect(dyn.body).toContain('collection script: tp_dyn');
    expect(dyn.headers['cache-control']).toBe('no-store');
    expect(dyn.headers['set-cookie']).toBeUndefined();
    expect(payloadOf(dyn.body)).toMatchObject({ s: 'tp_dyn', ua: 'UA-2' });
    expect(
      payloadOf(vendorAsset('thirdParty', '/general5/SUB/wdp.js', headers({ 'user-agent': 'UA-2' }), SETTINGS).body),
    ).toEqual({ s: 'tp', version: 'general5' });
  });
});

describe('createVendorHandlers', () => {
  const handlers = createVendorHandlers(SETTINGS);
  it('GET and HEAD only; HEAD has the headers and no body', async () => {
    const collector = (method: string) =>
      handlers.collector(new Request('http://c.example/general5/SUB/static_wdp.js', { method }));
    const post = await collector('POST');
    expect([post.status, post.headers.get('allow'), await post.text()]).toEqual([
      405,
      'GET, HEAD',
      'method not allowed',
    ]);
    const head = await collector('HEAD');
    expect([head.status, head.headers.get('content-type'), await head.text()]).toEqual([
      200,
      'text/javascript; charset=utf-8',
      '',
    ]);
    const get = await handlers.thirdParty(new Request('http://t.example/general5/SUB/wdp.js'));
    expect(await get.text()).toContain('collection script: tp */');
    expect((await handlers.loader(new Request('http://l.example/loader.js'))).status).toBe(200);
  });
});

describe('collectionScript and decodeBlackbox', () => {
  it('embedded values are cut at 200 characters, and characters beyond Latin-1 escaped for btoa()', () => {
    const script = collectionScript({
      source: 'fp_dyn',
      delaysMs: [1],
      embedded: { ua: 'x'.repeat(300), lang: 'fr-CH ✓ é' },
      entropy: 'AAAA',
    });
    expect(payloadOf(script)).toEqual({ s: 'fp_dyn', ua: 'x'.repeat(200), lang: 'fr-CH ✓ é' });
    // Escaped in the script's text: nothing outside Latin-1 reaches btoa().
    expect(/var payload = (".*");/.exec(script)![1]).toContain('\\\\u2713');
    expect(/var payload = (".*");/.exec(script)![1]).not.toMatch(/[\u0100-\uffff]/);
  });

  it('decodes an emulated blackbox; anything else is undefined', () => {
    const blackbox =
      '0400' +
      Buffer.from(
        JSON.stringify({ v: '5.2.2', s: ['fp_dyn', 'tp'], p: { fp_dyn: '{"ua":"UA"}|rest', tp: '' } }),
        'latin1',
      ).toString('base64');
    expect(decodeBlackbox(blackbox)).toEqual({
      loaderVersion: '5.2.2',
      sources: ['fp_dyn', 'tp'],
      embedded: { fp_dyn: { ua: 'UA' } },
    });
    expect(decodeBlackbox('x' + blackbox)).toBeUndefined();
    expect(decodeBlackbox(blackbox + ' ')).toBeUndefined();
    expect(decodeBlackbox('0400' + Buffer.from('not json').toString('base64'))).toBeUndefined();
    const missing =
      '0400' + Buffer.from(JSON.stringify({ v: '5.2.2', s: ['tp_dyn'], p: {} }), 'latin1').toString('base64');
    expect(decodeBlackbox(missing)).toEqual({ loaderVersion: '5.2.2', sources: ['tp_dyn'], embedded: {} });
  });
});
