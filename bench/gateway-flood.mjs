// Signed-in shoppers beside a guest-token flood (#65): `blackbox-capture serve` (the built
// CLI) as a process, behind a trusted front, against the emulator at the service's default
// limits (account requests 1 a second, bursts of 10). A flood posts 20 checkouts a second for
// `offerMs` from 400 addresses, each with a freshly minted guest order token (the shop's back
// end mints one for any page view: sub and exp, no uref); one shopper every 2 s posts beside
// it, each from an address of its own, signed in (a token with uref) or, for comparison, as a
// guest. A shopper counts as decided when its decision webhook reached the shop's receiver
// within `withinMs` of its post (docs/gateway.md#signed-in-shoppers-first).
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmulator } from '../dist/emulator.js';
import { checkoutRequest, offerBesideFlood, orderTokenMinter, quantile, SHOP } from './common.mjs';

const RUN = Math.random().toString(36).slice(2, 10);
const ORDER_SECRET = 'the-order-secret-of-the-bench-32chars';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The shop's receiver: the time each order's decision webhook arrived. */
async function receiver() {
  const decided = new Map();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const order = JSON.parse(body)?.data?.customerInternalReference;
      if (order && !decided.has(order)) decided.set(order, performance.now());
      res.writeHead(204).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { decided, url: `http://127.0.0.1:${server.address().port}/webhooks`, close: () => server.close() };
}

/** `node dist/cli.js serve --env-file …`; resolves with its URL once it listens. */
async function startGateway(env) {
  const file = join(mkdtempSync(join(tmpdir(), 'bbc-bench-gateway-')), 'gateway.env');
  writeFileSync(
    file,
    Object.entries(env)
      .map(([name, value]) => `${name}=${value}\n`)
      .join(''),
  );
  const child = spawn(process.execPath, ['dist/cli.js', 'serve', '--env-file', file], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const url = await new Promise((resolve, reject) => {
    const read = (chunk) => {
      out += chunk;
      const match = /^blackbox-capture gateway on (http:\/\/\S+)/m.exec(out);
      if (match) resolve(match[1]);
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('exit', (code) => reject(new Error(`the gateway exited (${code}) before listening:\n${out}`)));
  });
  const stop = () =>
    new Promise((resolve) => {
      child.once('exit', resolve);
      child.kill('SIGTERM');
    });
  return { url, child, stop };
}

async function scenario({
  name,
  signedIn,
  floodPerSecond = 20,
  floodAddresses = 400,
  everyMs = 2000,
  offerMs = 30_000,
  withinMs = 30_000,
}) {
  const emulator = await startEmulator();
  const shop = await receiver();
  const gateway = await startGateway({
    CLIENT_ID: emulator.clientId,
    CLIENT_SECRET: emulator.clientSecret,
    TOKEN_URL: emulator.tokenUrl,
    BASE_URL: emulator.serviceUrls.baseUrl,
    API_URL: emulator.serviceUrls.apiBaseUrl,
    RETRIEVAL_URL: emulator.serviceUrls.retrievalBaseUrl,
    COLLECTOR_URL: emulator.collectorUrl,
    WORKFLOW_KEY: '10011',
    ALLOWED_ORIGINS: SHOP,
    ORDER_SECRET,
    DECISION_URL: shop.url,
    WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 9).toString('base64')}`,
    PORT: '0',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'bbc-bench-gateway-data-')),
    TRUSTED_FRONTS: '127.0.0.1',
  });
  // An order token as a shop's back end mints it (docs/gateway.md#the-order-token): sub, uref when signed in.
  const mint = await orderTokenMinter();
  const orderToken = (sub, uref) =>
    mint(ORDER_SECRET, { customerInternalReference: sub, ...(uref ? { userReference: uref } : {}) });
  const post = async (key, sub, uref, from) =>
    fetch(
      checkoutRequest(`${gateway.url}/device-risk`, key, {
        'order-token': await orderToken(sub, uref),
        'x-forwarded-for': from,
      }),
    ).then(
      async (answer) => {
        await answer.body?.cancel();
        return answer.status;
      },
      () => 'network error',
    );
  const floodAnswers = {};
  const shopperAnswers = {};
  const posted = new Map();
  const count = (answers, status) => void (answers[status] = (answers[status] ?? 0) + 1);
  const { started, floodOffered, shoppersOffered } = await offerBesideFlood({
    floodPerSecond,
    everyMs,
    offerMs,
    flood: (i) => {
      const from = `10.0.${(i % floodAddresses) >> 8}.${(i % floodAddresses) & 255}`;
      return post(`flood-key-${i}-${RUN}`, `flood-${i}-${RUN}`, undefined, from).then((status) =>
        count(floodAnswers, status),
      );
    },
    shopper: (i) => {
      const order = `shopper-${i}-${RUN}`;
      const t0 = performance.now();
      const uref = signedIn ? `customer-${i}` : undefined;
      return post(`shopper-key-${i}-${RUN}`, order, uref, `198.51.100.${i + 1}`).then((status) => {
        count(shopperAnswers, status);
        if (status === 202) posted.set(order, t0);
      });
    },
  });
  // Every shopper has its whole `withinMs` from its post.
  const lastPost = Math.max(...posted.values(), started);
  while (performance.now() < lastPost + withinMs && [...posted.keys()].some((o) => !shop.decided.has(o)))
    await sleep(200);
  const times = [...posted].filter(([o]) => shop.decided.has(o)).map(([o, t0]) => (shop.decided.get(o) - t0) / 1000);
  const inTime = times.filter((t) => t <= withinMs / 1000);
  const floodDecided = [...shop.decided.keys()].filter((o) => o.startsWith('flood-')).length;
  await gateway.stop();
  shop.close();
  await emulator.close();
  return {
    name,
    floodOffered,
    floodAnswers,
    floodDecided,
    shoppersOffered,
    shopperAnswers,
    decidedInTime: inTime.length,
    p50: quantile(times, 0.5),
    p90: quantile(times, 0.9),
    max: times.length ? Math.max(...times) : NaN,
    withinS: withinMs / 1000,
    offerS: offerMs / 1000,
  };
}

/** The two rows: shoppers signed in (the target: at least 14 of 15 decided within 30 s), and as guests. */
export async function benchGatewayFlood(options = {}) {
  return [
    await scenario({ name: 'signed-in shoppers (uref) beside a guest-token flood', signedIn: true, ...options }),
    await scenario({ name: 'guest shoppers (no uref) beside the same flood', signedIn: false, ...options }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await benchGatewayFlood(), null, 1));
