// The doctor against hostile pages, over real sockets: a page is untrusted input, and the
// doctor must not become a way to send requests wherever a page says, nor hang on it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_REQUESTS, runDoctor } from '../src/doctor/doctor.js';

interface Site {
  origin: string;
  /** Paths asked for, in order. */
  seen: string[];
  close(): Promise<void>;
}
const sites: Site[] = [];
afterEach(async () => {
  for (const site of sites.splice(0)) await site.close();
});

/** A loopback server: `answer` gives each path's status, headers and body. */
async function serve(
  answer: (path: string) => { status?: number; headers?: Record<string, string>; body?: string },
): Promise<Site> {
  const seen: string[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req.url ?? '');
    const { status = 200, headers = {}, body = '' } = answer(req.url ?? '');
    res.writeHead(status, headers).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const site = {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  sites.push(site);
  return site;
}
const html = (body: string) => ({
  headers: { 'content-type': 'text/html' },
  body: `<!doctype html><html><head>${body}</head><body></body></html>`,
});
const script = { headers: { 'content-type': 'text/javascript' }, body: 'void 0;' };

describe('the doctor on a hostile page', () => {
  it('fifty loader-looking tags and fifty data-loader-url attributes naming an internal service: one request there at most', async () => {
    const internal = await serve(() => script);
    const tags = Array.from(
      { length: 50 },
      (_, i) =>
        `<script src="${internal.origin}/internal/api/${i}/loader.js"></script><script data-loader-url="${internal.origin}/internal/api/x${i}"></script>`,
    ).join('');
    const page = await serve((path) => (path === '/checkout' ? html(tags) : script));
    const report = await runDoctor(`${page.origin}/checkout`);
    expect(internal.seen.length).toBeLessThanOrEqual(1);
    expect(page.seen.length + internal.seen.length).toBeLessThanOrEqual(MAX_REQUESTS);
    expect(report.findings.find((f) => f.id === 'loader_tag_once')?.status).toBe('fail');
    expect(report.findings.some((f) => f.id === 'loader_script' && /only .* was fetched/.test(f.message))).toBe(true);
  });

  it('a redirect to another origin is never followed: not for the page, not for the first-party scripts', async () => {
    const elsewhere = await serve(() => script);
    const page = await serve((path) =>
      path === '/checkout'
        ? html('')
        : path === '/moved'
          ? { status: 302, headers: { location: `${elsewhere.origin}/steal` } }
          : { status: 301, headers: { location: `${elsewhere.origin}${path}` } },
    );
    const report = await runDoctor(`${page.origin}/checkout`);
    expect(elsewhere.seen).toEqual([]);
    expect(report.findings.find((f) => f.id === 'static_script')?.message).toMatch(/another origin/);
    const moved = await runDoctor(`${page.origin}/moved`);
    expect(elsewhere.seen).toEqual([]);
    expect(moved.findings.find((f) => f.id === 'page')).toMatchObject({
      status: 'fail',
      message: expect.stringMatching(/another origin/),
    });
  });

  it('a redirect within the origin is followed, a few times at most', async () => {
    const page = await serve((path) =>
      path === '/checkout'
        ? { status: 302, headers: { location: '/checkout/' } }
        : path === '/checkout/'
          ? html('')
          : { status: 302, headers: { location: path + 'x' } },
    );
    const report = await runDoctor(`${page.origin}/checkout`);
    expect(report.findings.find((f) => f.id === 'page')?.status).toBe('pass');
    expect(report.findings.find((f) => f.id === 'static_script')?.message).toMatch(/more than 3 redirects/);
    expect(page.seen.length).toBeLessThanOrEqual(MAX_REQUESTS);
  });

  it('2 MiB of unclosed script tags is read in one linear pass; a larger page is cut at maxPageBytes', async () => {
    const hostile = '<script '.repeat((2 * 1024 * 1024) / 8);
    const page = await serve((path) =>
      path === '/checkout' ? { headers: { 'content-type': 'text/html' }, body: hostile + hostile } : script,
    );
    // Quadratic reading took 18 s for 400 KB: this runs well inside the test's time limit.
    const report = await runDoctor(`${page.origin}/checkout`);
    expect(report.findings.find((f) => f.id === 'page')).toMatchObject({
      status: 'warn',
      message: expect.stringMatching(/larger than 2097152 bytes/),
    });
    expect(page.seen.length).toBeLessThanOrEqual(MAX_REQUESTS);
  });

  it('URLs that are no http(s) URL are not fetched', async () => {
    const page = await serve((path) =>
      path === '/checkout'
        ? html(
            '<script data-loader-url="file:///etc/passwd"></script><script src="javascript:alert(1)//loader.js"></script>',
          )
        : script,
    );
    const report = await runDoctor(`${page.origin}/checkout`);
    expect(report.findings.filter((f) => f.id === 'loader_script').map((f) => f.message)).toEqual([
      'no loader URL found',
    ]);
  });
});
