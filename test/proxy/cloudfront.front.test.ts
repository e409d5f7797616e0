// The shipped CloudFront recipe (proxy/cloudfront/origin-request.mjs, a Lambda@Edge
// origin-request function) on Node, called with the event CloudFront documents for
// origin-request (the behavior's custom origin: the collector) by a stand-in for CloudFront
// that turns each HTTP request into that event and the function's result into the answer.
// What is not CloudFront's own here: its path normalisation, its cache and request policies,
// its size limits and the Lambda@Edge sandbox.
import type { IncomingMessage } from 'node:http';
import { pathToFileURL } from 'node:url';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { frontConformance } from '../support/front-conformance.js';
import { listening, recipe, type RunningFront } from '../support/fronts.js';

interface CloudFrontResult {
  status: string;
  headers: Record<string, Array<{ key: string; value: string }>>;
  body?: string;
  bodyEncoding?: 'text' | 'base64';
}
type Handler = (event: unknown) => Promise<CloudFrontResult>;

/** The origin-request event for a viewer's request, as CloudFront's documentation shows it. */
function originRequestEvent(req: IncomingMessage, collector: URL) {
  const headers: Record<string, Array<{ key: string; value: string }>> = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const key = req.rawHeaders[i]!;
    (headers[key.toLowerCase()] ??= []).push({ key, value: req.rawHeaders[i + 1]! });
  }
  const [uri, ...query] = req.url!.split('?');
  return {
    Records: [
      {
        cf: {
          config: {
            distributionDomainName: 'd111111abcdef8.cloudfront.net',
            distributionId: 'EDFDVBD6EXAMPLE',
            eventType: 'origin-request',
            requestId: '4TyzHTaYWb1GX1qTfsHhEqV6HUDd_BzoBZnwfnvQc_1oF26ClkoUSEQ==',
          },
          request: {
            clientIp: req.socket.remoteAddress,
            headers,
            method: req.method,
            querystring: query.join('?'),
            uri,
            origin: {
              custom: {
                customHeaders: {},
                domainName: collector.hostname,
                keepaliveTimeout: 5,
                path: collector.pathname.replace(/\/$/, ''),
                port: Number(collector.port),
                protocol: collector.protocol.replace(':', ''),
                readTimeout: 30,
                sslProtocols: ['TLSv1.2'],
              },
            },
          },
        },
      },
    ],
  };
}

const loadHandler = async () =>
  ((await import(pathToFileURL(recipe('cloudfront/origin-request.mjs')).href)) as { handler: Handler }).handler;

async function startCloudFront(collectorUrl: string): Promise<RunningFront> {
  const handler = await loadHandler();
  const collector = new URL(collectorUrl);
  return listening((req, res) => {
    handler(originRequestEvent(req, collector)).then(
      (result) => {
        const lines = Object.values(result.headers).flatMap((values) =>
          values.flatMap(({ key, value }) => [key, value]),
        );
        res.writeHead(Number(result.status), lines);
        res.end(Buffer.from(result.body ?? '', result.bodyEncoding === 'base64' ? 'base64' : 'utf8'));
      },
      () => res.writeHead(502).end(), // CloudFront's answer to a function that throws
    );
  });
}

frontConformance('CloudFront with proxy/cloudfront/origin-request.mjs (Lambda@Edge, on Node)', startCloudFront, {
  vendorCookies: 'namespaced',
  hostilePaths: 'refused',
});

describe('the CloudFront recipe refuses what it cannot answer', () => {
  let big: Server;
  let bigUrl: string;
  beforeAll(async () => {
    // A collector whose script is over Lambda@Edge's 1 MB for a generated response.
    big = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/javascript' }).end('x'.repeat(800_000)),
    );
    await new Promise<void>((resolve) => big.listen(0, '127.0.0.1', resolve));
    bigUrl = `http://127.0.0.1:${(big.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => big.close(resolve)));

  const event = (origin: unknown, host = 'shop.test') => ({
    Records: [
      {
        cf: {
          request: {
            clientIp: '203.0.113.9',
            headers: { host: [{ key: 'Host', value: host }] },
            method: 'GET',
            querystring: '',
            uri: '/iojs/general5/static_wdp.js',
            origin,
          },
        },
      },
    ],
  });
  const custom = (url: string) => ({
    custom: { domainName: new URL(url).hostname, port: Number(new URL(url).port), protocol: 'http', path: '' },
  });
  const codeOf = (result: CloudFrontResult) => (JSON.parse(result.body!) as { error: { code: string } }).error.code;

  it('an S3 origin (no custom origin to call): 502 no_collector_origin', async () => {
    const result = await (await loadHandler())(event({ s3: { domainName: 'bucket.s3.amazonaws.com' } }));
    expect([result.status, codeOf(result)]).toEqual(['502', 'no_collector_origin']);
  });

  it('a Host no URL can hold: 400 bad_host', async () => {
    const result = await (await loadHandler())(event(custom(bigUrl), 'a b'));
    expect([result.status, codeOf(result)]).toEqual(['400', 'bad_host']);
  });

  it('an answer over 1 MB once encoded: 502 too_large_for_lambda_edge', async () => {
    const result = await (await loadHandler())(event(custom(bigUrl)));
    expect([result.status, codeOf(result)]).toEqual(['502', 'too_large_for_lambda_edge']);
  });
});
