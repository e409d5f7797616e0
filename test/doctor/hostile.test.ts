// The doctor against hostile pages, over real sockets: a page is untrusted input, and the
// doctor must not become a way to send requests wherever a page says, nor hang on it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_REQUESTS, runDoctor } from '../../src/doctor/doctor.js';

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

describe('the doctor and a page that names a private address', () => {
  /** Every request goes to 127.0.0.1 on its own port, whatever host its URL names: what a resolver answering 127.0.0.1 would do. */
  const toLoopback: typeof fetch = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    url.hostname = '127.0.0.1';
    return fetch(url, init);
  };
  /** A resolver with fixed answers; `asked` lists the names looked up. */
  const resolver = (answers: Record<string, string[]>) => {
    const asked: string[] = [];
    const lookup = async (hostname: string) => {
      asked.push(hostname);
      const addresses = answers[hostname];
      if (!addresses) throw new Error(`getaddrinfo ENOTFOUND ${hostname}`);
      return addresses;
    };
    return { lookup, asked };
  };
  const loaderOf = (report: Awaited<ReturnType<typeof runDoctor>>) =>
    report.findings.filter((f) => f.id === 'loader_script');

  it.each([
    ['127.0.0.1', 'loopback'],
    ['169.254.169.254', 'link-local, cloud metadata'],
    ['::ffff:10.0.0.1', 'private (10.0.0.0/8) as IPv6'],
    ['fd00:ec2::254', 'unique-local'],
  ])(
    'a public page whose loader host resolves to %s: no request reaches it, and the finding says why',
    async (address, why) => {
      const loader = await serve(() => script);
      const page = await serve((path) =>
        path === '/checkout'
          ? html(`<script data-loader-url="http://loader.test:${new URL(loader.origin).port}/loader.js"></script>`)
          : script,
      );
      const { lookup, asked } = resolver({ 'shop.test': ['93.184.216.34'], 'loader.test': ['2606:4700::1', address] });
      const report = await runDoctor(`http://shop.test:${new URL(page.origin).port}/checkout`, {
        fetch: toLoopback,
        lookup,
      });
      expect(loader.seen).toEqual([]);
      expect(asked).toContain('loader.test');
      expect(loaderOf(report)).toEqual([
        expect.objectContaining({
          status: 'fail',
          message: expect.stringContaining(`(not fetched: loader.test resolves to ${address}, which is ${why}`),
        }),
      ]);
      expect(page.seen).toContain('/checkout'); // the page itself, on a public address, was read
    },
  );

  it('an IP address written in the page is judged without a resolver: 127.0.0.1, [::ffff:7f00:1], localhost', async () => {
    const loader = await serve(() => script);
    const port = new URL(loader.origin).port;
    for (const host of ['127.0.0.1', '[::ffff:7f00:1]', 'localhost']) {
      const page = await serve((path) =>
        path === '/checkout' ? html(`<script data-loader-url="http://${host}:${port}/loader.js"></script>`) : script,
      );
      const report = await runDoctor(`http://shop.test:${new URL(page.origin).port}/checkout`, { fetch: toLoopback });
      expect(loaderOf(report)[0]?.message).toMatch(/\(not fetched: .* is loopback \(/);
    }
    expect(loader.seen).toEqual([]);
  });

  it('a redirect is checked as the first request was: a name that resolves elsewhere the second time is not followed', async () => {
    const page = await serve((path) =>
      path === '/checkout' ? { status: 302, headers: { location: '/checkout2' } } : html(''),
    );
    let asked = 0;
    // Public for the page's rule and its first request, then loopback: DNS rebinding.
    const lookup = async () => (++asked <= 2 ? ['93.184.216.34'] : ['127.0.0.1']);
    const report = await runDoctor(`http://shop.test:${new URL(page.origin).port}/checkout`, {
      fetch: toLoopback,
      lookup,
    });
    expect(page.seen).toEqual(['/checkout']);
    expect(report.findings.find((f) => f.id === 'page')?.message).toContain(
      'not fetched: shop.test resolves to 127.0.0.1, which is loopback',
    );
  });

  it('a name that cannot be resolved, or not in time, is not fetched', async () => {
    const loader = await serve(() => script);
    const port = new URL(loader.origin).port;
    const page = await serve((path) =>
      path === '/checkout' ? html(`<script data-loader-url="http://nowhere.test:${port}/loader.js"></script>`) : script,
    );
    const { lookup } = resolver({ 'shop.test': ['93.184.216.34'] });
    const report = await runDoctor(`http://shop.test:${new URL(page.origin).port}/checkout`, {
      fetch: toLoopback,
      lookup,
    });
    expect(loaderOf(report)[0]?.message).toContain(
      'not fetched: nowhere.test could not be resolved (getaddrinfo ENOTFOUND',
    );
    const slow = async (hostname: string) =>
      hostname === 'shop.test' ? ['93.184.216.34'] : new Promise<string[]>(() => {});
    const late = await runDoctor(`http://shop.test:${new URL(page.origin).port}/checkout`, {
      fetch: toLoopback,
      lookup: slow,
      timeoutMs: 200,
    });
    expect(loaderOf(late)[0]?.message).toContain(
      'not fetched: nowhere.test could not be resolved (no answer within 200 ms)',
    );
    expect(loader.seen).toEqual([]);
  });

  it('a page on a local address (a dev server) still checks its local loader', async () => {
    const loader = await serve(() => script);
    const page = await serve((path) =>
      path === '/checkout' ? html(`<script data-loader-url="${loader.origin}/loader.js"></script>`) : script,
    );
    const { lookup } = resolver({});
    for (const pageUrl of [`${page.origin}/checkout`, `http://localhost:${new URL(page.origin).port}/checkout`]) {
      const report = await runDoctor(pageUrl, { lookup });
      expect(loaderOf(report)).toEqual([expect.objectContaining({ status: 'pass' })]);
    }
    expect(loader.seen).toEqual(['/loader.js', '/loader.js']);
    // A page whose name resolves to a private address is local too.
    const dev = resolver({ 'dev.test': ['10.1.2.3'] });
    const report = await runDoctor(`http://dev.test:${new URL(page.origin).port}/checkout`, {
      fetch: toLoopback,
      lookup: dev.lookup,
    });
    expect(loaderOf(report)).toEqual([expect.objectContaining({ status: 'pass' })]);
  });
});
