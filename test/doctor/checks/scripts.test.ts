// The first-party script checks on their own (src/doctor/checks/scripts.ts): both scripts under
// the prefix and version, the classic proxy bugs each named, and the dynamic script from no cache.
import { describe, expect, it } from 'vitest';
import { checkDynamicNotCached, checkFirstPartyScripts, JAVASCRIPT } from '../../../src/doctor/checks/scripts.js';
import { fakeGet, recorder } from '../../support/doctor-checks.js';

const PAGE = new URL('https://shop.test/checkout');
const STATIC = 'https://shop.test/iojs/general5/static_wdp.js';
const DYN = 'https://shop.test/iojs/general5/dyn_wdp.js';
const script = () => new Response('var x;', { headers: { 'content-type': 'application/javascript' } });

async function scripts(answers: Parameters<typeof fakeGet>[0]) {
  const { add, findings } = recorder();
  const { get, asked } = fakeGet(answers);
  const dyn = await checkFirstPartyScripts(get, add, { page: PAGE, prefix: '/iojs', version: 'general5' });
  return { dyn, findings, asked: asked.map((a) => a.url) };
}

describe('checkFirstPartyScripts', () => {
  it('both scripts answering JavaScript pass; the dynamic answer is handed on', async () => {
    const { dyn, findings, asked } = await scripts({ [STATIC]: script, [DYN]: script });
    expect(asked).toEqual([STATIC, DYN]);
    expect(findings).toEqual([
      { id: 'static_script', status: 'pass', message: `${STATIC} answered JavaScript`, fix: undefined },
      { id: 'dyn_script', status: 'pass', message: `${DYN} answered JavaScript`, fix: undefined },
    ]);
    expect(dyn).toBeInstanceOf(Response);
    expect(dyn!.headers.get('content-type')).toBe('application/javascript');
  });

  it("only the dynamic script's answer is handed on, and only when it was the script", async () => {
    expect((await scripts({ [STATIC]: script, [DYN]: () => new Response('x', { status: 500 }) })).dyn).toBeUndefined();
    expect((await scripts({ [DYN]: script })).dyn).toBeDefined();
  });

  it.each([
    [
      "the kit's proxy, given a path without its prefix",
      () =>
        new Response(' {"error":{"code":"not_found"}}\n', {
          status: 404,
          headers: { 'content-type': 'application/json' },
        }),
      `${DYN} answered 404 from the kit's proxy, which got a path without "/iojs"`,
    ],
    [
      'a 404 of another kind',
      () => new Response('{"error":{"code":"not_found"},"x":1}', { status: 404 }),
      `${DYN} answered 404`,
    ],
    [
      'an HTML page by its type',
      () => new Response('var x;', { headers: { 'content-type': 'text/html' } }),
      `${DYN} answered HTML (200): the site's fallback page, not the script`,
    ],
    [
      'an HTML page by its first character',
      () => new Response('  \n<!doctype html>', { status: 403, headers: { 'content-type': 'text/javascript' } }),
      `${DYN} answered HTML (403): the site's fallback page, not the script`,
    ],
    [
      'a script with an error status',
      () => new Response('var x;', { status: 500, headers: { 'content-type': 'text/javascript' } }),
      `${DYN} answered 500 text/javascript`,
    ],
    [
      'no content type',
      () => new Response(new Uint8Array([118, 97, 114])),
      `${DYN} answered 200 without a content type`,
    ],
    [
      'a type that is no script',
      () => new Response('var x;', { headers: { 'content-type': 'text/plain' } }),
      `${DYN} answered 200 text/plain`,
    ],
    ['no answer', new Error('socket hang up'), `${DYN} could not be fetched (socket hang up)`],
  ])('%s fails', async (_, answer, message) => {
    const { dyn, findings } = await scripts({ [STATIC]: script, [DYN]: answer });
    expect(findings[1]).toEqual(expect.objectContaining({ id: 'dyn_script', status: 'fail', message }));
    expect(dyn).toBeUndefined();
  });

  it("only a 404 with exactly the kit's own answer is the kit's proxy", async () => {
    const kit = '{"error":{"code":"not_found"}}';
    const dyn = async (status: number, body: string) =>
      (await scripts({ [STATIC]: script, [DYN]: () => new Response(body, { status }) })).findings[1]!.message;
    expect(await dyn(500, kit)).toBe(`${DYN} answered 500 text/plain;charset=UTF-8`);
    expect(await dyn(404, `x${kit}`)).toBe(`${DYN} answered 404`);
    expect(await dyn(404, `${kit}x`)).toBe(`${DYN} answered 404`);
  });

  it('a script that compares with < is no HTML page', async () => {
    const { findings } = await scripts({
      [STATIC]: script,
      [DYN]: () => new Response('var a = 1 < 2;', { headers: { 'content-type': 'text/javascript' } }),
    });
    expect(findings[1]).toMatchObject({ id: 'dyn_script', status: 'pass' });
  });

  it('the fixes name the prefix the page uses', async () => {
    const { findings } = await scripts({
      [STATIC]: () => new Response('{"error":{"code":"not_found"}}', { status: 404 }),
      [DYN]: () => new Response('', { status: 404 }),
    });
    expect(findings[0]!.fix).toContain("app.all('/iojs/*splat', toNodeHandler(iojs))");
    expect(findings[1]!.fix).toContain('the proxy must strip "/iojs" before forwarding');
  });

  it('JAVASCRIPT: the script types a browser runs, with parameters', () => {
    for (const type of [
      'text/javascript',
      'application/javascript; charset=utf-8',
      'application/x-javascript',
      'text/ecmascript',
    ])
      expect(JAVASCRIPT.test(type), type).toBe(true);
    for (const type of ['text/plain', 'application/json', 'x-text/javascript', 'text/javascripts'])
      expect(JAVASCRIPT.test(type), type).toBe(false);
  });
});

describe('checkDynamicNotCached', () => {
  const cached = (headers: Record<string, string>) => {
    const { add, findings } = recorder();
    checkDynamicNotCached(add, new Response('', { headers }));
    return findings;
  };

  it('no-store and no Age passes', () => {
    expect(cached({ 'cache-control': 'private, No-Store' })).toEqual([
      expect.objectContaining({ id: 'dyn_not_cached', status: 'pass' }),
    ]);
  });

  it('an Age fails, whatever Cache-Control says', () => {
    expect(cached({ 'cache-control': 'no-store', age: '0' })).toEqual([
      expect.objectContaining({
        id: 'dyn_not_cached',
        status: 'fail',
        message: 'dyn_wdp.js came from a cache (Age: 0)',
      }),
    ]);
  });

  it('without no-store it fails, naming what Cache-Control said', () => {
    expect(cached({ 'cache-control': 'no-cache' })).toEqual([
      expect.objectContaining({
        id: 'dyn_not_cached',
        status: 'fail',
        message: 'dyn_wdp.js may be cached (Cache-Control: no-cache)',
      }),
    ]);
    expect(cached({ 'cache-control': 'x-no-stored' })[0]!.status).toBe('fail');
    expect(cached({})).toEqual([
      expect.objectContaining({ status: 'fail', message: 'dyn_wdp.js may be cached (Cache-Control: none)' }),
    ]);
  });
});
