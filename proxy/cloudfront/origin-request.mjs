// blackbox-capture: the first-party front as a Lambda@Edge origin-request function (Node.js
// 22). Bundle it with its dependency (`esbuild origin-request.mjs --bundle --platform=node
// --format=esm --outfile=index.mjs`) and attach it to a cache behavior `/iojs/*` whose origin
// is the collector: first.iovation.com (the sandbox: ci-first.iovation.com), HTTPS only. That
// origin is the upstream: Lambda@Edge has no environment variables, and the event names the
// behavior's origin. Use the managed policies CachingDisabled and AllViewerExceptHostHeader so
// that the function sees the browser's headers and cookies (it forwards only the vendor's).
//
// The function answers every request itself (a generated response: at most 1 MB with its
// headers, docs/proxy.md): CloudFront never forwards the browser's request to the collector.
import { createFirstPartyProxy } from 'blackbox-capture/server';

const PREFIX = '/iojs';
/** Lambda@Edge's limit on a response generated at origin-request, headers included. */
const MAX_GENERATED_BYTES = 1_000_000;
/** One proxy per origin of the distribution: as many as it has origins (CloudFront allows 25 by default). */
const proxies = new Map();

/** The behavior's custom origin as a URL: the collector. */
function collectorOf(origin) {
  const custom = origin?.custom;
  if (!custom?.domainName) return undefined;
  const scheme = custom.protocol === 'http' ? 'http' : 'https';
  const port = custom.port && custom.port !== (scheme === 'https' ? 443 : 80) ? `:${custom.port}` : '';
  return `${scheme}://${custom.domainName}${port}${custom.path ?? ''}/`;
}

const refusal = (status, code) => ({
  status: String(status),
  headers: {
    'content-type': [{ key: 'Content-Type', value: 'application/json' }],
    'cache-control': [{ key: 'Cache-Control', value: 'no-store' }],
  },
  body: JSON.stringify({ error: { code } }),
});

export async function handler(event) {
  const request = event.Records[0].cf.request;
  const collectorUrl = collectorOf(request.origin);
  if (!collectorUrl) return refusal(502, 'no_collector_origin');
  let iojs = proxies.get(collectorUrl);
  if (!iojs) proxies.set(collectorUrl, (iojs = createFirstPartyProxy({ prefix: PREFIX, collectorUrl })));

  const headers = new Headers();
  for (const [name, values] of Object.entries(request.headers)) {
    for (const { value } of values) headers.append(name, value);
  }
  const query = request.querystring ? `?${request.querystring}` : '';
  let incoming;
  try {
    incoming = new Request(`https://${headers.get('host')}${request.uri}${query}`, { method: request.method, headers });
  } catch {
    return refusal(400, 'bad_host'); // a Host no URL can hold
  }
  const answer = await iojs(incoming, { clientAddress: request.clientIp });

  const body = Buffer.from(await answer.arrayBuffer()).toString('base64');
  const out = {};
  for (const [name, value] of answer.headers) {
    if (name !== 'set-cookie') out[name] = [{ key: name, value }];
  }
  const cookies = answer.headers.getSetCookie();
  if (cookies.length) out['set-cookie'] = cookies.map((value) => ({ key: 'Set-Cookie', value }));
  if (body.length + JSON.stringify(out).length > MAX_GENERATED_BYTES) return refusal(502, 'too_large_for_lambda_edge');
  return { status: String(answer.status), headers: out, body, bodyEncoding: 'base64' };
}
