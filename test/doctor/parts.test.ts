// The doctor's parts on their own: reading CSP policies, matching a source list against an
// origin (as a browser does, for the cases a checkout meets), reading a bounded body, and its
// bounded fetch (request budget, redirects within the origin, a POST's redirect as its answer).
import { describe, expect, it } from 'vitest';
import { allows, boundedFetch, MAX_REQUESTS, policies, readText } from '../../src/doctor/doctor.js';

describe('policies', () => {
  it('one policy per header value (comma-separated) and per meta tag, directives by lower-case name', () => {
    const headers = new Headers({
      'content-security-policy': "Script-Src 'self'  https://a.test ; img-src *, script-src 'none'",
    });
    const read = policies(headers, ["default-src 'self'"]);
    expect(read.map((policy) => Object.fromEntries(policy))).toEqual([
      { 'script-src': ["'self'", 'https://a.test'], 'img-src': ['*'] },
      { 'script-src': ["'none'"] },
      { 'default-src': ["'self'"] },
    ]);
  });

  it('the first of a repeated directive counts, as in a browser; empty values and directives are skipped', () => {
    const headers = new Headers({ 'content-security-policy': "script-src 'self'; SCRIPT-SRC *;; , " });
    expect(policies(headers, []).map((policy) => Object.fromEntries(policy))).toEqual([{ 'script-src': ["'self'"] }]);
    expect(policies(new Headers(), [])).toEqual([]);
    const blankBetween = new Headers({ 'content-security-policy': "script-src 'self',  , img-src *" });
    expect(policies(blankBetween, [])).toHaveLength(2);
  });
});

describe('allows', () => {
  const PAGE = 'https://shop.test';
  it.each([
    [["'none'", '*'], 'https://x.test', false],
    [['*'], 'https://x.test', true],
    [['*'], 'data:', false],
    [['*'], 'http://x.test', true],
    [['*'], 'blob:https://x.test', false],
    [["'self'"], PAGE, true],
    [["'SELF'"], PAGE, true],
    [["'self'"], 'https://other.test', false],
    [['https:'], 'https://x.test', true],
    [['https:'], 'http://x.test', false],
    [['x.test'], 'https://x.test', true],
    [['X.TEST'], 'https://x.test', true],
    [['x.test/'], 'https://x.test', true],
    [['https://x.test'], 'https://x.test', true],
    [['http://x.test'], 'https://x.test', true], // http allows its upgrade to https
    [['https://x.test'], 'http://x.test', false],
    [['wss://x.test'], 'https://x.test', false],
    [['y.test'], 'https://x.test', false],
    [['*.x.test'], 'https://a.x.test', true],
    [['*.x.test'], 'https://x.test', false],
    [['*.x.test'], 'https://evilx.test', false],
    [['x.test:443'], 'https://x.test', true],
    [['x.test:80'], 'http://x.test', true],
    [['x.test:8443'], 'https://x.test', false],
    [['x.test:8443'], 'https://x.test:8443', true],
    [['x.test:*'], 'https://x.test:9000', true],
    [['x.test'], 'https://x.test:9000', false], // no port in the source: the default one only
    [["'nonce-x.test'"], 'https://x.test', false],
    [['https://x.test/path/'], 'https://x.test', false],
  ] as const)('%j lets %s load: %s', (sources, origin, expected) => {
    expect(allows([...sources], origin, PAGE)).toBe(expected);
  });
});

describe('readText', () => {
  const body = (...chunks: Uint8Array[]) =>
    new Response(
      new ReadableStream({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(chunk);
          controller.close();
        },
      }),
    );

  it('reads a body under the limit whole, a character split across chunks included', async () => {
    const euro = new TextEncoder().encode('€'); // three bytes
    expect(await readText(body(new TextEncoder().encode('a'), euro.subarray(0, 1), euro.subarray(1)), 100)).toEqual({
      text: 'a€',
      cut: false,
    });
    expect(await readText(new Response(null), 10)).toEqual({ text: '', cut: false });
  });

  it('stops at the limit: the bytes up to it, and cut', async () => {
    const encode = (text: string) => new TextEncoder().encode(text);
    expect(await readText(body(encode('abc'), encode('defgh'), encode('ijk')), 5)).toEqual({
      text: 'abcde',
      cut: true,
    });
    expect(await readText(body(encode('abcde')), 5)).toEqual({ text: 'abcde', cut: false });
    expect(await readText(body(encode('abcdef')), 5)).toEqual({ text: 'abcde', cut: true });
  });
});

describe('boundedFetch', () => {
  /** A fetch that answers from a table by URL, recording each request. */
  function scripted(answers: Record<string, () => Response>) {
    const seen: Array<{ url: string; method: string; redirect: string; agent: string | null; body: unknown }> = [];
    const doFetch = (async (url: URL, init: RequestInit) => {
      seen.push({
        url: String(url),
        method: init.method!,
        redirect: init.redirect!,
        agent: new Headers(init.headers).get('user-agent'),
        body: init.body,
      });
      return (answers[String(url)] ?? (() => new Response('not found', { status: 404 })))();
    }) as typeof fetch;
    return { doFetch, seen };
  }
  const redirect =
    (location: string, status = 302) =>
    () =>
      new Response(null, { status, headers: { location } });

  it('GET by default, POST with a body, redirects handled by hand, the doctor named in User-Agent', async () => {
    const { doFetch, seen } = scripted({ 'https://shop.test/': () => new Response('ok') });
    const get = boundedFetch(doFetch, 1000);
    expect(await (await get('https://shop.test/')).text()).toBe('ok');
    await get('https://shop.test/', { body: '{}', headers: { 'user-agent': 'mine' } });
    expect(seen).toEqual([
      {
        url: 'https://shop.test/',
        method: 'GET',
        redirect: 'manual',
        agent: 'Mozilla/5.0 (blackbox-capture doctor)',
        body: undefined,
      },
      { url: 'https://shop.test/', method: 'POST', redirect: 'manual', agent: 'mine', body: '{}' },
    ]);
  });

  it('follows up to three redirects within the origin, relative ones included', async () => {
    const { doFetch, seen } = scripted({
      'https://shop.test/a': redirect('/b', 301),
      'https://shop.test/b': redirect('https://shop.test/c', 307),
      'https://shop.test/c': redirect('d', 308),
      'https://shop.test/d': () => new Response('here'),
    });
    expect(await (await boundedFetch(doFetch, 1000)('https://shop.test/a')).text()).toBe('here');
    expect(seen.map((s) => s.url)).toEqual([
      'https://shop.test/a',
      'https://shop.test/b',
      'https://shop.test/c',
      'https://shop.test/d',
    ]);
  });

  it('refuses a fourth redirect, and a redirect to another origin', async () => {
    const loop = scripted({
      'https://shop.test/1': redirect('/2'),
      'https://shop.test/2': redirect('/3'),
      'https://shop.test/3': redirect('/4'),
      'https://shop.test/4': redirect('/5'),
    });
    await expect(boundedFetch(loop.doFetch, 1000)('https://shop.test/1')).rejects.toThrow('more than 3 redirects');
    expect(loop.seen).toHaveLength(4);
    const away = scripted({ 'https://shop.test/': redirect('https://elsewhere.test/') });
    await expect(boundedFetch(away.doFetch, 1000)('https://shop.test/')).rejects.toThrow(
      'redirected to another origin (https://elsewhere.test), not followed',
    );
  });

  it('a 3xx without Location, a 299 or a 400 with one, and any redirect of a POST are answers; 300 and 399 are followed', async () => {
    const { doFetch, seen } = scripted({
      'https://shop.test/none': () => new Response(null, { status: 304 }),
      'https://shop.test/post': redirect('/elsewhere', 303),
      'https://shop.test/299': () => new Response(null, { status: 299, headers: { location: '/x' } }),
      'https://shop.test/400': () => new Response(null, { status: 400, headers: { location: '/x' } }),
      'https://shop.test/300': () => new Response(null, { status: 300, headers: { location: '/299' } }),
      'https://shop.test/399': () => new Response(null, { status: 399, headers: { location: '/299' } }),
    });
    const get = boundedFetch(doFetch, 1000);
    expect((await get('https://shop.test/none')).status).toBe(304);
    expect((await get('https://shop.test/post', { body: '' })).status).toBe(303);
    expect((await get('https://shop.test/299')).status).toBe(299);
    expect((await get('https://shop.test/400')).status).toBe(400);
    // 300 and 399 are redirects: followed.
    expect((await get('https://shop.test/300')).status).toBe(299);
    expect((await get('https://shop.test/399')).status).toBe(299);
    expect(seen).toHaveLength(8);
  });

  it(`makes at most ${MAX_REQUESTS} requests a run, redirects counted`, async () => {
    const { doFetch, seen } = scripted({
      'https://shop.test/r': redirect('/ok'),
      'https://shop.test/ok': () => new Response(''),
    });
    const get = boundedFetch(doFetch, 1000);
    for (let i = 0; i < MAX_REQUESTS / 2; i++) await get('https://shop.test/r');
    await expect(get('https://shop.test/ok')).rejects.toThrow(`the doctor makes at most ${MAX_REQUESTS} requests`);
    expect(seen).toHaveLength(MAX_REQUESTS);
  });
});
