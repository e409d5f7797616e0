// Server-side benchmark: the integrator endpoint and the first-party proxy, from the
// built dist/ files, against the emulator, with the load generator in its own process.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { startEmulator } from '../dist/emulator.js';
import { createDeviceRiskClient, createDeviceRiskHandler, createTokenSource, toNodeHandler } from '../dist/server.js';
import { nginxAvailable, startNginx } from '../test/support/nginx.mjs';
import { spawnListening } from '../test/support/processes.mjs';

/** A contracted limit far above what one machine offers: the kit's own throughput, not the tenant's. */
const UNLIMITED = { accountRequestsPerSecond: 1000, accountBurst: 50, retrievalsPerSecond: 1000 };

const BLACKBOX = '0400' + 'nVQ+/abcXYZ0123'.repeat(80) + '==';

function load(spec) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [new URL('./load.mjs', import.meta.url).pathname, JSON.stringify(spec)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`load generator exited ${code}`)),
    );
  });
}

async function listen(handler) {
  const server = createServer(handler);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { server, origin: `http://127.0.0.1:${server.address().port}` };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function benchEndpoint({ requests = 2000, concurrency = 32 } = {}) {
  const emulator = await startEmulator({ accountRequestsPerSecond: 0 });
  const userAgent = 'blackbox-capture-bench/1';
  const tokenSource = createTokenSource({
    clientId: emulator.clientId,
    clientSecret: emulator.clientSecret,
    tokenUrl: emulator.tokenUrl,
    userAgent,
  });
  // The emulator's limits are off here: the client's raised to match, so that the kit is measured.
  const client = createDeviceRiskClient({
    tokenSource,
    ...emulator.serviceUrls,
    userAgent,
    limits: UNLIMITED,
  });
  const site = await listen((req, res) => handler(req, res));
  const origin = site.origin;
  const handler = toNodeHandler(
    createDeviceRiskHandler({
      // The endpoint's own throughput: the check within the request, the service's limits off.
      answer: 'checked',
      client,
      allowedOrigins: [origin],
      workflowKey: 10011,
      resolveCustomer: () => ({ customerInternalReference: 'bench-customer' }),
      // The load comes from one address and one customer: admission would refuse all but a few.
      checkoutsPerAddress: false,
      checkoutsPerCustomer: false,
    }),
  );
  try {
    const stats = await load({
      url: `${origin}/device-risk`,
      method: 'POST',
      headers: { origin, 'content-type': 'application/json' },
      body: JSON.stringify({ blackbox: BLACKBOX }),
      uniqueKey: true,
      concurrency,
      total: requests,
    });
    const processed = emulator.inspect.transactions().filter((t) => t.status === 'PROCESSED').length;
    return {
      ...stats,
      concurrency,
      tokenRequests: emulator.inspect.requests('token'),
      transactionsProcessed: processed,
    };
  } finally {
    site.server.closeAllConnections();
    site.server.close();
    await emulator.close();
  }
}

/** The Node proxy in its own process (bench/proxy-process.mjs), as nginx is. */
async function startNodeProxy(collectorUrl) {
  const { child, port } = await spawnListening(new URL('./proxy-process.mjs', import.meta.url).pathname, [
    collectorUrl,
  ]);
  return { origin: `http://127.0.0.1:${port}`, stop: () => child.kill('SIGTERM') };
}

export async function benchProxy({ requests = 4000, concurrency = 32, rounds = 3 } = {}) {
  const emulator = await startEmulator();
  const proxy = await startNodeProxy(emulator.collectorUrl);
  const nginx = nginxAvailable() ? await startNginx(emulator.collectorUrl) : undefined;
  const path = '/general5/BENCH/static_wdp.js?loaderVer=5.2.2';
  const targets = {
    direct: `${emulator.collectorUrl}${path}`,
    node: `${proxy.origin}/iojs${path}`,
    ...(nginx ? { nginx: `${nginx.origin}/iojs${path}` } : {}),
  };
  const runs = Object.fromEntries(Object.keys(targets).map((k) => [k, []]));
  try {
    // Side by side: the three targets alternate in every round.
    for (let round = 0; round < rounds; round++) {
      for (const [name, url] of Object.entries(targets))
        runs[name].push(await load({ url, concurrency, total: requests }));
    }
  } finally {
    nginx?.stop();
    proxy.stop();
    await emulator.close();
  }
  const summary = {};
  for (const [name, list] of Object.entries(runs)) {
    summary[name] = {
      rps: median(list.map((r) => r.rps)),
      p50: median(list.map((r) => r.p50)),
      p99: median(list.map((r) => r.p99)),
      errors: list.reduce((a, r) => a + r.errors, 0),
    };
  }
  // Node ÷ nginx in each round (the two ran one after the other): the run-to-run spread of the ratio.
  const ratios = nginx ? runs.node.map((run, i) => run.rps / runs.nginx[i].rps) : undefined;
  const nodeToNginx = ratios && { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) };
  return { concurrency, requests, rounds, targets: summary, nginxAvailable: !!nginx, nodeToNginx };
}
