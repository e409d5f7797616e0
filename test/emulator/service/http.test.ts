// The emulated service's HTTP helpers (src/emulator/service/http.ts): its JSON and problem
// answers, the bearer token, the User-Agent rule of docs/vendor-contract.md#the-service, and
// the bounded JSON body every operation reads.
import { describe, expect, it } from 'vitest';
import {
  bearer,
  checkUserAgent,
  json,
  problem,
  readJson,
  TOO_MANY_REQUESTS,
} from '../../../src/emulator/service/http.js';

const withHeaders = (headers: Record<string, string>, body?: BodyInit) =>
  new Request('https://api.test/x', {
    method: body === undefined ? 'GET' : 'POST',
    headers,
    ...(body === undefined ? {} : { body }),
  });

describe('answers', () => {
  it('json: the body, 200 by default, never cached; headers added', async () => {
    const answer = json({ a: 1 });
    expect([answer.status, answer.headers.get('content-type'), answer.headers.get('cache-control')]).toEqual([
      200,
      'application/json',
      'no-store',
    ]);
    expect(await answer.json()).toEqual({ a: 1 });
    expect(json({}, 201, { 'x-extra': '1' }).headers.get('x-extra')).toBe('1');
    expect(json({}, 201).status).toBe(201);
  });

  it('problem: the RFC 7807 body, never cached; headers added', async () => {
    const answer = problem(405, 'Method Not Allowed', 'Use PUT', { allow: 'PUT' });
    expect(answer.status).toBe(405);
    expect(Object.fromEntries(answer.headers)).toEqual({
      allow: 'PUT',
      'cache-control': 'no-store',
      'content-type': 'application/problem+json',
    });
    expect(await answer.json()).toEqual({ title: 'Method Not Allowed', status: 405, detail: 'Use PUT' });
  });

  it('429: the documented body with Retry-After (docs/vendor-contract.md#the-service)', async () => {
    const answer = TOO_MANY_REQUESTS(2);
    expect([answer.status, answer.headers.get('retry-after')]).toEqual([429, '2']);
    expect(await answer.json()).toEqual({ title: 'Too Many Requests', status: 429, detail: 'Request limit exceeded' });
  });
});

describe('bearer', () => {
  it.each([
    ['Bearer abc.DEF-_~+/=', 'abc.DEF-_~+/='],
    ['bearer abc', 'abc'],
    ['Bearer abc def', undefined],
    ['Basic abc', undefined],
    ['XBearer abc', undefined],
    ['Bearer ', undefined],
  ])('%j: %j', (authorization, token) => {
    expect(bearer(withHeaders({ authorization }))).toBe(token);
  });

  it('no Authorization: none', () => {
    expect(bearer(withHeaders({}))).toBeUndefined();
  });
});

describe('checkUserAgent (docs/vendor-contract.md#the-service: every call names the caller)', () => {
  it('a name of the company and the application passes, whatever library it mentions after', () => {
    for (const agent of [
      'AcmeShop Checkout/1.0',
      'AcmeShop Checkout/1.0 (node/22; curl-compatible)',
      'Nodes Inc App/2',
    ])
      expect(checkUserAgent(withHeaders({ 'user-agent': agent })), agent).toBeUndefined();
  });

  it('missing or blank: 400, saying what to send', async () => {
    for (const headers of [{}, { 'user-agent': '' }, { 'user-agent': '\u00a0' }] as Array<Record<string, string>>) {
      const answer = checkUserAgent(withHeaders(headers));
      expect(await answer?.json()).toEqual({
        title: 'Bad Request',
        status: 400,
        detail: 'A User-Agent naming your company and application is required',
      });
    }
  });

  it("a library's default: 403, asking for a name", async () => {
    for (const agent of [
      'node',
      'undici',
      'curl/8.5.0',
      'Wget/1.21',
      'python-requests/2.31',
      'Python-urllib/3.12',
      'axios/1.6',
      'Go-http-client/1.1',
      'Java/17',
      'okhttp/4.12',
      'node-fetch/1.0',
    ]) {
      const answer = checkUserAgent(withHeaders({ 'user-agent': agent }));
      expect(answer?.status, agent).toBe(403);
      expect(await answer!.json()).toEqual({
        title: 'Forbidden',
        status: 403,
        detail: 'Suspicious User-Agent: name your company and application, e.g. "YourCompany YourApp/v1.0"',
      });
    }
  });
});

describe('readJson', () => {
  const body = (text: string, type = 'application/json; charset=utf-8') => withHeaders({ 'content-type': type }, text);
  const refusal = async (read: { error: Response } | { body: unknown }) => {
    expect(read).toHaveProperty('error');
    const answer = (read as { error: Response }).error;
    return [answer.status, ((await answer.json()) as { detail: string }).detail];
  };

  it('a JSON body up to the limit is read', async () => {
    expect(await readJson(body('{"a":[1]}'), 9)).toEqual({ body: { a: [1] } });
    expect(await readJson(body('null', 'APPLICATION/JSON'), 4)).toEqual({ body: null });
  });

  it('another Content-Type, or none, is refused with a problem body', async () => {
    const read = await readJson(body('{}', 'text/plain'), 10);
    expect(await (read as { error: Response }).error.json()).toEqual({
      title: 'Bad Request',
      status: 400,
      detail: 'Content-Type must be application/json',
    });
    expect(await refusal(await readJson(body('{}', 'text/plain'), 10))).toEqual([
      400,
      'Content-Type must be application/json',
    ]);
    expect(await refusal(await readJson(body('{}', 'text/x-application/json'), 10))).toEqual([
      400,
      'Content-Type must be application/json',
    ]);
    expect(await refusal(await readJson(withHeaders({}, new Uint8Array([123, 125])), 10))).toEqual([
      400,
      'Content-Type must be application/json',
    ]);
  });

  it('a body over the limit is refused, counted in bytes', async () => {
    expect(await refusal(await readJson(body('{"a":[1] }'), 9))).toEqual([400, 'Body larger than 9 bytes']);
    // Five characters, ten bytes in UTF-8.
    expect(await refusal(await readJson(body('"éééé"'), 9))).toEqual([400, 'Body larger than 9 bytes']);
    expect(await readJson(body('"éééé"'), 10)).toEqual({ body: 'éééé' });
  });

  it('a body that is no JSON is refused', async () => {
    expect(await refusal(await readJson(body('{x'), 10))).toEqual([400, 'Body is not valid JSON']);
  });
});
