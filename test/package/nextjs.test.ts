// The docs' Next.js snippets, as written, in a new Next.js 16 app on the packed tarball:
// `next build` (Turbopack, with its type check) without any secret set, then `next start`
// with the emulator's variables (what `blackbox-capture-emulator --env` prints): the proxy
// passes the collector's script, headers and cookie back; a capture completes; the
// emulator's callback reaches the callback route and the decision is printed on the server.
// The React hook's snippets (docs/frameworks.md) in the same app, in Chromium: Pay pressed while
// the capture collects (the third party's scripts held until then) sends the final blackbox, and
// client-side navigation makes one transaction per cart and page run.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Request as PageRequest } from 'playwright-core';
import { decodeBlackbox, startEmulator, type Emulator } from '../../src/emulator/index.js';
import { checkedTransaction } from '../support/accepted.js';
import {
  expectNewPageRun,
  expectOneTransactionWith,
  launchChromium,
  revisitByRouter,
} from '../support/framework-site.js';
import { emulatorEnvironment } from '../support/emulator-env.js';
import { runDoctor } from '../../src/doctor/doctor.js';
import { BLACKBOX } from '../support/kit.js';
import { freePort } from '../support/processes.mjs';
import { fileOf, snippet } from '../support/readme.js';
import { ROOT, writerIn } from '../support/tarball.js';
import { execFileSync } from 'node:child_process';

const NEXT = join(ROOT, 'node_modules', 'next', 'dist', 'bin', 'next');
// Inside the package's folder, so that Next.js finds its own packages (and the workspace
// root, by the lock file) as in an app; the package itself is installed from the tarball.
const APP = join(ROOT, '.scratch', `nextjs-${process.pid}`);

let emulator: Emulator;
let server: ChildProcess | undefined;
let output = '';
let origin = '';
let browser: Browser | undefined;

/** Runs `next <args>` in the app; resolves with its output, rejects with it on failure. */
function next(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [NEXT, ...args], { cwd: APP, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (out += chunk));
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`next ${args[0]} exited ${code}:\n${out}`)),
    );
  });
}

/** The environment without this machine's own credentials: `next build` must need none. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NEXT_TELEMETRY_DISABLED: '1' };
  for (const name of ['CLIENT_ID', 'CLIENT_SECRET', 'WORKFLOW_KEY', 'TOKEN_URL', 'BASE_URL', 'API_URL', 'NODE_OPTIONS'])
    delete env[name];
  return env;
}

beforeAll(async () => {
  emulator = await startEmulator({ accountRequestsPerSecond: 0 });
  rmSync(APP, { recursive: true, force: true });
  const installed = join(APP, 'node_modules', 'blackbox-capture');
  mkdirSync(installed, { recursive: true });
  execFileSync('npm', ['pack', '--silent', '--pack-destination', APP], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  execFileSync('sh', ['-c', `tar xzf "${APP}"/blackbox-capture-*.tgz -C "${installed}" --strip-components=1`]);
  const write = writerIn(APP);
  write('package.json', JSON.stringify({ name: 'shop', private: true }));
  for (const name of [
    'server-nextjs-setup',
    'server-nextjs',
    'server-nextjs-callback',
    'server-nextjs-proxy',
    'frameworks-next-checkout',
    'frameworks-next-page',
    'frameworks-next-cart',
  ]) {
    const block = snippet(name);
    write(fileOf(block), block.code);
  }
  // A handler of the kit's type exported as it is (`export const POST = deviceRisk`): Next.js's
  // type check passes its `{ params }` as the second argument.
  write(
    'app/as-is/route.ts',
    "import type { FetchHandler } from 'blackbox-capture/server';\n\nexport const POST: FetchHandler = () => new Response(null, { status: 204 });\n",
  );
  // The snippet's "yours": a session lookup, declared for the type check and set before the server starts.
  write(
    'session.d.ts',
    'declare function sessionUser(request: Request): Promise<{ orderId: string; id: string } | null>;\n',
  );
  write(
    'session.mjs',
    `globalThis.sessionUser = async (request) =>
  /session=ok/.test(request.headers.get('cookie') ?? '') ? { orderId: 'order-next', id: 'user-next' } : null;\n`,
  );
  // The front the docs warn against: a bare rewrites() to the collector, with a page beside it
  // for the doctor (its leak check: test/doctor/leaks.test.ts).
  write(
    'next.config.mjs',
    `export default { rewrites: async () => [{ source: '/leaky/iojs/:path*', destination: '${emulator.collectorUrl}/:path*' }] };\n`,
  );
  write('public/leaky.html', `<!doctype html><script src="${emulator.loaderUrl}"></script>`);
  // Around the checkout snippets: the emulator's loader where they load it from, a layout whose
  // links navigate on the client, a page to leave the checkout for, and the shop's order route.
  write('public/static/vendor/loader.js', await (await fetch(emulator.loaderUrl)).text());
  write(
    'app/layout.tsx',
    `import Link from 'next/link';
import type { ReactNode } from 'react';
export default function Layout({ children }: { children: ReactNode }) {
  return (
    <html><body>
      <nav>
        <Link id="to-nav-1" href="/checkout?cart=nav-1">cart 1</Link> <Link id="to-nav-2" href="/checkout?cart=nav-2">cart 2</Link>
        <Link id="away" href="/elsewhere">elsewhere</Link> <Link id="to-cart-B" href="/cart?cart=full-B">cart B</Link>
      </nav>
      {children}
    </body></html>
  );
}
`,
  );
  write('app/elsewhere/page.tsx', 'export default function Page() {\n  return <p id="elsewhere">elsewhere</p>;\n}\n');
  write('app/thanks/page.tsx', 'export default function Page() {\n  return <p id="thanks">thanks</p>;\n}\n');
  write(
    'app/order/route.ts',
    `export const POST = async (request: Request) => {
  console.log('order ' + JSON.stringify(Object.fromEntries(await request.formData())));
  return new Response(null, { status: 204 });
};
`,
  );
  await next(['build'], cleanEnv());

  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  server = spawn(process.execPath, [NEXT, 'start', '-H', '127.0.0.1', '-p', String(port)], {
    cwd: APP,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...cleanEnv(),
      NODE_OPTIONS: `--import=${pathToFileURL(join(APP, 'session.mjs')).href}`,
      ...emulatorEnvironment(emulator),
      CALLBACK_SOURCES: 'any',
      CALLBACK_URL: `${origin}/device-risk/callback`,
      SHOP_ORIGIN: origin,
    },
  });
  await new Promise<void>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += String(chunk);
      if (/Ready in/.test(output)) resolve();
    };
    server!.stdout!.on('data', read);
    server!.stderr!.on('data', read);
    server!.once('exit', (code) => reject(new Error(`next start exited ${code}:\n${output}`)));
  });
});

afterAll(async () => {
  await browser?.close();
  if (server?.pid) {
    const exited = new Promise((resolve) => server!.once('exit', resolve));
    process.kill(-server.pid, 'SIGTERM');
    await exited;
  }
  await emulator?.close();
  rmSync(APP, { recursive: true, force: true });
});

describe('the Next.js snippets under next start', () => {
  it('the proxy route passes the collector script, its headers and its cookie back', async () => {
    const script = await fetch(`${origin}/iojs/general5/SUB/dyn_wdp.js`, { headers: { 'x-real-ip': '203.0.113.9' } });
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    expect(script.headers.getSetCookie()).toEqual([expect.stringMatching(/^bbc_fpc=[^;]+; Path=\/iojs/)]);
    expect(await script.text()).toContain('emulated collection script');
  });

  it('a capture completes, and the decision arrives by callback on the server only', async () => {
    const before = emulator.inspect.transactions().length;
    const answer = await fetch(`${origin}/device-risk`, {
      method: 'POST',
      headers: {
        origin,
        cookie: 'session=ok',
        'content-type': 'application/json',
        'idempotency-key': 'nextjs-1',
      },
      body: JSON.stringify({ blackbox: BLACKBOX }),
    });
    // Accepted at once (the default), checked in the background: the browser gets a reference only.
    expect([answer.status, answer.status === 202 ? '' : await answer.text()]).toEqual([202, '']);
    expect(await answer.json()).toEqual({ accepted: true, reference: 'nextjs-1' });
    const body = await checkedTransaction(emulator, before);
    expect(emulator.inspect.transaction(body.workflowExecutionId)).toMatchObject({
      blackboxes: [BLACKBOX],
      customerInternalReference: 'order-next',
    });
    await expect
      .poll(() => output, { timeout: 30_000 })
      .toMatch(new RegExp(`decided ${body.workflowExecutionId} PROCESSED [A-Z]+`));
  });

  it('without a session the endpoint answers 401', async () => {
    const anonymous = await fetch(`${origin}/device-risk`, {
      method: 'POST',
      headers: { origin, 'content-type': 'application/json' },
      body: JSON.stringify({ blackbox: BLACKBOX }),
    });
    expect(anonymous.status).toBe(401);
  });
});

describe('the doctor on a bare rewrites() front under next start', () => {
  it('fails, naming each leak and the route handler as the fix', async () => {
    const report = await runDoctor(`${origin}/leaky.html`, {
      prefix: '/leaky/iojs',
      collectorUrl: emulator.collectorUrl,
      thirdPartyHost: emulator.thirdPartyUrl,
    });
    const failed = report.findings.filter((f) => f.status === 'fail');
    expect(failed.map((f) => f.id)).toEqual([
      'set_cookie',
      'leak_cookies',
      'leak_auth',
      'leak_address',
      'refuses_post',
      'refuses_hostile_paths',
    ]);
    for (const finding of failed) expect(finding.fix).toContain('instead of rewrites()');
    expect(report.ok).toBe(false);
  });
});

/** Each test's page run, closed after it even when it failed (its capture would deliver into the next). */
const contexts: BrowserContext[] = [];
afterEach(async () => {
  for (const context of contexts.splice(0)) await context.close();
});

/** A new page run in Chromium, signed in; the hook's POSTs to /device-risk are recorded. */
async function shopper(): Promise<{ context: BrowserContext; posts: PageRequest[] }> {
  browser ??= await launchChromium();
  const context = await browser.newContext();
  contexts.push(context);
  await context.addCookies([{ name: 'session', value: 'ok', url: origin }]);
  const posts: PageRequest[] = [];
  context.on('request', (request) => {
    if (new URL(request.url()).pathname === '/device-risk') posts.push(request);
  });
  return { context, posts };
}

describe('the React hook in a Next.js App Router page (docs/frameworks.md)', () => {
  it('Pay pressed while the capture collects: the order and the endpoint get the final blackbox, outcome complete', async () => {
    const { context, posts } = await shopper();
    const page = await context.newPage();
    // The third party's scripts are held until Pay is pressed: the capture is still collecting then.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await context.route(`${emulator.thirdPartyUrl}/**`, async (route) => {
      await held;
      await route.continue();
    });
    await page.goto(`${origin}/checkout?cart=pay-1`, { waitUntil: 'domcontentloaded' }); // the held script holds `load`
    // Hydrated: the hook's effect has started the capture (a click before would be a native submit).
    await page.waitForFunction(() => (window as { IGLOO?: { loader?: unknown } }).IGLOO?.loader);
    expect(await page.locator('form').getAttribute('data-complete')).toBe('false'); // still collecting
    await page.locator('button').click();
    release();
    await page.waitForURL(`${origin}/thanks`);
    const order = JSON.parse(/^order (.*)$/m.exec(output)![1]!) as { cart: string; blackbox: string };
    expect(order.cart).toBe('pay-1');
    expect(decodeBlackbox(order.blackbox)?.sources.sort()).toEqual(['fp_dyn', 'fp_static', 'tp']);
    // The order's blackbox is the final one: the one the capture delivered on completion.
    await expect.poll(() => posts.length, { timeout: 20_000 }).toBe(1);
    expect(posts[0]!.postDataJSON()).toMatchObject({ blackbox: order.blackbox, outcome: { outcome: 'complete' } });
    expect(await posts[0]!.headerValue('checkout-id')).toBe('pay-1');
    // (A keepalive request's answer is not readable from the page's side: found at the emulator.)
    // The endpoint answers once the checkout is queued: the transaction follows.
    const made = () => emulator.inspect.transactions().filter((made) => made.blackboxes.includes(order.blackbox));
    await expect.poll(() => made().length, { timeout: 20_000 }).toBe(1);
  });

  it("'frameworks-next-cart': cart → checkout A → Pay → cart → checkout B → Pay: each checkout a page run, its own blackbox", async () => {
    const { context } = await shopper();
    const page = await context.newPage();
    const orders = () =>
      [...output.matchAll(/^order (.*)$/gm)].map((line) => JSON.parse(line[1]!) as { cart: string; blackbox: string });
    const before = orders().length;
    await page.goto(`${origin}/cart?cart=full-A`);
    const runs: string[] = [];
    for (const cart of ['full-A', 'full-B']) {
      if (cart === 'full-B') {
        await page.locator('#to-cart-B').click(); // <Link>: on the client
        await page.waitForURL(`${origin}/cart?cart=full-B`);
      }
      await page.evaluate(() => ((window as { run?: string }).run = 'cart'));
      await page.locator('#to-checkout').click();
      await page.locator('form[data-complete="true"]').waitFor();
      runs.push(await page.evaluate(() => (window as { run?: string }).run ?? 'new'));
      await page.locator('button').click();
      await page.waitForURL(`${origin}/thanks`);
    }
    expect(runs).toEqual(['new', 'new']); // each checkout loaded fully
    await expect.poll(() => orders().length - before).toBe(2);
    const [a, b] = orders().slice(before);
    expect([a!.cart, b!.cart]).toEqual(['full-A', 'full-B']);
    expect([a!.blackbox, b!.blackbox].map((bb) => decodeBlackbox(bb)?.sources.sort())).toEqual([
      ['fp_dyn', 'fp_static', 'tp'],
      ['fp_dyn', 'fp_static', 'tp'],
    ]);
    expect(b!.blackbox).not.toBe(a!.blackbox);
    for (const blackbox of [a!.blackbox, b!.blackbox]) await expectOneTransactionWith(emulator, blackbox);
  });

  it("three visits of one cart by client-side navigation make one transaction; a second cart loads fully by the package's doing", async () => {
    const before = emulator.inspect.requests('accountCreate');
    const { context, posts } = await shopper();
    const page = await context.newPage();
    await page.goto(`${origin}/checkout?cart=nav-1`);
    await expect.poll(() => posts.length, { timeout: 20_000 }).toBe(1);
    await revisitByRouter(page, '#elsewhere');
    // One collection per page run: the page run's blackbox went to nav-1, so the package reloads
    // nav-2's page, whose page run posts its own.
    await expectNewPageRun(page, async () => {
      await page.locator('#to-nav-2').click();
      await page.waitForURL(`${origin}/checkout?cart=nav-2`);
    });
    await page.locator('form[data-complete="true"]').waitFor();
    await expect.poll(() => posts.length, { timeout: 20_000 }).toBe(2);
    expect(await Promise.all(posts.map((post) => post.headerValue('checkout-id')))).toEqual(['nav-1', 'nav-2']);
    await expect.poll(() => emulator.inspect.requests('accountCreate') - before, { timeout: 20_000 }).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 300)); // a third create would have started by now
    expect(emulator.inspect.requests('accountCreate') - before).toBe(2);
  });
});
