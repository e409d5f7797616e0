// The integration doctor against the demo site, healthy and broken on purpose one way per
// check, against the shipped nginx configuration, and as the CLI.
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { snippet } from './support/readme.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemo, type Demo } from '../demo/app.js';
import { configFromEnvironment } from '../demo/config.js';
import { formatReport, runDoctor, type DoctorReport, type Finding } from '../src/doctor/doctor.js';
import { startEmulator } from '../src/emulator/index.js';
// @ts-expect-error: a plain ES module script without types
import { nginxAvailable, startNginx } from '../scripts/nginx.mjs';

let demo: Demo;
beforeAll(async () => {
  demo = await startDemo({ ...configFromEnvironment({}), port: 0 }, { delays: {} });
});
afterAll(async () => {
  await demo?.close();
});

const statusOf = (report: DoctorReport, id: Finding['id']) => report.findings.filter((f) => f.id === id).map((f) => f.status);
const collectorUrl = () => demo.settings.collectorUrl;

describe('runDoctor', () => {
  it('the healthy demo checkout passes every check', async () => {
    const report = await runDoctor(`${demo.url}/checkout`, { collectorUrl: collectorUrl(), thirdPartyHost: demo.emulator!.thirdPartyUrl });
    expect(report.findings.filter((f) => f.status !== 'pass')).toEqual([]);
    expect(report.findings.map((f) => f.id).sort()).toEqual(['csp', 'dyn_not_cached', 'dyn_script', 'loader_script', 'loader_tag_once', 'page', 'set_cookie', 'static_script']);
    expect(report.ok).toBe(true);
  });

  it.each([
    ['the prefix not stripped (404)', '/checkout', { prefix: '/broken-404/iojs' }, ['static_script', 'dyn_script'], 'fail', /strip/],
    ["the proxy missing: the site's fallback answers HTML", '/checkout', { prefix: '/broken-html/iojs' }, ['static_script', 'dyn_script'], 'fail', /fallback/],
    ['dyn_wdp.js served by a cache', '/checkout', { prefix: '/broken-cache/iojs' }, ['dyn_not_cached'], 'fail', /no-store/],
    ['cookies dropped by the proxy', '/checkout', { prefix: '/broken-cookie/iojs' }, ['set_cookie'], 'warn', /Set-Cookie/],
    ['a CSP without the loader, this origin or the vendor host', '/checkout?doctor=csp', {}, ['csp'], 'fail', /script-src/],
    ['a loader URL that is no script', '/checkout?doctor=bad-loader', {}, ['loader_script'], 'fail', /loaderUrl/],
    ['a second loader tag', '/checkout?doctor=double-tag', {}, ['loader_tag_once'], 'fail', /keep one/],
  ] as Array<[string, string, object, Finding['id'][], 'fail' | 'warn', RegExp]>)('finds %s, names the fix, and passes the rest', async (_, path, extra, ids, status, fix) => {
    const report = await runDoctor(`${demo.url}${path}`, { collectorUrl: collectorUrl(), thirdPartyHost: demo.emulator!.thirdPartyUrl, ...extra });
    for (const id of ids) {
      expect(statusOf(report, id), id).toContain(status);
      expect(report.findings.find((f) => f.id === id && f.status === status)!.fix).toMatch(fix);
    }
    expect(report.findings.filter((f) => f.status !== 'pass' && !ids.includes(f.id))).toEqual([]);
    expect(report.ok).toBe(status !== 'fail');
  });

  it('the CSP check: strict-dynamic needs a nonced page script; a listed origin, a wildcard host and a scheme pass', async () => {
    const page = (csp: string, tags: string) => async () => new Response(`<!doctype html><meta http-equiv="Content-Security-Policy" content="${csp}">${tags}`, { headers: { 'content-type': 'text/html' } });
    const only = async (csp: string, tags = '<script src="https://cdn.example/v/loader.js"></script>') => {
      const fetch = (async (url: string | URL) => (String(url).startsWith('https://shop.example/checkout') ? page(csp, tags)() : new Response('x', { headers: { 'content-type': 'text/javascript' } }))) as typeof globalThis.fetch;
      return statusOf(await runDoctor('https://shop.example/checkout', { fetch }), 'csp')[0];
    };
    expect(await only("script-src 'nonce-abc' 'strict-dynamic'", '<script nonce="abc" src="/app.js"></script>')).toBe('pass');
    expect(await only("script-src 'nonce-abc' 'strict-dynamic'", '<script nonce="other" src="/app.js"></script>')).toBe('fail');
    expect(await only("script-src 'self' https://cdn.example *.iesnare.com; connect-src 'self' https:")).toBe('pass');
    expect(await only("default-src 'self' https://cdn.example https://mpsnare.iesnare.com")).toBe('pass');
    expect(await only("script-src 'self' https://cdn.example")).toBe('fail');
    expect(await only("script-src https://cdn.example https://mpsnare.iesnare.com")).toBe('fail'); // not this origin
    expect(await only("script-src 'self' https://cdn.example https://mpsnare.iesnare.com; connect-src 'none'")).toBe('fail');
    expect(await only("default-src 'self' https://cdn.example:8443 https://mpsnare.iesnare.com")).toBe('fail'); // another port
  });

  it('a page that cannot be fetched, or is no HTML page, fails the page check', async () => {
    const report = await runDoctor('http://127.0.0.1:9/checkout', { timeoutMs: 2000 });
    expect(statusOf(report, 'page')).toEqual(['fail']);
    expect(report.ok).toBe(false);
    expect(statusOf(await runDoctor(`${demo.url}/demo/style.css`), 'page')).toEqual(['fail']);
  });

  it('formats a table: pass, warn and fail lines, the fix under each that is not a pass', async () => {
    const report = await runDoctor(`${demo.url}/checkout?doctor=double-tag`, { thirdPartyHost: demo.emulator!.thirdPartyUrl });
    const text = formatReport(report);
    expect(text).toMatch(/^FAIL  loader_tag_once +the page would run the loader 2 times/m);
    expect(text).toMatch(/^ +fix: keep one/m);
    expect(text).toMatch(/^PASS  csp/m);
    expect(text).toMatch(/\d+ pass, \d+ warn, 1 fail$/);
  });
});

describe.skipIf(!(nginxAvailable as () => boolean)())('runDoctor against the shipped nginx configuration', () => {
  it('passes the proxy checks; the dropped cookies are a warning', async () => {
    const emulator = await startEmulator();
    const nginx = await (startNginx as (url: string, o: object) => Promise<{ origin: string; stop(): void }>)(emulator.collectorUrl, {
      page: `<!doctype html><script src="${emulator.loaderUrl}"></script>`,
    });
    try {
      const report = await runDoctor(`${nginx.origin}/checkout`, { collectorUrl: emulator.collectorUrl });
      expect(report.findings.filter((f) => f.status !== 'pass').map((f) => [f.id, f.status])).toEqual([['set_cookie', 'warn']]);
      expect(report.ok).toBe(true);
    } finally {
      nginx.stop();
      await emulator.close();
    }
  });
});

describe('npx blackbox-capture doctor (dist/cli.js)', () => {
  const cli = (...args: string[]) => spawnSync(process.execPath, ['dist/cli.js', ...args], { encoding: 'utf8' });
  // Asynchronous: the demo it checks runs in this process.
  const cliAsync = (...args: string[]) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, ['dist/cli.js', ...args], { encoding: 'utf8' }, (_, stdout, stderr) => resolve({ status: child.exitCode, stdout, stderr }));
    });
  it('exits 0 on a healthy page, 1 on a failing one, with --json the same report', async () => {
    const healthy = await cliAsync('doctor', `${demo.url}/checkout`, '--third-party-host', demo.emulator!.thirdPartyUrl, '--collector-url', collectorUrl());
    expect([healthy.status, healthy.stderr]).toEqual([0, '']);
    expect(healthy.stdout).toMatch(/8 pass, 0 warn, 0 fail/);
    const broken = await cliAsync('doctor', `${demo.url}/checkout`, '--prefix', '/broken-404/iojs', '--json');
    expect(broken.status).toBe(1);
    const report = JSON.parse(broken.stdout) as DoctorReport;
    expect(report.ok).toBe(false);
    expect(statusOf(report, 'static_script')).toEqual(['fail']);
  });

  it("runs as the README writes it ('doctor-command'), through npx in a project that installed the package", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bbc-doctor-'));
    mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
    symlinkSync(process.cwd(), join(dir, 'node_modules', 'blackbox-capture'));
    symlinkSync(join(process.cwd(), 'dist', 'cli.js'), join(dir, 'node_modules', '.bin', 'blackbox-capture'));
    const command = snippet('doctor-command').code.trim();
    expect(command).toBe('npx blackbox-capture doctor https://shop.example/checkout');
    const result = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = execFile('sh', ['-c', command.replace('https://shop.example/checkout', `${demo.url}/checkout?doctor=double-tag`)], { cwd: dir, env: { ...process.env, npm_config_yes: 'false' } }, (_, stdout) =>
        resolve({ code: child.exitCode, out: stdout }),
      );
    });
    expect(result.out).toMatch(/^FAIL  loader_tag_once/m);
    expect(result.code).toBe(1);
  });

  it('bad usage exits 2 with the usage', () => {
    for (const args of [[], ['doctor'], ['doctor', 'shop.example'], ['doctor', 'https://a.example', '--nope'], ['check']]) {
      const result = cli(...args);
      expect(result.status, args.join(' ')).toBe(2);
      expect(result.stderr + result.stdout).toContain('usage: blackbox-capture doctor');
    }
  });
});
