// The set_cookie check on its own (src/doctor/checks/cookies.ts): the cookies that came through
// the front, in the kit's namespace and under the prefix; given the collector, compared with its own.
import { describe, expect, it } from 'vitest';
import { checkCookies } from '../../../src/doctor/checks/cookies.js';
import { fakeGet, recorder } from '../../support/doctor-checks.js';

const PAGE = new URL('https://shop.test/checkout');
const COLLECTOR = 'https://collector.test/base';
/** The collector's own dynamic script, which the check fetches for its cookies. */
const DYN = `${COLLECTOR}/general5/dyn_wdp.js`;
/** The one finding the check adds. */
const setCookie = (status: string, message: string) => [expect.objectContaining({ id: 'set_cookie', status, message })];

function withCookies(...lines: string[]): Response {
  const headers = new Headers({ 'content-type': 'application/javascript' });
  for (const line of lines) headers.append('set-cookie', line);
  return new Response('', { headers });
}

async function cookies(dyn: Response, collectorUrl: string | undefined, answers: Parameters<typeof fakeGet>[0] = {}) {
  const { add, findings } = recorder();
  const { get, asked } = fakeGet(answers);
  await checkCookies(get, add, dyn, {
    page: PAGE,
    prefix: '/iojs',
    version: 'general5',
    cookiePrefix: 'bbc_',
    collectorUrl,
  });
  return { findings, asked: asked.map((a) => a.url) };
}

describe('checkCookies', () => {
  it("a cookie outside the kit's namespace or the prefix fails, whatever the collector says", async () => {
    const { findings, asked } = await cookies(withCookies('device=1; Path=/'), COLLECTOR);
    expect(asked).toEqual([]);
    expect(findings).toEqual([expect.objectContaining({ id: 'set_cookie', status: 'fail' })]);
    expect(findings[0]!.message).toContain('device: not in the bbc_ namespace, Path=/, outside /iojs');
  });

  it("without a Path, the cookie is scoped to the dynamic script's directory, which is under the prefix", async () => {
    expect((await cookies(withCookies('bbc_device=1'), undefined)).findings).toEqual([
      expect.objectContaining({ id: 'set_cookie', status: 'pass', message: '1 cookie(s) through the proxy' }),
    ]);
  });

  it('given the collector: its own answer for the same script, at its base URL', async () => {
    for (const collectorUrl of [COLLECTOR, `${COLLECTOR}/`]) {
      const { findings, asked } = await cookies(
        withCookies('bbc_a=1; Path=/iojs', 'bbc_b=2; Path=/iojs/x'),
        collectorUrl,
        {
          [DYN]: () => withCookies('a=1', 'b=2', 'c=3'),
        },
      );
      expect(asked).toEqual([DYN]);
      expect(findings).toEqual(setCookie('pass', '2 cookie(s) through the proxy, 3 from the collector'));
    }
  });

  it('the collector sets cookies and none came through: a warning (collection works without them)', async () => {
    const { findings } = await cookies(withCookies(), COLLECTOR, {
      [DYN]: () => withCookies('a=1'),
    });
    expect(findings).toEqual(setCookie('warn', 'the collector sets 1 cookie(s); none came through the proxy'));
  });

  it('neither sets any: a pass', async () => {
    const { findings } = await cookies(withCookies(), COLLECTOR, {
      [DYN]: () => withCookies(),
    });
    expect(findings).toEqual([
      expect.objectContaining({ status: 'pass', message: '0 cookie(s) through the proxy, 0 from the collector' }),
    ]);
  });

  it('a collector answer without a body is read for its cookies all the same', async () => {
    const { findings } = await cookies(withCookies('bbc_a=1; Path=/iojs'), COLLECTOR, {
      [DYN]: () => new Response(null, { headers: [['set-cookie', 'a=1']] }),
    });
    expect(findings).toEqual([
      expect.objectContaining({ status: 'pass', message: '1 cookie(s) through the proxy, 1 from the collector' }),
    ]);
  });

  it("the collector's body is not read", async () => {
    let cancelled = false;
    await cookies(withCookies(), COLLECTOR, {
      [DYN]: () => new Response(new ReadableStream({ cancel: () => void (cancelled = true) })),
    });
    expect(cancelled).toBe(true);
  });

  it('a collector that cannot be fetched: a warning with the reason', async () => {
    const { findings } = await cookies(withCookies('bbc_a=1; Path=/iojs'), COLLECTOR);
    expect(findings).toEqual(
      setCookie('warn', `the collector could not be fetched (connect ECONNREFUSED ${COLLECTOR}/general5/dyn_wdp.js)`),
    );
  });

  it('without the collector and without cookies: a warning asking for --collector-url', async () => {
    expect((await cookies(withCookies(), undefined)).findings).toEqual([
      {
        id: 'set_cookie',
        status: 'warn',
        message: "no Set-Cookie in the proxy's answer",
        fix: "give --collector-url to compare with the collector's own answer",
      },
    ]);
  });
});
