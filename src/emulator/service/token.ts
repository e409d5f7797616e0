/**
 * The emulated token endpoint, `POST /oauth2/token`: client credentials with HTTP Basic, at
 * most `tokenRequestsPerSecond` a second (docs/vendor-contract.md#the-service: 10), then 429.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { checkUserAgent, json, problem, TOO_MANY_REQUESTS } from './http.js';
import { slidingWindow, type ServiceState } from './state.js';

export function createTokenEndpoint(state: ServiceState) {
  const { options, accessTokens } = state;
  const tokenWindow = slidingWindow(options.tokenRequestsPerSecond, options.now);

  // ---- POST /oauth2/token ---------------------------------------------------------------
  async function token(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname !== '/oauth2/token') return problem(404, 'Not Found', 'Unknown path');
    const now = options.now();
    if (!tokenWindow.take()) return TOO_MANY_REQUESTS(1);

    const oauthError = (status: number, error: string, description: string) =>
      json({ error, error_description: description }, status);
    if (request.method !== 'POST') return oauthError(400, 'invalid_request', 'Use POST');
    const agent = checkUserAgent(request);
    if (agent) return agent;
    // Stryker disable next-line StringLiteral: a missing header matches no more as any other text than as ''
    if (!/\bapplication\/json\b/i.test(request.headers.get('accept') ?? '')) {
      return oauthError(400, 'invalid_request', 'Accept: application/json is required');
    }
    // Stryker disable next-line StringLiteral: a missing header matches no more as any other text than as ''
    if (!/^application\/x-www-form-urlencoded\b/i.test(request.headers.get('content-type') ?? '')) {
      return oauthError(400, 'invalid_request', 'The body must be application/x-www-form-urlencoded');
    }
    // Stryker disable next-line StringLiteral: a missing header matches no more as any other text than as ''
    const basic = /^Basic ([A-Za-z0-9+/]+=*)$/.exec(request.headers.get('authorization') ?? '');
    if (!basic) return oauthError(400, 'invalid_request', 'HTTP Basic client authentication is required');
    // Stryker disable next-line StringLiteral: split() always gives a first part; the default only types it
    const [rawId = '', ...rest] = Buffer.from(basic[1]!, 'base64').toString('utf8').split(':');
    // RFC 6749 2.3.1: both parts are form-encoded before Basic encoding.
    const formDecode = (value: string) => {
      try {
        return decodeURIComponent(value.replace(/\+/g, ' '));
      } catch {
        return value;
      }
    };
    const id = formDecode(rawId);
    const secret = formDecode(rest.join(':'));
    const form = new URLSearchParams(await request.text());
    if (form.get('grant_type') !== 'client_credentials') {
      return oauthError(400, 'unsupported_grant_type', 'grant_type must be client_credentials');
    }
    const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
    if (!same(id, options.clientId) || !same(secret, options.clientSecret)) {
      return json({ error: 'invalid_client', error_description: 'Client authentication failed' }, 401, {
        'www-authenticate': 'Basic realm="oauth2"',
      });
    }
    const accessToken = randomBytes(32).toString('base64url');
    accessTokens.set(accessToken, now + options.accessTokenLifetimeSeconds * 1000);
    return json({ access_token: accessToken, expires_in: options.accessTokenLifetimeSeconds, token_type: 'Bearer' });
  }

  return token;
}
