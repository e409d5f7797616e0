// Checkouts at the service's real limits (#47): the emulator at its defaults (account requests
// 1 a second, bursts of 10; retrieval 15 a second), checkouts offered at 3× and 20× the
// account limit for `offerMs`, then `drainMs` more to check what was accepted. Set-ups: one
// instance on its memory queue, four instances on one Redis with BullMQ, and one instance
// with the check within the request (`answer: 'checked'`, the former default) whose browser
// posts up to four times as the browser package does. From dist/, in one process.
import { startEmulator } from '../dist/emulator.js';
import { createDeviceRiskHandler, createMemoryQueue } from '../dist/server.js';
import { redisAvailable, startRedis } from '../test/support/redis-server.mjs';
import { withBrowserRetries } from '../test/support/browser-retries.mjs';
import { checkoutRequest, quantile, SHOP, benchClient } from './common.mjs';

/** The browser package's retries (test/support/browser-retries.mjs), each answer awaited. */
async function browserPost(handler, key, order) {
  const { response, attempts } = await withBrowserRetries(async () => {
    const answer = await handler(checkoutRequest(`${SHOP}/device-risk`, key, { 'x-order': order }), {
      clientAddress: '127.0.0.1',
    });
    if (!answer.ok && process.env.BENCH_DEBUG) console.error(answer.status, await answer.clone().text());
    return answer;
  });
  return { status: response.status, attempts };
}

/**
 * One run: `instances` handlers made by `make`, checkouts offered round-robin at `rate` a
 * second for `offerMs`, the backlog sampled every second until `drainMs` after the offer.
 */
async function run({ name, rate, offerMs, drainMs, instances }) {
  if (process.env.BENCH_SETUPS && !name.includes(process.env.BENCH_SETUPS)) return undefined;
  const emulator = await startEmulator();
  const decided = new Map();
  const offered = new Map();
  const refusals = { service: 0, queueFull: 0, stale: 0, behind: 0 };
  const onError = (error) => {
    if (process.env.BENCH_DEBUG) console.error('onError', error?.code, error?.operation, error?.message);
    if (error?.code === 'rate_limited') refusals.service++;
    if (error?.code === 'queue_full') refusals.queueFull++;
    if (error?.code === 'blackbox_stale') refusals.stale++;
    if (error?.code === 'backlog_behind') refusals.behind++;
  };
  const client = () => benchClient(emulator);
  const common = {
    allowedOrigins: [SHOP],
    workflowKey: 10011,
    checkoutsPerAddress: false,
    checkoutsPerCustomer: false,
    resolveCustomer: (request) => ({ customerInternalReference: request.headers.get('x-order') }),
    onError,
    onResult: (_details, { customerInternalReference }) => {
      if (!decided.has(customerInternalReference)) decided.set(customerInternalReference, performance.now());
    },
  };
  const set = await instances({ client, common });
  const backlog = [];
  const started = performance.now();
  const sampler = setInterval(async () => {
    const figures = await Promise.all(set.handlers.map((h) => h.backlog()));
    backlog.push({
      s: Math.round((performance.now() - started) / 1000),
      queued: set.shared ? figures[0].queued : figures.reduce((n, f) => n + f.queued, 0),
      oldestAgeMs: Math.max(...figures.map((f) => f.oldestAgeMs)),
    });
  }, 1000);
  const posts = [];
  const accepts = [];
  const total = Math.round((rate * offerMs) / 1000);
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const order = `order-${i}`;
    const t0 = performance.now();
    offered.set(order, t0);
    posts.push(
      browserPost(set.handlers[i % set.handlers.length], `bench-key-${i}-${Math.random()}`, order).then((answer) => {
        accepts.push({ ...answer, ms: performance.now() - t0 });
      }),
    );
  }
  await Promise.all(posts);
  if (process.env.BENCH_DEBUG)
    console.error(
      'transactions',
      JSON.stringify(
        emulator.inspect.transactions().map((t) => [t.customerInternalReference, t.status, t.blackboxes.length]),
      ),
      ['token', 'accountCreate', 'upload', 'finalize', 'retrievalStatus', 'details']
        .map((r) => r + '=' + emulator.inspect.requests(r))
        .join(' '),
    );
  const drainUntil = started + offerMs + drainMs;
  while (performance.now() < drainUntil && decided.size < accepts.filter((a) => a.status < 300).length)
    await new Promise((r) => setTimeout(r, 200));
  clearInterval(sampler);
  const left = await Promise.all(set.handlers.map((h) => h.backlog()));
  await set.close();
  const perKey = new Map();
  for (const tx of emulator.inspect.transactions()) {
    if (!tx.blackboxes.length) continue;
    perKey.set(tx.customerInternalReference, (perKey.get(tx.customerInternalReference) ?? 0) + 1);
  }
  await emulator.close();
  const accepted = accepts.filter((a) => a.status < 300);
  const toDecision = [...decided].map(([order, at]) => at - offered.get(order));
  const queuedLeft = set.shared ? left[0].queued : left.reduce((n, f) => n + f.queued, 0);
  // Each instance of a shared queue gives the fleet's rate (its own times the workers): the mean of them.
  const drainPerSecond = set.shared
    ? left.reduce((n, f) => n + f.drainPerSecond, 0) / left.length
    : left.reduce((n, f) => n + f.drainPerSecond, 0);
  return {
    name,
    rate,
    offered: total,
    accepted: accepted.length,
    acceptedShare: accepted.length / total,
    acceptP50: quantile(
      accepts.map((a) => a.ms),
      0.5,
    ),
    acceptP99: quantile(
      accepts.map((a) => a.ms),
      0.99,
    ),
    attemptsMax: Math.max(...accepts.map((a) => a.attempts)),
    decided: decided.size,
    decisionP50: quantile(toDecision, 0.5),
    decisionP99: quantile(toDecision, 0.99),
    queuedLeft,
    drainPerSecond,
    serviceRefusals: refusals.service,
    queueFull: refusals.queueFull,
    stale: refusals.stale,
    backlogWarnings: refusals.behind,
    transactionsPerKeyMax: Math.max(0, ...perKey.values()),
    backlog,
  };
}

const oneInstance = async ({ client, common }) => {
  const handler = createDeviceRiskHandler({ ...common, client: client(), queue: createMemoryQueue() });
  return { handlers: [handler], shared: false, close: () => handler.close() };
};

const oneInstanceChecked = async ({ client, common }) => {
  const handler = createDeviceRiskHandler({ ...common, client: client(), answer: 'checked' });
  return { handlers: [handler], shared: false, close: () => handler.close() };
};

/** Four handlers, each its own client, token source and Redis connections, on one Redis and one BullMQ queue. */
function fleetOnRedis(redisUrl) {
  let run = 0;
  return async ({ client, common }) => {
    const { Redis } = await import('ioredis');
    const { createRedisStore } = await import('../dist/server-redis.js');
    const { createBullmqQueue } = await import('../dist/server-bullmq.js');
    const name = `bench-${Date.now()}-${run++}`;
    const connections = [];
    const handlers = [];
    for (let i = 0; i < 4; i++) {
      const storeClient = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
      const bull = new Redis(redisUrl, { maxRetriesPerRequest: null });
      connections.push(storeClient, bull);
      handlers.push(
        createDeviceRiskHandler({
          ...common,
          client: client(),
          store: createRedisStore(storeClient, { prefix: `${name}:` }),
          queue: createBullmqQueue({ connection: bull, name, onError: () => {} }),
        }),
      );
    }
    return {
      handlers,
      shared: true,
      async close() {
        for (const handler of handlers) await handler.close();
        for (const connection of connections) connection.disconnect();
      },
    };
  };
}

export async function benchQueue({ offerMs = 20_000, drainMs = 30_000 } = {}) {
  const rows = [];
  const redis = redisAvailable() ? await startRedis() : undefined;
  try {
    for (const rate of [3, 20]) {
      rows.push(await run({ name: '1 instance, memory queue', rate, offerMs, drainMs, instances: oneInstance }));
      if (redis)
        rows.push(
          await run({
            name: '4 instances, BullMQ on one Redis',
            rate,
            offerMs,
            drainMs,
            instances: fleetOnRedis(redis.url),
          }),
        );
      rows.push(
        await run({
          name: '1 instance, check within the request',
          rate,
          offerMs,
          drainMs,
          instances: oneInstanceChecked,
        }),
      );
    }
  } finally {
    await redis?.stop();
  }
  return {
    limits: { accountRequestsPerSecond: 1, accountBurst: 10, retrievalPerSecond: 15 },
    offerMs,
    drainMs,
    rows: rows.filter(Boolean),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await benchQueue({
    offerMs: Number(process.env.OFFER_MS ?? 20_000),
    drainMs: Number(process.env.DRAIN_MS ?? 30_000),
  });
  console.log(JSON.stringify(result, null, 1));
}
