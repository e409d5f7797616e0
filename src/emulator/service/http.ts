/** Small HTTP helpers of the emulated service: JSON answers and problem bodies. */

export const json = (body: unknown, status = 200, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
  });

/** The service's error body (RFC 7807 shape, as its 429 answer: docs/vendor-contract.md#the-service). */
export const problem = (
  status: number,
  title: string,
  detail: string,
  headers: Record<string, string> = {},
): Response =>
  new Response(JSON.stringify({ title, status, detail }), {
    status,
    headers: { 'content-type': 'application/problem+json', 'cache-control': 'no-store', ...headers },
  });

export const TOO_MANY_REQUESTS = (retryAfterSeconds: number): Response =>
  problem(429, 'Too Many Requests', 'Request limit exceeded', { 'retry-after': String(retryAfterSeconds) });

/** The bearer token of a request, or undefined. */
export function bearer(request: Request): string | undefined {
  // Stryker disable next-line StringLiteral: a missing header matches no more as any other text than as ''
  const match = /^Bearer ([^\s]+)$/i.exec(request.headers.get('authorization') ?? '');
  return match?.[1];
}

/**
 * docs/vendor-contract.md#the-service: every call wants a User-Agent that names the integrator's
 * company and app ("YourCompany YourApp/v1.0"). Missing: 400. A bare library
 * default (node, undici, curl, python-requests, axios, Go): 403.
 */
export function checkUserAgent(request: Request): Response | undefined {
  const agent = request.headers.get('user-agent')?.trim();
  if (!agent) return problem(400, 'Bad Request', 'A User-Agent naming your company and application is required');
  if (
    /^(node|undici|curl|wget|python-requests|python-urllib|axios|go-http-client|java|okhttp|node-fetch)\b/i.test(agent)
  ) {
    return problem(
      403,
      'Forbidden',
      'Suspicious User-Agent: name your company and application, e.g. "YourCompany YourApp/v1.0"',
    );
  }
  return undefined;
}

/** A JSON body, or a 400 answer explaining why there is none. */
export async function readJson(request: Request, maxBytes: number): Promise<{ body: unknown } | { error: Response }> {
  const contentType = checkContentType(request);
  if (contentType) return { error: contentType };
  // Counted in bytes, as the answer says: a character of UTF-8 can take up to four.
  const bytes = await request.arrayBuffer();
  if (bytes.byteLength > maxBytes) return { error: problem(400, 'Bad Request', `Body larger than ${maxBytes} bytes`) };
  try {
    return { body: JSON.parse(new TextDecoder().decode(bytes)) as unknown };
  } catch {
    return { error: problem(400, 'Bad Request', 'Body is not valid JSON') };
  }
}

/**
 * docs/vendor-contract.md#every-call: `Content-Type: application/json` is required on every API
 * call, a body or none (finalize, the reads); the service answers a missing or wrong one 400.
 */
export function checkContentType(request: Request): Response | undefined {
  // Stryker disable next-line StringLiteral: a missing header matches no more as any other text than as ''
  if (/^application\/json\s*(;|$)/i.test(request.headers.get('content-type') ?? '')) return undefined;
  return problem(400, 'Bad Request', 'Content-Type must be application/json');
}
