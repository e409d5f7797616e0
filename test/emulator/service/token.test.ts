// The emulated token endpoint (src/emulator/service/token.ts): client credentials with HTTP
// Basic as docs/vendor-contract.md#the-service describes them, each refusal's OAuth error body,
// and the parts of the request it reads strictly.
import { describe, expect, it } from 'vitest';
import { oauth, setup } from '../../support/emulated-service.js';

const answer = async (response: Response) => [response.status, await response.json()];
const oauthError = (status: number, error: string, description: string) => [
  status,
  { error, error_description: description },
];

describe('the token endpoint', () => {
  it('another path is 404', async () => {
    const { tokenRequest } = setup();
    expect(await answer(await tokenRequest({}, undefined, 'POST', '/oauth2/token/x'))).toEqual([
      404,
      { title: 'Not Found', status: 404, detail: 'Unknown path' },
    ]);
  });

  it('each refusal says why in the OAuth error body', async () => {
    const { tokenRequest, basic } = setup();
    expect(await answer(await tokenRequest({}, undefined, 'GET'))).toEqual(
      oauthError(400, 'invalid_request', 'Use POST'),
    );
    expect(await answer(await tokenRequest({ accept: 'text/html' }))).toEqual(
      oauthError(400, 'invalid_request', 'Accept: application/json is required'),
    );
    expect(await answer(await tokenRequest({ 'content-type': 'application/json' }))).toEqual(
      oauthError(400, 'invalid_request', 'The body must be application/x-www-form-urlencoded'),
    );
    expect(await answer(await tokenRequest({ authorization: `Bearer x` }))).toEqual(
      oauthError(400, 'invalid_request', 'HTTP Basic client authentication is required'),
    );
    expect(await answer(await tokenRequest({}, 'grant_type=password'))).toEqual(
      oauthError(400, 'unsupported_grant_type', 'grant_type must be client_credentials'),
    );
    const wrong = await tokenRequest({ authorization: basic('client-1', 'nope') });
    expect(wrong.headers.get('www-authenticate')).toBe('Basic realm="oauth2"');
    expect(await answer(wrong)).toEqual(oauthError(401, 'invalid_client', 'Client authentication failed'));
  });

  it('the form type must lead the Content-Type, and the Basic credentials be the whole Authorization', async () => {
    const { tokenRequest, basic } = setup();
    expect(
      await oauth(await tokenRequest({ 'content-type': 'text/plain; x=application/x-www-form-urlencoded' })),
    ).toEqual([400, 'invalid_request']);
    expect(await oauth(await tokenRequest({ authorization: `${basic()} extra` }))).toEqual([400, 'invalid_request']);
    expect(await oauth(await tokenRequest({ authorization: `X${basic()}` }))).toEqual([400, 'invalid_request']);
    expect((await tokenRequest({ 'content-type': 'Application/X-WWW-Form-Urlencoded; charset=utf-8' })).status).toBe(
      200,
    );
  });

  it('a client secret with colons in it: everything after the first colon is the secret (RFC 7617)', async () => {
    const { tokenRequest, basic } = setup({ clientSecret: 'se:cr:et' });
    expect((await tokenRequest({ authorization: basic('client-1', 'se:cr:et') })).status).toBe(200);
    expect((await tokenRequest({ authorization: basic('client-1', 'secret') })).status).toBe(401);
  });
});
