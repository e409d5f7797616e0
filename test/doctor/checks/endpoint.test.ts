// The post_endpoint check on its own (src/doctor/checks/endpoint.ts): one POST of "{}" from the
// page's origin, to an endpoint on that origin only, and what each kind of answer means.
import { describe, expect, it } from 'vitest';
import { checkPostEndpoint } from '../../../src/doctor/checks/endpoint.js';
import { fakeGet, recorder } from '../../support/doctor-checks.js';

const PAGE = new URL('https://shop.test/checkout');
const ENDPOINT = 'https://shop.test/api/risk';

async function endpoint(answer: Response | Error, postUrls = [ENDPOINT]) {
  const { add, findings } = recorder();
  const { get, asked } = fakeGet({ [ENDPOINT]: answer });
  await checkPostEndpoint(postUrls, PAGE, get, add);
  return { findings, asked };
}

const answer = (status: number, body: string | null, type?: string) =>
  new Response(body, { status, headers: type === undefined ? {} : { 'content-type': type } });

const json = (status: number, body: string) => answer(status, body, 'application/json');
/** The pass message and the warning, after the status and what came with it. */
const answers = (what: string) => `${ENDPOINT} answers POST (${what} to an empty body)`;
const answered = (what: string) => `${ENDPOINT} answered ${what} to an empty body`;

describe('checkPostEndpoint', () => {
  it('no endpoint named: no finding, nothing sent', async () => {
    expect(await endpoint(answer(200, ''), [])).toEqual({ findings: [], asked: [] });
  });

  it('sends "{}" as JSON from the page\'s origin, to the first URL only', async () => {
    const { asked } = await endpoint(answer(400, '{"error":{"code":"bad_request"}}', 'application/json'), [
      ENDPOINT,
      'https://shop.test/other',
    ]);
    expect(asked).toEqual([
      {
        url: ENDPOINT,
        init: { headers: { origin: 'https://shop.test', 'content-type': 'application/json' }, body: '{}' },
      },
    ]);
  });

  it('an endpoint on another origin is not sent anything: a warning', async () => {
    const { findings, asked } = await endpoint(answer(200, ''), ['https://api.other.test/risk']);
    expect(asked).toEqual([]);
    expect(findings).toEqual([
      expect.objectContaining({
        id: 'post_endpoint',
        status: 'warn',
        message: 'the page posts to https://api.other.test/risk, on another origin: not checked',
      }),
    ]);
  });

  it.each([
    ['a 4xx with a JSON code', json(400, '{"error":{"code":"bad_request"}}'), 'pass', answers('400 bad_request')],
    [
      'a 403 with another code',
      answer(403, '{"error":{"code" : "csrf-token"}}', 'application/problem+json'),
      'pass',
      answers('403 csrf-token'),
    ],
    ['a 499 with a code', json(499, '{"code":"x"}'), 'pass', answers('499 x')],
    [
      'a 404',
      json(404, '{"error":{"code":"not_found"}}'),
      'fail',
      `${ENDPOINT} answered 404 to a POST: no endpoint there`,
    ],
    ['a 405', answer(405, ''), 'fail', `${ENDPOINT} answered 405 to a POST: no endpoint there`],
    [
      'an HTML page',
      answer(200, '<html>', 'text/html; charset=utf-8'),
      'fail',
      `${ENDPOINT} answered HTML (200) to a POST: the site's fallback page, not the endpoint`,
    ],
    [
      'origin_not_allowed',
      json(403, '{"error":{"code":"origin_not_allowed"}}'),
      'fail',
      `${ENDPOINT} refuses this page's origin https://shop.test (403 origin_not_allowed)`,
    ],
    [
      'origin_not_allowed in another status than 403',
      json(400, '{"error":{"code":"origin_not_allowed"}}'),
      'pass',
      answers('400 origin_not_allowed'),
    ],
    [
      'a code in a body that is no JSON',
      answer(400, '{"code":"bad_request"}', 'text/plain'),
      'warn',
      answered('400 text/plain'),
    ],
    ['a 400 without a code', json(400, '{"error":"bad"}'), 'warn', answered('400 application/json')],
    ['a 500 with a code', json(500, '{"code":"internal"}'), 'warn', answered('500 application/json')],
    ['a 399 with a code', json(399, '{"code":"x"}'), 'warn', answered('399 application/json')],
    ['a 200 without a type', answer(200, null), 'warn', answered('200 without a content type')],
  ])('%s', async (_, response, status, message) => {
    const { findings } = await endpoint(response);
    expect(findings).toEqual([expect.objectContaining({ id: 'post_endpoint', status, message })]);
  });

  it('the fix for origin_not_allowed names the origin to allow', async () => {
    const { findings } = await endpoint(answer(403, '{"error":{"code":"origin_not_allowed"}}', 'application/json'));
    expect(findings[0]!.fix).toBe('add https://shop.test to allowedOrigins');
  });

  it('an endpoint that cannot be reached fails with the reason', async () => {
    const { findings } = await endpoint(new Error('connect ECONNREFUSED'));
    expect(findings).toEqual([
      expect.objectContaining({
        id: 'post_endpoint',
        status: 'fail',
        message: `${ENDPOINT} could not be reached (connect ECONNREFUSED)`,
      }),
    ]);
  });
});
