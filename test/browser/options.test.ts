// @vitest-environment happy-dom
// Every option rule: invalid options reject with invalid_option before anything on the page changes.
import { beforeEach, describe, expect, it } from 'vitest';
import { freshPage, LOADER_URL, ok, requests } from '../support/vendor-dom.js';

let api: Awaited<ReturnType<typeof freshPage>>;
beforeEach(async () => {
  api = await freshPage();
});

const w = () => window as unknown as Record<string, unknown>;

async function expectInvalid(options: unknown, mention: string | RegExp) {
  const error = await api.captureBlackbox(options as never).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(api.isBlackboxCaptureError(error)).toBe(true);
  expect(error).toMatchObject({ code: 'invalid_option', name: 'BlackboxCaptureError' });
  expect((error as Error).message).toMatch(/^\[blackbox-capture\] /);
  expect((error as Error).message).toMatch(mention);
  // Nothing was written and nothing injected.
  expect(w().IGLOO).toBeUndefined();
  expect(w().io_global_object_name).toBeUndefined();
  expect(document.querySelectorAll('script')).toHaveLength(0);
  expect(requests).toHaveLength(0);
}

describe('option validation', () => {
  it.each([
    ['no options', undefined, /options/],
    ['a string', 'https://vendor.test/loader.js', /options/],
    ['missing loaderUrl', {}, /loaderUrl/],
    ['unknown option (typo)', { ...ok, uriHok: '/iojs' }, /Unknown option "uriHok"/],
    ['loaderUrl over http on a public host', { loaderUrl: 'http://vendor.test/loader.js' }, /loaderUrl.*https URL/],
    ['loaderUrl protocol-relative', { loaderUrl: '//vendor.test/loader.js' }, /loaderUrl/],
    ['loaderUrl javascript:', { loaderUrl: 'javascript:alert(1)' }, /loaderUrl/],
    ['loaderUrl with credentials', { loaderUrl: 'https://u:p@vendor.test/loader.js' }, /loaderUrl/],
    [
      'loaderUrl over http on a host that starts like localhost',
      { loaderUrl: 'http://localhost.evil.example/loader.js' },
      /loaderUrl/,
    ],
    [
      'loaderUrl over http on a host that starts like 127.0.0.1',
      { loaderUrl: 'http://127.0.0.1.evil.example/loader.js' },
      /loaderUrl/,
    ],
    [
      'loaderUrl over http on a name of four labels after 127',
      { loaderUrl: 'http://127.0.0.evil/loader.js' },
      /loaderUrl/,
    ],
    [
      'loaderUrl over http on a private address that is no loopback',
      { loaderUrl: 'http://10.0.0.1/loader.js' },
      /loaderUrl/,
    ],
    [
      'loaderUrl over http on a name whose last label mixes digits and letters',
      { loaderUrl: 'http://127.0.0.1a/loader.js' },
      /loaderUrl/,
    ],
    [
      'loaderUrl over http on a name whose last label is "-1"',
      { loaderUrl: 'http://127.0.0.-1/loader.js' },
      /loaderUrl/,
    ],
    [
      'loaderUrl over http on a host that ends like localhost',
      { loaderUrl: 'http://evil.localhost.example/loader.js' },
      /loaderUrl/,
    ],
    ['tp_resource with a path', { ...ok, vendor: { tp_resource: 'a/b.js' } }, /tp_resource/],
    ['tp_resource not ending in .js', { ...ok, vendor: { tp_resource: 'x.js.evil' } }, /tp_resource/],
    ['loaderUrl with spaces', { loaderUrl: ' https://vendor.test/loader.js' }, /loaderUrl/],
    ['loaderUrl not a string', { loaderUrl: 42 }, /loaderUrl.*received 42/],
    ['loaderUrl with a backslash', { loaderUrl: '/\\vendor.test/loader.js' }, /loaderUrl/],
    ['loaderUrl data:', { loaderUrl: 'data:text/javascript,alert(1)' }, /loaderUrl/],
    ['loaderUrl with a scheme the parser refuses', { loaderUrl: 'https://[vendor.test/loader.js' }, /loaderUrl/],
    ['loaderUrl with a tab inside', { loaderUrl: 'https://vendor.test/\tloader.js' }, /loaderUrl/],
    ['loaderUrl with a newline', { loaderUrl: '/loader.js\n' }, /loaderUrl/],
    ['loaderUrl with a no-break space', { loaderUrl: '/vendor/\u00a0loader.js' }, /loaderUrl/],
    ['loaderUrl with DEL', { loaderUrl: '/vendor/loader.js\x7f' }, /loaderUrl/],
    ['nonce with a line separator', { ...ok, nonce: 'abc\u2028' }, /nonce/],
    ['globalName not an identifier', { ...ok, globalName: '1abc' }, /globalName.*JavaScript identifier/],
    ['globalName with a dash', { ...ok, globalName: 'my-config' }, /globalName/],
    ['uriHook complete URL', { ...ok, uriHook: 'https://shop.test/iojs' }, /uriHook/],
    ['uriHook protocol-relative', { ...ok, uriHook: '//shop.test/iojs' }, /uriHook/],
    ['uriHook host without scheme', { ...ok, uriHook: 'shop.test/iojs' }, /uriHook/],
    ['uriHook host and port', { ...ok, uriHook: 'localhost:8080/iojs' }, /uriHook/],
    ['uriHook with ..', { ...ok, uriHook: '/static/../iojs' }, /uriHook/],
    ['uriHook with a query', { ...ok, uriHook: '/iojs?x=1' }, /uriHook/],
    ['uriHook with a fragment', { ...ok, uriHook: '/iojs#x' }, /uriHook/],
    ['uriHook empty', { ...ok, uriHook: '' }, /uriHook/],
    ['version misspelt', { ...ok, version: 'genral5' }, /version.*"general5"/],
    ['version empty', { ...ok, version: '' }, /version/],
    ['subkey empty', { ...ok, subkey: '' }, /subkey/],
    ['subkey a number', { ...ok, subkey: 5 }, /subkey/],
    ['enableRip a string', { ...ok, enableRip: 'yes' }, /enableRip/],
    ['inject a string', { ...ok, inject: 'no' }, /inject.*true or false/],
    ['onTrace not a function', { ...ok, onTrace: 'console.log' }, /onTrace.*a function/],
    ['onUpdate not a function', { ...ok, onUpdate: {} }, /onUpdate/],
    ['field empty id', { ...ok, field: '' }, /field/],
    ['field a div', { ...ok, field: document.createElement('div') }, /field/],
    ['field id not on the page', { ...ok, field: 'nope' }, /field.*"nope"/],
    ['post not https', { ...ok, post: 'http://shop.test/risk' }, /post\.url/],
    ['post unknown key', { ...ok, post: { url: '/risk', retries: 3 } }, /Unknown option "post\.retries"/],
    ['post bad credentials', { ...ok, post: { url: '/risk', credentials: 'all' } }, /post\.credentials/],
    ['post maxAttempts 0', { ...ok, post: { url: '/risk', maxAttempts: 0 } }, /post\.maxAttempts/],
    ['post headers not strings', { ...ok, post: { url: '/risk', headers: { a: 1 } } }, /post\.headers/],
    // A spread would drop these silently: the request would go out without the CSRF header.
    [
      'post headers as a Headers instance',
      { ...ok, post: { url: '/risk', headers: new Headers({ 'x-csrf-token': 't' }) } },
      /post\.headers.*received an object \(Headers\)/,
    ],
    ['vendor as a Map', { ...ok, vendor: new Map([['tp', false]]) }, /"vendor".*received an object \(Map\)/],
    ['post body not a function', { ...ok, post: { url: '/risk', body: '{}' } }, /post\.body/],
    ['timeoutMs zero', { ...ok, timeoutMs: 0 }, /timeoutMs/],
    ['timeoutMs negative', { ...ok, timeoutMs: -5 }, /timeoutMs/],
    ['timeoutMs NaN', { ...ok, timeoutMs: NaN }, /timeoutMs/],
    ['timeoutMs Infinity', { ...ok, timeoutMs: Infinity }, /timeoutMs/],
    ['timeoutMs a string', { ...ok, timeoutMs: '100' }, /timeoutMs/],
    ['nonce empty', { ...ok, nonce: '' }, /nonce/],
    ['signal not a signal', { ...ok, signal: {} }, /signal/],
    ['vendor unknown key', { ...ok, vendor: { version: '5.2.2' } }, /Unknown option "vendor\.version"/],
    ['vendor bad boolean', { ...ok, vendor: { tp: 'yes' } }, /vendor\.tp/],
    ['vendor tp_host with a path', { ...ok, vendor: { tp_host: 'https://tp.test/x' } }, /vendor\.tp_host/],
    ['vendor tp_host over http', { ...ok, vendor: { tp_host: 'http://tp.test' } }, /vendor\.tp_host/],
    ['vendor fp_dyn without fp_static', { ...ok, vendor: { fp_static: false } }, /vendor\.fp_dyn/],
    ['vendor tp_resource not a script', { ...ok, vendor: { tp_resource: '../x' } }, /vendor\.tp_resource/],
    [
      'vendor tp_host a path that ends in an origin',
      { ...ok, vendor: { tp_host: '/relay/https://tp.test' } },
      /vendor\.tp_host/,
    ],
    ['degradedGraceMs negative', { ...ok, degradedGraceMs: -1 }, /degradedGraceMs/],
    ['degradedGraceMs a string', { ...ok, degradedGraceMs: '2000' }, /degradedGraceMs/],
    // Refused before a pending consent, not after it.
    [
      'a field element that is no input',
      { ...ok, field: document.createElement('div'), consent: new Promise<boolean>(() => {}) },
      /"field"/,
    ],
    [
      'a field element whose name ends in INPUT',
      { ...ok, field: document.createElement('my-input'), consent: new Promise<boolean>(() => {}) },
      /"field"/,
    ],
    [
      'a field element whose name starts with TEXTAREA',
      { ...ok, field: document.createElement('textarea-x'), consent: new Promise<boolean>(() => {}) },
      /"field"/,
    ],
    ['consent null', { ...ok, consent: null }, /"consent"/],
  ])('rejects %s', async (_, options, mention) => {
    await expectInvalid(options, mention);
  });

  it('rejects a globalName that shadows a non-config global, naming it', async () => {
    await expectInvalid(
      { ...ok, globalName: 'document' },
      /window\.document already holds an object \(HTMLDocument\), not a config object/,
    );
    await expectInvalid({ ...ok, globalName: 'setTimeout' }, /window\.setTimeout already holds a function/);
  });

  it('shows expected beside received', async () => {
    const error = await api.captureBlackbox({ ...ok, timeoutMs: -5 }).catch((e: Error) => e);
    expect((error as Error).message).toBe(
      '[blackbox-capture] Invalid option "timeoutMs": expected a number of milliseconds from 1 to 600000, received -5.',
    );
  });

  it.each([
    ['a path on the page origin', { loaderUrl: '/vendor/loader.js' }],
    ['http on loopback', { loaderUrl: 'http://127.0.0.1:9/loader.js' }],
    ['a path relative to the page', { loaderUrl: 'vendor/loader.js' }],
    ['an https URL in capitals', { loaderUrl: 'HTTPS://VENDOR.TEST/loader.js' }],
    ['a relative uriHook', { ...ok, uriHook: 'iojs' }],
    ['a nested uriHook', { ...ok, uriHook: '/proxy/iojs/' }],
    ['early5', { ...ok, version: 'early5' }],
    ['a numeric version', { ...ok, version: '5.2.2' }],
    ['vendor strings for booleans', { ...ok, vendor: { tp: '0', fp_dyn: 'false', enable_flash: false } }],
    // Boundaries: the vendor's other boolean strings and the longest time limit.
    ['vendor "true" and "1"', { ...ok, vendor: { tp: 'true', tp_split: '1' } }],
    ['the longest time limit, 600000 ms', { ...ok, timeoutMs: 600_000 }],
    ['post.maxAttempts 10', { ...ok, post: { url: '/risk', maxAttempts: 10 } }],
    ['versions with multi-digit parts', { ...ok, version: '10.20.30' }],
    ['http on 127.0.0.10', { loaderUrl: 'http://127.0.0.10:9/loader.js' }],
    ['http on 127.9.9.9', { loaderUrl: 'http://127.9.9.9:9/loader.js' }],
    ['http on localhost', { loaderUrl: 'http://localhost:9/loader.js' }],
    ['http on the IPv6 loopback', { loaderUrl: 'http://[::1]:9/loader.js' }],
    ['http on 127.1, which the URL parser writes as 127.0.0.1', { loaderUrl: 'http://127.1:9/loader.js' }],
    ['a relative loader path with a colon in it', { loaderUrl: 'static/a:b.js' }],
    ['a tp_host on loopback over http', { ...ok, vendor: { tp_host: 'http://localhost:9' } }],
    ['a uriHook with a dotted segment', { ...ok, uriHook: '/risk/v1.2/iojs' }],
    ['an option left undefined', { ...ok, subkey: undefined }],
    ['fp_static and fp_dyn both off', { ...ok, vendor: { fp_static: false, fp_dyn: false } }],
    ['no degraded grace', { ...ok, degradedGraceMs: 0 }],
  ])('accepts %s', async (_, options) => {
    const pending = api.captureBlackbox({ timeoutMs: 50, ...options } as never).catch((e: { code: string }) => e.code);
    expect(await pending).not.toBe('invalid_option');
  });

  it.each([
    ['a time limit over 600000 ms', { ...ok, timeoutMs: 600_001 }, /timeoutMs/],
    ['post.maxAttempts 11', { ...ok, post: { url: '/risk', maxAttempts: 11 } }, /post\.maxAttempts/],
    [
      'post.credentials with a prefix',
      { ...ok, post: { url: '/risk', credentials: 'xsame-origin' } },
      /post\.credentials/,
    ],
    [
      'post.credentials with a suffix',
      { ...ok, post: { url: '/risk', credentials: 'same-originx' } },
      /post\.credentials/,
    ],
    [
      'a post header that is not a string',
      { ...ok, post: { url: '/risk', headers: { a: 'x', b: 1 } } },
      /post\.headers/,
    ],
    ['post as a number', { ...ok, post: 5 }, /"post"/],
    ['post without url', { ...ok, post: {} }, /post\.url/],
    ['a version with a prefix', { ...ok, version: 'x5.2.2' }, /version/],
    ['a version with a suffix', { ...ok, version: '5.2.2x' }, /version/],
    ['a subkey starting with a control character', { ...ok, subkey: '\x01abc' }, /subkey/],
    ['a subkey ending with a control character', { ...ok, subkey: 'abc\x01' }, /subkey/],
    ['a field that is a div', { ...ok, field: { tagName: 'DIV' } }, /field/],
    ['a field whose tag only starts like an input', { ...ok, field: { tagName: 'INPUTX' } }, /field/],
    ['a field of null', { ...ok, field: null }, /field/],
    ['a signal that is an empty object', { ...ok, signal: {} }, /signal/],
    ['a signal without addEventListener', { ...ok, signal: { aborted: false } }, /signal/],
    ['a signal of null', { ...ok, signal: null }, /signal/],
    ['a nonce with a space', { ...ok, nonce: 'a b' }, /nonce/],
    ['a nonce with DEL', { ...ok, nonce: 'ab\x7f' }, /nonce/],
    ['an empty nonce', { ...ok, nonce: '' }, /nonce/],
    ['http on a host that merely ends like localhost', { loaderUrl: 'http://xlocalhost/loader.js' }, /loaderUrl/],
    ['a tp_host with a path', { ...ok, vendor: { tp_host: 'https://tp.test/path' } }, /tp_host/],
    ['a uriHook of ".."', { ...ok, uriHook: '..' }, /uriHook/],
    ['a uriHook ending in /..', { ...ok, uriHook: '/a/..' }, /uriHook/],
    ['a uriHook that starts with a host name', { ...ok, uriHook: 'shop.example/iojs' }, /uriHook/],
    ['fp_static off with fp_dyn left to its default', { ...ok, vendor: { fp_static: false } }, /fp_dyn/],
  ])('rejects %s', async (_, options, mention) => {
    await expectInvalid(options, mention);
  });
});

// Options as an attacker (or a careless proxy object) can shape them.
describe('options are read once and own properties only', () => {
  /** The window's own property names, to prove a rejection wrote nothing. */
  const globals = () => Object.getOwnPropertyNames(window).sort();

  it('a getter that answers a valid loaderUrl first and a data: URL later: only the first value is ever used', async () => {
    let reads = 0;
    const options = {
      get loaderUrl() {
        return reads++ === 0 ? LOADER_URL : 'data:text/javascript,window.pwned=1';
      },
    };
    await api.captureBlackbox(options);
    expect(reads).toBe(1);
    const injected = Array.from(document.querySelectorAll('script'), (s) => s.src);
    expect(injected[0]).toBe(LOADER_URL);
    expect(injected.filter((src) => !src.startsWith('https://'))).toEqual([]);
    expect(w().pwned).toBeUndefined();
  });

  it('a getter that answers a valid uriHook first and "//evil.example" later: the loader sees the first', async () => {
    let reads = 0;
    const options = {
      loaderUrl: LOADER_URL,
      get uriHook() {
        return reads++ === 0 ? '/iojs' : '//evil.example';
      },
    };
    await api.captureBlackbox(options);
    expect(reads).toBe(1);
    expect((w().IGLOO as { loader: { uri_hook: string } }).loader.uri_hook).toBe('/iojs');
    expect(requests.some((u) => u.includes('evil.example'))).toBe(false);
  });

  it('getters inside post, post.headers and vendor are read once too', async () => {
    const reads: string[] = [];
    const counted = <T>(name: string, first: T, later: T) => ({
      get [name]() {
        reads.push(name);
        return reads.filter((r) => r === name).length === 1 ? first : later;
      },
    });
    const seen: RequestInit[] = [];
    await api.captureBlackbox({
      loaderUrl: LOADER_URL,
      vendor: counted('tp_host', 'https://tp.test', 'https://evil.example'),
      post: {
        ...counted('url', '/device-risk', 'https://evil.example/steal'),
        headers: counted('x-csrf', 'token-1', 'token-2') as never,
        fetch: (async (url: string, init: RequestInit) => {
          seen.push({ ...init, headers: { ...(init.headers as object), url } });
          return new Response('{}', { status: 200 });
        }) as typeof fetch,
      } as never,
    });
    expect(reads.sort()).toEqual(['tp_host', 'url', 'x-csrf']);
    expect(seen[0]!.headers).toMatchObject({ url: '/device-risk', 'x-csrf': 'token-1' });
    expect(requests.some((u) => u.includes('evil.example'))).toBe(false);
  });

  it.each([
    [
      'a __proto__ key from JSON.parse',
      () => JSON.parse(`{"loaderUrl":"${LOADER_URL}","__proto__":{"x":1}}`),
      /Unknown option "__proto__"/,
    ],
    ['constructor', () => ({ loaderUrl: LOADER_URL, constructor: Object }), /Unknown option "constructor"/],
    ['toString', () => ({ loaderUrl: LOADER_URL, toString: () => 'x' }), /Unknown option "toString"/],
    [
      'hasOwnProperty in vendor',
      () => ({ loaderUrl: LOADER_URL, vendor: { hasOwnProperty: 1 } }),
      /Unknown option "vendor.hasOwnProperty"/,
    ],
    [
      'valueOf in post',
      () => ({ loaderUrl: LOADER_URL, post: { url: '/x', valueOf: 1 } }),
      /Unknown option "post.valueOf"/,
    ],
  ])('%s is an unknown option: invalid_option, typed, nothing written', async (_, make, mention) => {
    const before = globals();
    await expectInvalid(make(), mention);
    expect(globals()).toEqual(before);
  });

  it('options that inherit from another prototype are refused, never read through it', async () => {
    const options = Object.create({ uriHook: '//evil.example' }) as Record<string, unknown>;
    options.loaderUrl = LOADER_URL;
    await expectInvalid(options, /options/);
  });

  it.each(['undefined', 'NaN', 'Infinity', 'name', 'constructor', 'toString', 'location', 'document'])(
    'globalName %j, taken by another global, is refused before anything is written, and the next call works',
    async (name) => {
      const before = globals();
      const error = await api.captureBlackbox({ loaderUrl: LOADER_URL, globalName: name }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'invalid_option' });
      expect(globals()).toEqual(before);
      expect(w().io_global_object_name).toBeUndefined();
      expect(document.querySelectorAll('script')).toHaveLength(0);
      // The page is not poisoned: a correct call afterwards runs.
      await expect(api.captureBlackbox({ loaderUrl: LOADER_URL })).resolves.toMatch(/^0400/);
    },
  );
});
