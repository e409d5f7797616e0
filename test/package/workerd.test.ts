// The docs' Cloudflare Workers snippet, as written, in real workerd: the packed tarball in a
// new folder, bundled by wrangler as `wrangler deploy` does (its `workerd` export condition),
// run by Miniflare's workerd with and without `nodejs_compat`. The service's EU hosts and the
// vendor's first-party host are routed to the emulator by Miniflare's outbound service.
import { execFile } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { Miniflare, Response as WorkerResponse, type Request as WorkerRequest } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { snippet } from '../support/readme.js';
import { installPackedTarball, ROOT } from '../support/tarball.js';

const BLACKBOX = '0400' + 'nVQ+/abc'.repeat(150) + '==';
const COMPATIBILITY_DATE = '2025-09-01';

let emulator: Emulator;
let dir: string;
let bundle: string;
/** What reached the vendor's first-party host through the proxy. */
const collectorRequests: Array<{ url: string; forwardedFor: string | null }> = [];

beforeAll(async () => {
  emulator = await startEmulator({ accountRequestsPerSecond: 0 });
  ({ dir } = installPackedTarball('bbc-workerd-'));
  writeFileSync(join(dir, 'worker.ts'), snippet('server-workers').code);
  // The snippet's "yours", a session lookup, beside it: the entry wrangler bundles.
  writeFileSync(
    join(dir, 'entry.ts'),
    `(globalThis as any).sessionUser = async (request: Request) =>
  /session=ok/.test(request.headers.get('cookie') ?? '') ? { orderId: 'order-w', id: 'user-w' } : null;
export { default } from './worker.ts';
`,
  );
  await promisify(execFile)(
    process.execPath,
    [
      join(ROOT, 'node_modules', 'wrangler', 'bin', 'wrangler.js'),
      'deploy',
      'entry.ts',
      '--dry-run',
      '--outdir',
      'out',
      '--name',
      'shop',
      '--compatibility-date',
      COMPATIBILITY_DATE,
    ],
    {
      cwd: dir,
      timeout: 120_000,
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true', NO_COLOR: '1' },
    },
  );
  bundle = join(
    dir,
    'out',
    readdirSync(join(dir, 'out')).find((f) => f.endsWith('.js'))!,
  );
});
afterAll(async () => {
  await emulator?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The Worker in workerd, its outbound requests routed to the emulator. */
function worker(compatibilityFlags: string[]) {
  const routes: Record<string, string> = {
    'https://auth.emea-1.jumio.ai': new URL(emulator.tokenUrl).origin,
    'https://account.emea-1.jumio.ai': emulator.accountUrl,
    'https://api.emea-1.jumio.ai': emulator.apiUrl,
    'https://retrieval.emea-1.jumio.ai': emulator.retrievalUrl,
    'https://first.iovation.com': emulator.collectorUrl,
  };
  return new Miniflare({
    // Listed, not discovered: the kit's optional import of @opentelemetry/api has a name
    // Miniflare cannot follow (workerd rejects it at run time, and the kit goes on without).
    modules: [{ type: 'ESModule', path: bundle, contents: readFileSync(bundle, 'utf8') }],
    modulesRoot: dirname(bundle),
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags,
    bindings: { CLIENT_ID: emulator.clientId, CLIENT_SECRET: emulator.clientSecret, WORKFLOW_KEY: '10011' },
    outboundService: async (request: WorkerRequest) => {
      const url = new URL(request.url);
      const to = routes[url.origin];
      if (!to) return new WorkerResponse(`no route to ${url.origin}`, { status: 502 });
      const headers = new Headers(request.headers);
      if (url.origin === 'https://first.iovation.com')
        collectorRequests.push({ url: url.pathname, forwardedFor: headers.get('x-forwarded-for') });
      else headers.set('x-forwarded-host', url.host);
      const body = ['GET', 'HEAD'].includes(request.method) ? undefined : await request.arrayBuffer();
      const answer = await fetch(new URL(url.pathname + url.search, to), {
        method: request.method,
        headers,
        body,
        redirect: 'manual',
      });
      // Passed on as the collector sent them: several Set-Cookie headers stay several.
      const out = new Headers();
      answer.headers.forEach((value, name) => name !== 'set-cookie' && out.set(name, value));
      for (const cookie of answer.headers.getSetCookie()) out.append('set-cookie', cookie);
      return new WorkerResponse(await answer.arrayBuffer(), { status: answer.status, headers: [...out] });
    },
  });
}

describe('the Workers snippet in workerd', () => {
  it('the bundle wrangler made imports nothing from Node', () => {
    const code = readFileSync(bundle, 'utf8');
    expect(code.match(/\bfrom\s*["']node:[^"']+["']|\bimport\(\s*["']node:[^"']+["']\s*\)/g)).toBeNull();
  });

  it.each([
    ['without nodejs_compat', []],
    ['with nodejs_compat', ['nodejs_compat']],
  ])('%s: the proxy passes the collector headers and cookies back; a capture completes', async (_, flags) => {
    const mf = worker(flags);
    try {
      const script = await mf.dispatchFetch('https://shop.example/iojs/general5/SUB/dyn_wdp.js', {
        headers: { 'cf-connecting-ip': '203.0.113.77' },
      });
      expect(script.status).toBe(200);
      expect(script.headers.get('content-type')).toMatch(/javascript/);
      expect(script.headers.get('cache-control')).toMatch(/^no-store/);
      expect(script.headers.getSetCookie()).toEqual([expect.stringMatching(/^bbc_fpc=[^;]+; Path=\/iojs/)]);
      expect(await script.text()).toContain('emulated collection script');
      expect(collectorRequests.at(-1)).toEqual({ url: '/general5/SUB/dyn_wdp.js', forwardedFor: '203.0.113.77' });

      const checkout = await mf.dispatchFetch('https://shop.example/device-risk', {
        method: 'POST',
        headers: {
          origin: 'https://shop.example',
          cookie: 'session=ok',
          'content-type': 'application/json',
          'idempotency-key': `workerd-${flags.length}`,
        },
        body: JSON.stringify({ blackbox: BLACKBOX }),
      });
      expect([checkout.status, checkout.status === 200 ? '' : await checkout.text()]).toEqual([200, '']);
      const answer = (await checkout.json()) as { workflowExecutionId: string; status: string };
      expect(emulator.inspect.transaction(answer.workflowExecutionId)).toMatchObject({
        blackboxes: [BLACKBOX],
        customerInternalReference: 'order-w',
        userReference: 'user-w',
      });
      const anonymous = await mf.dispatchFetch('https://shop.example/device-risk', {
        method: 'POST',
        headers: { origin: 'https://shop.example', 'content-type': 'application/json' },
        body: JSON.stringify({ blackbox: BLACKBOX }),
      });
      expect(anonymous.status).toBe(401);
    } finally {
      await mf.dispose();
    }
  });
});
