// @vitest-environment happy-dom
// The two builds' differences, on their sources: the development build's warnings for risky
// but legal set-ups, and the production build's option checks (options.production.ts, the
// module the production build puts in place of options.ts): each check it keeps, and each
// check it drops, which the development build still makes.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LEAN_RULES as developmentLean, normalizeOptions as development } from '../../src/browser/options.js';
import { LEAN_RULES as productionLean, normalizeOptions as production } from '../../src/browser/options.production.js';
import { checked } from '../../src/browser/rules.js';
import { explain } from '../../src/browser/errors.js';
import {
  clearOverrides,
  freshPage,
  LOADER_URL,
  notFound,
  override,
  pageLoaderTag,
  thrownCode,
  w,
} from '../support/vendor-dom.js';

let api: Awaited<ReturnType<typeof freshPage>>;
let warnings: string[];
beforeEach(async () => {
  api = await freshPage();
  warnings = [];
  vi.spyOn(console, 'warn').mockImplementation((message: string) => void warnings.push(message));
});
afterEach(() => {
  vi.restoreAllMocks();
});

const codeOf = (run: () => unknown) => thrownCode(run, 'accepted');

describe('development warnings (legal set-ups that cost or break later)', () => {
  it('a page set up well gets none', async () => {
    await api.captureBlackbox({ loaderUrl: LOADER_URL });
    expect(warnings).toEqual([]);
  });

  it('an absolute uriHook, an unrelated script on the page: none', async () => {
    const app = document.createElement('script');
    app.type = 'text/x-not-run';
    app.src = 'https://shop.test/app.js';
    document.body.append(app);
    await api.captureBlackbox({ loaderUrl: LOADER_URL, uriHook: '/iojs' });
    expect(warnings).toEqual([]);
  });

  it('a preconnect hint to another origin is no hint for the loader', async () => {
    document.head.innerHTML = '<link rel="preconnect" href="https://cdn.elsewhere.test">';
    await api.captureBlackbox({ loaderUrl: LOADER_URL });
    expect(warnings).toEqual([
      expect.stringContaining('The loader is on https://vendor.test and the page has no preconnect hint'),
    ]);
  });

  it('a run started again after a failed one does not repeat a warning', async () => {
    document.head.innerHTML = '';
    override(/\/loader\.js$/, notFound);
    expect(await api.captureBlackbox({ loaderUrl: LOADER_URL }).catch((e: { code: string }) => e.code)).toBe(
      'loader_failed',
    );
    clearOverrides();
    await api.captureBlackbox({ loaderUrl: LOADER_URL });
    expect(warnings).toHaveLength(1);
  });

  it('a relative uriHook', async () => {
    await api.captureBlackbox({ loaderUrl: LOADER_URL, uriHook: 'iojs', timeoutMs: 300 }).catch(() => {});
    expect(warnings).toEqual([expect.stringMatching(/^\[blackbox-capture\] uriHook "iojs" is relative.*Use "\/iojs"/)]);
  });

  it('a cross-origin loader without a preconnect hint, once per page', async () => {
    document.head.innerHTML = '';
    await api.captureBlackbox({ loaderUrl: LOADER_URL });
    await api.captureBlackbox({ loaderUrl: LOADER_URL, onUpdate: () => {} });
    expect(warnings).toEqual([expect.stringContaining('<link rel="preconnect" href="https://vendor.test">')]);
  });

  it('a preload of the loader counts as a hint, and a same-origin loader needs none', async () => {
    document.head.innerHTML = `<link rel="preload" as="script" href="${LOADER_URL}">`;
    await api.captureBlackbox({ loaderUrl: LOADER_URL });
    api = await freshPage();
    document.head.innerHTML = '';
    await api.captureBlackbox({ loaderUrl: '/iojs/loader.js', timeoutMs: 100 }).catch(() => {});
    expect(warnings).toEqual([]);
  });

  it('inject while the page has its own loader tag: use inject: false', async () => {
    // The warning is written as the call starts; how the page's own tag fares is the adopt tests' matter.
    pageLoaderTag();
    const injected = api.captureBlackbox({ loaderUrl: LOADER_URL, timeoutMs: 200 }).catch(() => {});
    expect(warnings).toEqual([expect.stringContaining('Say so with inject: false')]);
    await injected;
    api = await freshPage();
    warnings.length = 0;
    pageLoaderTag();
    const adopted = api.captureBlackbox({ loaderUrl: LOADER_URL, inject: false, timeoutMs: 200 }).catch(() => {});
    expect(warnings).toEqual([]);
    await adopted;
  });

  it("the package's own loader tag, met by a second copy once the loader ran (Turbo running the tag again): none", async () => {
    await api.captureBlackbox({ loaderUrl: LOADER_URL });
    expect(warnings).toEqual([]);
    vi.resetModules();
    const again = await import('../../src/browser/index.js');
    await again.captureBlackbox({ loaderUrl: LOADER_URL });
    expect(warnings).toEqual([]);
  });
});

describe('production option checks', () => {
  const base = { loaderUrl: LOADER_URL };
  it.each([
    ['options that are no object', 'x'],
    ['no loaderUrl', {}],
    ['a loaderUrl on plain http off loopback', { loaderUrl: 'http://evil.example/loader.js' }],
    ['a protocol-relative loaderUrl', { loaderUrl: '//evil.example/loader.js' }],
    ['a loaderUrl with credentials', { loaderUrl: 'https://u:p@vendor.test/loader.js' }],
    ['a javascript: loaderUrl', { loaderUrl: 'javascript:alert(1)' }],
    ['a complete URL as uriHook', { ...base, uriHook: 'https://evil.example/iojs' }],
    ['a host as uriHook', { ...base, uriHook: 'evil.example/iojs' }],
    ['a uriHook with ".."', { ...base, uriHook: '/iojs/../x' }],
    ['a globalName that is no identifier', { ...base, globalName: 'a-b' }],
    ['a globalName that is no string', { ...base, globalName: 5 }],
    ['a globalName that is an array of an identifier', { ...base, globalName: ['IGLOO'] }],
    ['a consent that is neither a function nor a promise', { ...base, consent: true }],
    ['a consent object without then', { ...base, consent: { granted: true } }],
    ['a consent of null (a refusal, not a TypeError)', { ...base, consent: null }],
    ['an onUpdate that is no function', { ...base, onUpdate: 'x' }],
    ['an onTrace that is no function', { ...base, onTrace: {} }],
    ['a signal that is no AbortSignal', { ...base, signal: {} }],
    ['vendor keys that are no object', { ...base, vendor: 'tp=false' }],
    ['a post that is neither URL nor object', { ...base, post: 5 }],
    ['a post without url', { ...base, post: {} }],
    ['a post.body that is no function', { ...base, post: { url: '/r', body: 'x' } }],
    ['a post.fetch that is no function', { ...base, post: { url: '/r', fetch: 'x' } }],
    // Where the blackbox goes (issue #57): the page's origin or https, nowhere else.
    ['post on plain http to another host', { ...base, post: 'http://evil.example/collect' }],
    ['post.url on plain http to another host', { ...base, post: { url: 'http://evil.example/collect' } }],
    ['a data: post', { ...base, post: 'data:,' }],
    ['a javascript: post', { ...base, post: 'javascript:alert(1)' }],
    ['a blob: post', { ...base, post: 'blob:https://shop.test/0f6a' }],
    ['a protocol-relative post', { ...base, post: '//evil.example/collect' }],
    ['a post with credentials', { ...base, post: 'https://u:p@evil.example/collect' }],
    ['a post.url that is no string', { ...base, post: { url: 5 } }],
  ])('keeps refusing %s (invalid_option), as development does', (_, input) => {
    expect(codeOf(() => production(input))).toBe('invalid_option');
    expect(codeOf(() => development(input))).toBe('invalid_option');
  });

  it.each([
    ['an unknown option name', { ...base, colour: 'blue' }],
    ['a version no loader has', { ...base, version: 'latest' }],
    ['a timeoutMs out of range', { ...base, timeoutMs: 0 }],
    ['a subkey with a line break', { ...base, subkey: 'a\nb' }],
    ['enableRip as a string', { ...base, enableRip: 'yes' }],
    ['a nonce with a space', { ...base, nonce: 'a b' }],
    ['an unknown vendor key', { ...base, vendor: { colour: 'blue' } }],
    ['a vendor boolean that is none', { ...base, vendor: { tp: 'maybe' } }],
    ['a tp_host with a path', { ...base, vendor: { tp_host: 'https://tp.test/x' } }],
    ['fp_dyn without fp_static', { ...base, vendor: { fp_static: false } }],
    ['post.maxAttempts of 11', { ...base, post: { url: '/r', maxAttempts: 11 } }],
    ['post.credentials unknown', { ...base, post: { url: '/r', credentials: 'always' } }],
    ['post.headers with a number', { ...base, post: { url: '/r', headers: { a: 1 } } }],
  ])('drops the check of %s: accepted in production, refused in development', (_, input) => {
    expect(codeOf(() => production(input))).toBe('accepted');
    expect(codeOf(() => development(input))).toBe('invalid_option');
  });

  it('accepts good values of every rule it keeps', () => {
    const fetch = async () => new Response();
    const input = {
      ...base,
      uriHook: '/risk-proxy',
      globalName: 'ACME_RISK',
      onUpdate: () => {},
      onTrace: () => {},
      onOutcome: () => {},
      signal: new AbortController().signal,
      consent: () => true,
      vendor: { tp: false },
      post: { url: '/risk', body: () => ({}), fetch },
    };
    expect(codeOf(() => production(input))).toBe('accepted');
    expect(codeOf(() => production({ ...base, consent: Promise.resolve(true) }))).toBe('accepted');
  });

  it("keeps accepting a post on the page's origin or https, as development does", () => {
    for (const post of ['/risk', 'risk', 'https://risk.example/collect', 'http://localhost:8080/risk']) {
      expect(codeOf(() => production({ ...base, post }))).toBe('accepted');
      expect(codeOf(() => development({ ...base, post }))).toBe('accepted');
    }
  });

  it('a __proto__ key (as JSON.parse makes) is an unknown name in production, refused in development', () => {
    for (const json of [
      '{"loaderUrl":"/l.js","__proto__":{"x":1}}',
      '{"loaderUrl":"/l.js","post":{"url":"/r","__proto__":null}}',
    ]) {
      expect(codeOf(() => production(JSON.parse(json)))).toBe('accepted');
      expect(codeOf(() => development(JSON.parse(json)))).toBe('invalid_option');
    }
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it('orderToken: passed on by both builds (the POST sends it, post.test.ts); its rule is development only', () => {
    for (const normalize of [production, development])
      expect(normalize({ ...base, post: '/r', orderToken: 'ot_1' }).orderToken).toBe('ot_1');
    expect(codeOf(() => production({ ...base, post: '/r', orderToken: 'a b' }))).toBe('accepted');
    expect(codeOf(() => development({ ...base, post: '/r', orderToken: 'a b' }))).toBe('invalid_option');
  });

  it('an option given as undefined is an option not given', () => {
    const input = {
      ...base,
      uriHook: undefined,
      globalName: undefined,
      onUpdate: undefined,
      consent: undefined,
      signal: undefined,
      vendor: undefined,
    };
    expect(codeOf(() => production(input))).toBe('accepted');
    expect(codeOf(() => development(input))).toBe('accepted');
  });

  it.each([
    ['options', 'x'],
    ['loaderUrl', {}],
    ['post', { ...base, post: 5 }],
    ['post.url', { ...base, post: { body: () => ({}) } }],
    ['post.fetch', { ...base, post: { url: '/r', fetch: 'x' } }],
    ['uriHook', { ...base, uriHook: 'https://evil.example/x' }],
  ])('a refusal names the option at fault: %s', async (name, input) => {
    let error: unknown;
    try {
      production(input);
    } catch (caught) {
      error = await explain(caught);
    }
    expect((error as Error).message).toContain(`"${name}"`);
  });

  it('fills the same defaults and turns a post URL into { url }, reading each option once', () => {
    let reads = 0;
    const input = {
      get loaderUrl() {
        return reads++ ? 'http://evil.example/l.js' : LOADER_URL;
      },
      post: '/risk',
    };
    expect(production(input)).toEqual({ loaderUrl: LOADER_URL, post: { url: '/risk' }, vendor: {}, timeoutMs: 15_000 });
    expect(reads).toBe(1);
    expect(production({ ...base, vendor: { tp: false }, timeoutMs: 5 })).toMatchObject({
      vendor: { tp: false },
      timeoutMs: 5,
    });
  });

  it('a globalName that shadows another global is refused in both builds (the page check is in the core)', async () => {
    w().taken = 'not a config';
    const error = await api.captureBlackbox({ loaderUrl: LOADER_URL, globalName: 'taken' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'invalid_option' });
    delete w().taken;
  });
});

describe("the lean entry's rules, in each build (LEAN_RULES)", () => {
  const base = { loaderUrl: LOADER_URL };
  const checks = (rules: typeof developmentLean) => (input: unknown) => codeOf(() => checked(rules, input, 'options'));
  it.each([
    ['no loaderUrl', {}],
    ['a loaderUrl on plain http off loopback', { loaderUrl: 'http://evil.example/loader.js' }],
    ['a complete URL as uriHook', { ...base, uriHook: 'https://evil.example/iojs' }],
  ])('refuses %s in both builds', (_, input) => {
    expect(checks(productionLean)(input)).toBe('invalid_option');
    expect(checks(developmentLean)(input)).toBe('invalid_option');
  });

  it.each([
    ['a timeoutMs of 0', { ...base, timeoutMs: 0 }],
    ['a timeoutMs as a string', { ...base, timeoutMs: '5000' }],
    ['inject as a string', { ...base, inject: 'false' }],
    ['an empty nonce', { ...base, nonce: '' }],
  ])('drops the check of %s in production, as the full entry does (options.production.ts)', (_, input) => {
    expect(checks(productionLean)(input)).toBe('accepted');
    expect(checks(developmentLean)(input)).toBe('invalid_option');
    expect(codeOf(() => production(input))).toBe('accepted');
    expect(codeOf(() => development(input))).toBe('invalid_option');
  });
});
