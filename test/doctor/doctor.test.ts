// The integration doctor against the demo site, healthy and broken on purpose one way per
// check, and against the shipped nginx configuration (the CLI: test/package/doctor.test.ts).
import { describe, expect, it } from 'vitest';
import { formatReport, runDoctor, type Finding } from '../../src/doctor/doctor.js';
import { statusOf, useDemo } from '../support/doctor-demo.js';
import { startEmulator } from '../../src/emulator/index.js';
// @ts-expect-error: a plain ES module script without types
import { nginxAvailable, startNginx } from '../support/nginx.mjs';

const site = useDemo();
const collectorUrl = site.collectorUrl;

describe('runDoctor', () => {
  it('the healthy demo checkout passes every check', async () => {
    const report = await runDoctor(`${site.demo.url}/checkout`, {
      collectorUrl: collectorUrl(),
      thirdPartyHost: site.demo.emulator!.thirdPartyUrl,
    });
    expect(report.findings.filter((f) => f.status !== 'pass')).toEqual([]);
    expect(report.findings.map((f) => f.id).sort()).toEqual([
      'csp',
      'dyn_not_cached',
      'dyn_script',
      'leak_address',
      'leak_auth',
      'leak_cookies',
      'leak_host',
      'loader_script',
      'loader_tag_once',
      'page',
      'refuses_hostile_paths',
      'refuses_post',
      'set_cookie',
      'static_script',
    ]);
    expect(report.ok).toBe(true);
  });

  it.each([
    [
      'the prefix not stripped (404)',
      '/checkout',
      { prefix: '/broken-404/iojs' },
      ['static_script', 'dyn_script'],
      'fail',
      /strip/,
    ],
    [
      "the proxy missing: the site's fallback answers HTML",
      '/checkout',
      { prefix: '/broken-html/iojs' },
      ['static_script', 'dyn_script'],
      'fail',
      /fallback/,
    ],
    [
      'dyn_wdp.js served by a cache',
      '/checkout',
      { prefix: '/broken-cache/iojs' },
      ['dyn_not_cached'],
      'fail',
      /no-store/,
    ],
    [
      'cookies dropped by the proxy',
      '/checkout',
      { prefix: '/broken-cookie/iojs' },
      ['set_cookie'],
      'warn',
      /Set-Cookie/,
    ],
    [
      'a CSP without the loader, this origin or the vendor host',
      '/checkout?doctor=csp',
      {},
      ['csp'],
      'fail',
      /script-src/,
    ],
    ['a loader URL that is no script', '/checkout?doctor=bad-loader', {}, ['loader_script'], 'fail', /loaderUrl/],
    ['a second loader tag', '/checkout?doctor=double-tag', {}, ['loader_tag_once'], 'fail', /keep one/],
  ] as Array<[string, string, object, Finding['id'][], 'fail' | 'warn', RegExp]>)(
    'finds %s, names the fix, and passes the rest',
    async (_, path, extra, ids, status, fix) => {
      const report = await runDoctor(`${site.demo.url}${path}`, {
        collectorUrl: collectorUrl(),
        thirdPartyHost: site.demo.emulator!.thirdPartyUrl,
        ...extra,
      });
      for (const id of ids) {
        expect(statusOf(report, id), id).toContain(status);
        expect(report.findings.find((f) => f.id === id && f.status === status)!.fix).toMatch(fix);
      }
      expect(report.findings.filter((f) => f.status !== 'pass' && !ids.includes(f.id))).toEqual([]);
      expect(report.ok).toBe(status !== 'fail');
    },
  );

  it('the CSP check: strict-dynamic needs a nonced page script; a listed origin, a wildcard host and a scheme pass', async () => {
    const page = (csp: string, tags: string) => async () =>
      new Response(`<!doctype html><meta http-equiv="Content-Security-Policy" content="${csp}">${tags}`, {
        headers: { 'content-type': 'text/html' },
      });
    const only = async (csp: string, tags = '<script src="https://cdn.example/v/loader.js"></script>') => {
      const fetch = (async (url: string | URL) =>
        String(url).startsWith('https://shop.example/checkout')
          ? page(csp, tags)()
          : new Response('x', { headers: { 'content-type': 'text/javascript' } })) as typeof globalThis.fetch;
      return statusOf(await runDoctor('https://shop.example/checkout', { fetch }), 'csp')[0];
    };
    expect(await only("script-src 'nonce-abc' 'strict-dynamic'", '<script nonce="abc" src="/app.js"></script>')).toBe(
      'pass',
    );
    expect(await only("script-src 'nonce-abc' 'strict-dynamic'", '<script nonce="other" src="/app.js"></script>')).toBe(
      'fail',
    );
    expect(await only("script-src 'self' https://cdn.example *.iesnare.com; connect-src 'self' https:")).toBe('pass');
    expect(await only("default-src 'self' https://cdn.example https://mpsnare.iesnare.com")).toBe('pass');
    expect(await only("script-src 'self' https://cdn.example")).toBe('fail');
    expect(await only('script-src https://cdn.example https://mpsnare.iesnare.com')).toBe('fail'); // not this origin
    expect(await only("script-src 'self' https://cdn.example https://mpsnare.iesnare.com; connect-src 'none'")).toBe(
      'fail',
    );
    expect(await only("default-src 'self' https://cdn.example:8443 https://mpsnare.iesnare.com")).toBe('fail'); // another port
  });

  it('a page that cannot be fetched, or is no HTML page, fails the page check', async () => {
    const report = await runDoctor('http://127.0.0.1:9/checkout', { timeoutMs: 2000 });
    expect(statusOf(report, 'page')).toEqual(['fail']);
    expect(report.ok).toBe(false);
    expect(statusOf(await runDoctor(`${site.demo.url}/demo/style.css`), 'page')).toEqual(['fail']);
  });

  it('formats a table: pass, warn and fail lines, the fix under each that is not a pass', async () => {
    const report = await runDoctor(`${site.demo.url}/checkout?doctor=double-tag`, {
      thirdPartyHost: site.demo.emulator!.thirdPartyUrl,
    });
    const text = formatReport(report);
    expect(text).toMatch(/^FAIL {2}loader_tag_once +the page would run the loader 2 times/m);
    expect(text).toMatch(/^ +fix: keep one/m);
    expect(text).toMatch(/^PASS {2}csp/m);
    expect(text).toMatch(/\d+ pass, \d+ warn, 1 fail$/);
  });

  it('formats exactly: the heading, a blank line, one line a finding, a fix only under what is not a pass, the count', () => {
    const text = formatReport({
      url: 'https://shop.example/checkout',
      ok: false,
      findings: [
        { id: 'page', status: 'pass', message: 'the page answered 200 with HTML', fix: 'never shown' },
        { id: 'csp', status: 'warn', message: 'a warning', fix: '' },
        { id: 'loader_script', status: 'fail', message: 'a failure', fix: 'the fix' },
      ],
    });
    expect(text).toBe(
      [
        'blackbox-capture doctor: https://shop.example/checkout',
        '',
        'PASS  page             the page answered 200 with HTML',
        'WARN  csp              a warning',
        'FAIL  loader_script    a failure',
        '                       fix: the fix',
        '',
        '1 pass, 1 warn, 1 fail',
      ].join('\n'),
    );
  });
});

describe.skipIf(!(nginxAvailable as () => boolean)())('runDoctor against the shipped nginx configuration', () => {
  it('passes the proxy checks; the dropped cookies are a warning', async () => {
    const emulator = await startEmulator();
    const nginx = await (startNginx as (url: string, o: object) => Promise<{ origin: string; stop(): void }>)(
      emulator.collectorUrl,
      {
        page: `<!doctype html><script src="${emulator.loaderUrl}"></script>`,
      },
    );
    try {
      const report = await runDoctor(`${nginx.origin}/checkout`, { collectorUrl: emulator.collectorUrl });
      expect(report.findings.filter((f) => f.status !== 'pass').map((f) => [f.id, f.status])).toEqual([
        ['set_cookie', 'warn'],
      ]);
      expect(report.ok).toBe(true);
    } finally {
      nginx.stop();
      await emulator.close();
    }
  });
});
