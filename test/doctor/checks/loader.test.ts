// The loader checks on their own (src/doctor/checks/loader.ts): which tags of a page run the
// loader and which URLs name it, the loader_tag_once count, and the one loader fetched.
import { describe, expect, it } from 'vitest';
import { checkLoaderScript, checkLoaderTags, findLoaders } from '../../../src/doctor/checks/loader.js';
import { fakeGet, recorder } from '../../support/doctor-checks.js';

const PAGE = new URL('https://shop.test/checkout/pay');
const LOADER = 'https://cdn.vendor.test/loader_only.js';
const js = () => new Response('/* loader */', { headers: { 'content-type': 'application/javascript' } });

describe('findLoaders', () => {
  it("the page's own loader tags: by name (loader, loader_only, iovation, snare) or by a URL named elsewhere", () => {
    const html = [
      '<script src="/js/loader.js"></script>',
      '<script src="https://cdn.test/LOADER_ONLY.v2.js?x=1"></script>',
      '<script src="iovation-bundle.js"></script>',
      '<script src="https://cdn.test/snare.js"></script>',
      '<script src="/js/app.js"></script>',
      '<script src="/js/my-loader.jsx"></script>',
      '<script src="/js/preloader.js"></script>',
      '<script>inline()</script>',
      '<script src="/named/by/element.js"></script>',
      '<blackbox-capture loader-url="/named/by/element.js" post-url="/risk"></blackbox-capture>',
    ].join('');
    const found = findLoaders(html, PAGE, undefined);
    expect(found.ownTags.map((t) => t.src)).toEqual([
      '/js/loader.js',
      'https://cdn.test/LOADER_ONLY.v2.js?x=1',
      'iovation-bundle.js',
      'https://cdn.test/snare.js',
      '/named/by/element.js',
    ]);
    // Each resolved against the page, once.
    expect([...found.loaderUrls]).toEqual([
      'https://shop.test/named/by/element.js',
      'https://shop.test/js/loader.js',
      'https://cdn.test/LOADER_ONLY.v2.js?x=1',
      'https://shop.test/checkout/iovation-bundle.js',
      'https://cdn.test/snare.js',
    ]);
  });

  it("this package's script tags and elements, with their inject and post URL; --loader-url first", () => {
    const html =
      '<script src="/bbc.js" data-loader-url="/l1.js" data-inject="false" data-post-url="/p1"></script>' +
      '<script src="/other.js" data-post-url="/ignored"></script>' +
      '<blackbox-capture loader-url="https://cdn.test/l2.js" inject="false" post-url="/p2"></blackbox-capture>' +
      '<blackbox-capture></blackbox-capture>';
    const found = findLoaders(html, PAGE, LOADER);
    expect(found.declarative).toEqual([
      { loaderUrl: '/l1.js', inject: 'false', postUrl: '/p1' },
      { loaderUrl: 'https://cdn.test/l2.js', inject: 'false', postUrl: '/p2' },
      { loaderUrl: undefined, inject: undefined, postUrl: undefined },
    ]);
    expect([...found.loaderUrls]).toEqual([LOADER, 'https://shop.test/l1.js', 'https://cdn.test/l2.js']);
    expect(found.ownTags).toEqual([]);
  });

  it('only http(s) URLs count: javascript:, data:, a broken URL and a missing one name no loader', () => {
    const found = findLoaders(
      '<script data-loader-url="javascript:alert(1)"></script><script src="data:text/javascript,loader.js"></script>' +
        '<blackbox-capture loader-url="http://[::1"></blackbox-capture>',
      PAGE,
      'ftp://files.test/loader.js',
    );
    expect(found.loaderUrls.size).toBe(0);
    expect(found.resolve('http://[::1')).toBeUndefined();
    expect(found.resolve('web+https://cdn.test/loader.js')).toBeUndefined();
    expect(found.resolve('httpsx://cdn.test/loader.js')).toBeUndefined();
    expect(found.resolve('//cdn.test/x.js')).toBe('https://cdn.test/x.js');
    expect(found.named([undefined, 'mailto:a@b.test', '/p', 'HTTP://Shop.test/q'])).toEqual([
      'https://shop.test/p',
      'http://shop.test/q',
    ]);
  });
});

describe('checkLoaderTags', () => {
  const tags = (html: string, loaderUrl?: string) => {
    const { add, findings } = recorder();
    checkLoaderTags(add, findLoaders(html, PAGE, loaderUrl), loaderUrl);
    return findings;
  };

  it('one run passes: a loader tag, or a tag of the package that injects it', () => {
    expect(tags('<script src="/loader.js"></script>')).toEqual([
      { id: 'loader_tag_once', status: 'pass', message: 'one loader tag', fix: undefined },
    ]);
    expect(tags('<blackbox-capture loader-url="/l.js"></blackbox-capture>').map((f) => f.status)).toEqual(['pass']);
    // Adopting the page's own tag: one run.
    expect(
      tags('<script src="/loader.js"></script><script data-loader-url="/loader.js" data-inject="false"></script>').map(
        (f) => f.status,
      ),
    ).toEqual(['pass']);
  });

  it('two runs fail, counting the tags and the elements apart', () => {
    const [finding] = tags(
      '<script src="/loader.js"></script><blackbox-capture loader-url="/loader.js"></blackbox-capture>' +
        '<blackbox-capture loader-url="/loader.js" inject="false"></blackbox-capture>',
    );
    expect(finding).toMatchObject({ id: 'loader_tag_once', status: 'fail' });
    expect(finding!.message).toContain('2 times (1 loader tag(s), 2 blackbox-capture tag(s) or element(s))');
  });

  it('none is a warning whose fix asks for --loader-url only when it was not given', () => {
    const [without] = tags('<p>checkout</p>');
    expect(without).toMatchObject({ id: 'loader_tag_once', status: 'warn' });
    expect(without!.fix).toContain('give --loader-url');
    const [given] = tags('<p>checkout</p>', LOADER);
    expect(given).toMatchObject({ id: 'loader_tag_once', status: 'warn' });
    expect(given!.fix).toBe(
      'fine when your bundle calls captureBlackbox (the loader checked is the one --loader-url gives)',
    );
  });
});

describe('checkLoaderScript', () => {
  const script = async (html: string, loaderUrl: string | undefined, answers: Parameters<typeof fakeGet>[0]) => {
    const { add, findings } = recorder();
    const { get, asked } = fakeGet(answers);
    await checkLoaderScript(get, add, findLoaders(html, PAGE, loaderUrl), loaderUrl);
    return { findings, asked: asked.map((a) => a.url) };
  };

  it('no loader URL: a warning, and nothing fetched', async () => {
    expect(await script('<p></p>', undefined, {})).toEqual({
      findings: [{ id: 'loader_script', status: 'warn', message: 'no loader URL found', fix: 'give --loader-url' }],
      asked: [],
    });
  });

  it('the loader answering JavaScript passes; its body is not read', async () => {
    let cancelled = false;
    const answer = () =>
      new Response(
        new ReadableStream({
          cancel: () => void (cancelled = true),
        }),
        { headers: { 'content-type': 'text/javascript; charset=utf-8' } },
      );
    const { findings, asked } = await script('<script src="/loader.js"></script>', undefined, {
      'https://shop.test/loader.js': answer,
    });
    expect(findings).toEqual([
      {
        id: 'loader_script',
        status: 'pass',
        message: 'https://shop.test/loader.js answered JavaScript',
        fix: undefined,
      },
    ]);
    expect(asked).toEqual(['https://shop.test/loader.js']);
    expect(cancelled).toBe(true);
  });

  it.each([
    ['an HTML page', () => new Response('<html>', { headers: { 'content-type': 'text/html' } }), '200 text/html'],
    [
      'a 404 in JavaScript',
      () => new Response('', { status: 404, headers: { 'content-type': 'text/javascript' } }),
      '404 text/javascript',
    ],
    ['no content type', () => new Response(null, { status: 200, headers: {} }), '200 without a content type'],
  ])('%s fails, saying what came', async (_, answer, said) => {
    const { findings } = await script('', LOADER, { [LOADER]: answer });
    expect(findings).toEqual([
      expect.objectContaining({ id: 'loader_script', status: 'fail', message: `${LOADER} answered ${said}` }),
    ]);
  });

  it('a loader that cannot be fetched fails with the reason', async () => {
    const { findings } = await script('', LOADER, { [LOADER]: new Error('getaddrinfo ENOTFOUND') });
    expect(findings).toEqual([
      expect.objectContaining({
        id: 'loader_script',
        status: 'fail',
        message: `${LOADER} could not be fetched (getaddrinfo ENOTFOUND)`,
      }),
    ]);
  });

  it('several loader URLs: only the one --loader-url gives is fetched, else the first; a warning names it', async () => {
    const html = '<script src="/loader.js"></script><script src="https://cdn.test/snare.js"></script>';
    const answers = { [LOADER]: js, 'https://shop.test/loader.js': js, 'https://cdn.test/snare.js': js };
    const chosen = await script(html, LOADER, answers);
    expect(chosen.asked).toEqual([LOADER]);
    expect(chosen.findings[0]).toMatchObject({
      id: 'loader_script',
      status: 'warn',
      message: `the page names 3 loader URLs; only ${LOADER} was fetched`,
    });
    expect(chosen.findings[1]).toMatchObject({ id: 'loader_script', status: 'pass' });
    const first = await script(html, undefined, answers);
    expect(first.asked).toEqual(['https://shop.test/loader.js']);
    expect(first.findings[0]!.message).toBe(
      'the page names 2 loader URLs; only https://shop.test/loader.js was fetched',
    );
    // A --loader-url that is no http(s) URL is not fetched: the page's first is.
    const unusable = await script(html, 'file:///etc/passwd', answers);
    expect(unusable.asked).toEqual(['https://shop.test/loader.js']);
  });
});
