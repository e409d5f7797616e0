// The doctor on each way the README integrates, served by Express 5 with the server kit: the
// <blackbox-capture> element, the script tag's data attributes, and a page whose bundle
// imports the package (--loader-url); the endpoint the page posts to; and the README's own
// warning, a proxy mounted with app.use('/iojs', …), named as the cause it is.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runDoctor, type DoctorReport, type Finding } from '../../src/doctor/doctor.js';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { createDeviceRiskHandler, createFirstPartyProxy, toNodeHandler } from '../../src/server/index.js';
import { stubClient } from '../support/stub-client.js';

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator();
});
afterAll(async () => emulator.close());
const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

interface SiteOptions {
  /** The checkout page's <body>; `{{LOADER}}` is the emulator's loader URL. */
  body: string;
  /** How the proxy is mounted: on the full path (right) or with app.use (strips the prefix). */
  mount?: 'all' | 'use';
  /** The endpoint's allowed origins; `'self'` for the site's own; none: no endpoint. */
  endpointOrigins?: string[] | 'self';
  /** Another answer at /device-risk instead of the endpoint. */
  endpointAnswer?: 'html' | 'down' | 'reset' | '405' | '500' | 'other-403' | 'no-code';
}

/** The shop: Express 5, the kit's proxy and endpoint, and the page. */
async function site(options: SiteOptions): Promise<{ origin: string; requests: string[]; calls: string[] }> {
  const app = express();
  const requests: string[] = [];
  const calls: string[] = [];
  app.use((req, _res, next) => {
    requests.push(`${req.method} ${req.url}`);
    next();
  });
  const iojs = toNodeHandler(createFirstPartyProxy({ prefix: '/iojs', collectorUrl: emulator.collectorUrl }));
  if (options.mount === 'use') app.use('/iojs', iojs);
  else app.all('/iojs/*splat', iojs);
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  servers.push(server);
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  if (options.endpointAnswer === 'html')
    app.post('/device-risk', (_req, res) => void res.type('html').send('<!doctype html><p>shop</p>'));
  if (options.endpointAnswer === 'down')
    app.post('/device-risk', (_req, res) => void res.status(503).json({ error: { code: 'store_unavailable' } }));
  if (options.endpointAnswer === 'reset') app.post('/device-risk', (req) => void req.socket.destroy());
  const answers = {
    '405': [405, { error: { code: 'method_not_allowed' } }],
    '500': [500, { error: { code: 'internal_error' } }],
    'other-403': [403, { error: { code: 'csrf_token_missing' } }],
    'no-code': [400, { message: 'bad' }],
  } as const;
  const fixed = answers[options.endpointAnswer as keyof typeof answers];
  if (fixed) app.post('/device-risk', (_req, res) => void res.status(fixed[0]).json(fixed[1]));
  if (options.endpointOrigins) {
    const stub = stubClient();
    const client = stub.client;
    const record = () => calls.push(...stub.calls.splice(0));
    const endpoint = createDeviceRiskHandler({
      answer: 'checked',
      client,
      allowedOrigins: options.endpointOrigins === 'self' ? [origin] : options.endpointOrigins,
      workflowKey: 'k',
      resolveCustomer: () => {
        calls.push('customer');
        return { customerInternalReference: 'order-1' };
      },
    });
    app.post('/device-risk', (req, res) => {
      toNodeHandler(endpoint)(req, res);
      res.once('finish', record);
    });
  }
  app.get('/checkout', (_req, res) => {
    res
      .type('html')
      .send(`<!doctype html><html><body>${options.body.replaceAll('{{LOADER}}', emulator.loaderUrl)}</body></html>`);
  });
  return { origin, requests, calls };
}

const check = (origin: string, extra: Parameters<typeof runDoctor>[1] = {}) =>
  runDoctor(`${origin}/checkout`, { thirdPartyHost: emulator.thirdPartyUrl, ...extra });
const finding = (report: DoctorReport, id: Finding['id']) => report.findings.find((f) => f.id === id)!;

describe('the doctor reads every way the README integrates', () => {
  it('<blackbox-capture loader-url>: its loader is checked, one run counted', async () => {
    const { origin } = await site({
      body: '<form><blackbox-capture name="blackbox" loader-url="{{LOADER}}"></blackbox-capture></form>',
    });
    const report = await check(origin);
    expect(finding(report, 'loader_script')).toMatchObject({
      status: 'pass',
      message: `${emulator.loaderUrl} answered JavaScript`,
    });
    expect(finding(report, 'loader_tag_once').status).toBe('pass');
    expect(report.ok).toBe(true);
  });

  it('<blackbox-capture> with a wrong loader-url fails, exit 1', async () => {
    const { origin } = await site({ body: '<blackbox-capture loader-url="/nope/loader.js"></blackbox-capture>' });
    const report = await check(origin);
    expect(finding(report, 'loader_script')).toMatchObject({
      status: 'fail',
      message: `${origin}/nope/loader.js answered 404 text/html; charset=utf-8`,
    });
    expect(report.ok).toBe(false);
  });

  it('<blackbox-capture inject="false"> beside the page\'s own loader tag is one run; without it, two', async () => {
    const adopt = await site({
      body: '<blackbox-capture loader-url="{{LOADER}}" inject="false"></blackbox-capture><script src="{{LOADER}}"></script>',
    });
    expect(finding(await check(adopt.origin), 'loader_tag_once').status).toBe('pass');
    const twice = await site({
      body: '<blackbox-capture loader-url="{{LOADER}}"></blackbox-capture><script src="{{LOADER}}"></script>',
    });
    expect(finding(await check(twice.origin), 'loader_tag_once')).toMatchObject({
      status: 'fail',
      message: expect.stringContaining('2 times'),
    });
  });

  it('the script tag with data-inject="false" beside the page\'s own loader tag is one run', async () => {
    const { origin } = await site({
      body: '<script src="/umd.js" data-loader-url="{{LOADER}}" data-inject="false"></script><script src="{{LOADER}}"></script>',
    });
    expect(finding(await check(origin), 'loader_tag_once').status).toBe('pass');
  });

  it('a bundle that imports the package: --loader-url is checked, and the warning asks for nothing already given', async () => {
    const { origin } = await site({ body: '<script type="module" src="/assets/app.js"></script>' });
    const report = await check(origin, { loaderUrl: emulator.loaderUrl });
    expect(finding(report, 'loader_script').status).toBe('pass');
    expect(finding(report, 'loader_tag_once').fix).not.toContain('give --loader-url');
    expect(finding(await check(origin), 'loader_tag_once').fix).toContain('give --loader-url');
  });

  it('the CSP fix names the loader origin it knows', async () => {
    const { origin } = await site({
      body: `<meta http-equiv="Content-Security-Policy" content="script-src 'self'"><blackbox-capture loader-url="{{LOADER}}"></blackbox-capture>`,
    });
    const csp = finding(await check(origin), 'csp');
    expect(csp.status).toBe('fail');
    expect(csp.fix).toContain(`script-src 'self' ${new URL(emulator.loaderUrl).origin} `);
    expect(csp.fix).not.toContain('<loader origin>');
  });
});

describe('the endpoint the page posts to', () => {
  it.each([
    [
      'post-url on the element',
      '<blackbox-capture loader-url="{{LOADER}}" post-url="/device-risk"></blackbox-capture>',
    ],
    [
      'data-post-url on the script tag',
      '<script src="/umd.js" data-loader-url="{{LOADER}}" data-post-url="/device-risk"></script>',
    ],
  ])('%s: answering, it passes; nothing reaches the customer look-up or the service', async (_, body) => {
    const shop = await site({ body, endpointOrigins: 'self' });
    const report = await check(shop.origin);
    expect(finding(report, 'post_endpoint')).toMatchObject({
      status: 'pass',
      message: `${shop.origin}/device-risk answers POST (400 invalid_blackbox to an empty body)`,
    });
    expect(shop.requests.filter((r) => r.startsWith('POST'))).toEqual(['POST /device-risk']);
    // The doctor's empty body reaches neither the customer look-up nor the service.
    expect(shop.calls).toEqual([]);
  });

  it('no endpoint there (404): a fail naming how to mount it, exit 1', async () => {
    const shop = await site({
      body: '<blackbox-capture loader-url="{{LOADER}}" post-url="/device-risk"></blackbox-capture>',
    });
    const report = await check(shop.origin);
    expect(finding(report, 'post_endpoint')).toMatchObject({
      status: 'fail',
      message: `${shop.origin}/device-risk answered 404 to a POST: no endpoint there`,
      fix: expect.stringContaining('app.post(path, toNodeHandler(deviceRisk))'),
    });
    expect(report.ok).toBe(false);
  });

  it("an endpoint that refuses the page's origin: a fail naming the origin to allow", async () => {
    const shop = await site({
      body: '<blackbox-capture loader-url="{{LOADER}}" post-url="/device-risk"></blackbox-capture>',
      endpointOrigins: ['https://elsewhere.example'],
    });
    expect(finding(await check(shop.origin), 'post_endpoint')).toMatchObject({
      status: 'fail',
      fix: `add ${shop.origin} to allowedOrigins`,
    });
  });

  it.each([
    ['the fallback page (HTML)', 'html', 'fail', /answered HTML \(200\) to a POST/, /before the fallback page/],
    ['a 503', 'down', 'warn', /answered 503 application\/json/, /createDeviceRiskHandler answers/],
    ['a dropped connection', 'reset', 'fail', /could not be reached/, /check the endpoint URL/],
    ['a 405', '405', 'fail', /answered 405 to a POST: no endpoint there/, /app\.post/],
    ['a 500 with a code', '500', 'warn', /answered 500 application\/json/, /createDeviceRiskHandler answers/],
    ['JSON without a code', 'no-code', 'warn', /answered 400 application\/json/, /createDeviceRiskHandler answers/],
  ] as const)('%s at the endpoint: %s, with its fix', async (_, endpointAnswer, status, message, fix) => {
    const shop = await site({
      body: '<blackbox-capture loader-url="{{LOADER}}" post-url="/device-risk"></blackbox-capture>',
      endpointAnswer,
    });
    const report = await check(shop.origin);
    expect(finding(report, 'post_endpoint'), endpointAnswer).toMatchObject({
      status,
      message: expect.stringMatching(message),
      fix: expect.stringMatching(fix),
    });
    expect(report.ok).toBe(status !== 'fail');
  });

  it("a 403 with another code than origin_not_allowed is the endpoint's own answer: a pass", async () => {
    const shop = await site({
      body: '<blackbox-capture loader-url="{{LOADER}}" post-url="/device-risk"></blackbox-capture>',
      endpointAnswer: 'other-403',
    });
    expect(finding(await check(shop.origin), 'post_endpoint')).toMatchObject({
      status: 'pass',
      message: expect.stringContaining('403 csrf_token_missing'),
    });
  });

  it('an endpoint on another origin is not sent anything: a warning', async () => {
    const other = await site({ body: '', endpointOrigins: 'self' });
    const shop = await site({
      body: `<blackbox-capture loader-url="{{LOADER}}" post-url="${other.origin}/device-risk"></blackbox-capture>`,
    });
    expect(finding(await check(shop.origin), 'post_endpoint').status).toBe('warn');
    expect(other.requests).toEqual([]);
  });
});

describe("the README's warning: a proxy mounted with app.use('/iojs', …)", () => {
  it('is named as the cause: the prefix stripped before the proxy sees it', async () => {
    const shop = await site({ body: '<blackbox-capture loader-url="{{LOADER}}"></blackbox-capture>', mount: 'use' });
    const report = await check(shop.origin);
    for (const id of ['static_script', 'dyn_script'] as const) {
      expect(finding(report, id).status).toBe('fail');
      expect(finding(report, id).fix).toContain("app.all('/iojs/*splat', toNodeHandler(iojs))");
      expect(finding(report, id).fix).not.toContain('proxy_pass with a trailing slash');
    }
    const right = await site({ body: '<blackbox-capture loader-url="{{LOADER}}"></blackbox-capture>' });
    expect(finding(await check(right.origin), 'static_script').status).toBe('pass');
  });
});
