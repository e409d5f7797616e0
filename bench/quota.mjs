// The account quota spent (#58): the emulator at the service's default limits (account
// requests 1 a second, bursts of 10), a backlog far larger than the limit drains for `spanMs`,
// and the account requests the service took in each second are counted, once the burst is
// spent. Set-ups: one instance on its memory queue, in this process; four instance processes
// on one Redis with BullMQ (test/support/fleet.mjs), sharing the limit through Redis. Both
// with the client's defaults (1 a second, bursts of 5). Then floods beside honest shoppers:
// one instance, memory queue, admission at its defaults (IPv6 grouped by /64).
import { startEmulator } from '../dist/emulator.js';
import { createDeviceRiskHandler, createMemoryQueue } from '../dist/server.js';
import { redisAvailable, startRedis } from '../test/support/redis-server.mjs';
import { checkoutRequest, offerBesideFlood, quantile, SHOP, benchClient } from './common.mjs';
import { fleetConfig, startFleet } from '../test/support/fleet.mjs';

const RUN = Math.random().toString(36).slice(2, 10);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const post = (handler, key, order, clientAddress, session) =>
  handler(
    checkoutRequest(`${SHOP}/device-risk`, key, {
      'x-order': order,
      ...(session ? { cookie: `shop_session=${session}` } : {}),
    }),
    { clientAddress },
  );

/** The shop's visitor (the handler's `visitor`): its session cookie, as a shop whose checkout page sets one. */
const sessionOf = (request) => /(?:^|;\s*)shop_session=([^;]+)/.exec(request.headers.get('cookie') ?? '')?.[1];

/**
 * Transactions the service made (account requests it took) and the account requests it
 * refused, sampled every second for `spanMs` after `settleMs` (the burst spent): the rate in
 * each 10 s, and over the whole span.
 */
async function measureSpend(emulator, { settleMs, spanMs }) {
  const taken = () => emulator.inspect.transactions().length;
  const sent = () => emulator.inspect.requests('accountCreate');
  await sleep(settleMs);
  const samples = [];
  const t0 = performance.now();
  for (let s = 0; s <= spanMs / 1000; s++) {
    const due = t0 + s * 1000;
    if (due > performance.now()) await sleep(due - performance.now());
    samples.push({ s, at: performance.now(), taken: taken(), refused: sent() - taken() });
  }
  const first = samples[0];
  const last = samples.at(-1);
  const per10 = [];
  for (let i = 10; i < samples.length; i += 10)
    per10.push((samples[i].taken - samples[i - 10].taken) / ((samples[i].at - samples[i - 10].at) / 1000));
  return {
    perSecond: (last.taken - first.taken) / ((last.at - first.at) / 1000),
    per10Min: Math.min(...per10),
    per10Max: Math.max(...per10),
    taken: last.taken - first.taken,
    refused: last.refused,
    spanS: (last.at - first.at) / 1000,
  };
}

async function oneInstance({ backlog, settleMs, spanMs }) {
  const emulator = await startEmulator();
  const handler = createDeviceRiskHandler({
    allowedOrigins: [SHOP],
    workflowKey: 10011,
    checkoutsPerAddress: false,
    checkoutsPerCustomer: false,
    client: benchClient(emulator),
    queue: createMemoryQueue(),
    resolveCustomer: (request) => ({ customerInternalReference: request.headers.get('x-order') }),
    onError: () => {},
  });
  try {
    const answers = await Promise.all(
      Array.from({ length: backlog }, (_, i) => post(handler, `quota-key-${i}-${RUN}`, `order-${i}`, '127.0.0.1')),
    );
    const accepted = answers.filter((a) => a.status === 202).length;
    return { name: '1 instance, memory queue', accepted, ...(await measureSpend(emulator, { settleMs, spanMs })) };
  } finally {
    await handler.close();
    await emulator.close();
  }
}

async function fourProcesses({ backlog, settleMs, spanMs }) {
  if (!redisAvailable()) return undefined;
  const redis = await startRedis();
  const emulator = await startEmulator();
  const fleet = await startFleet(4, {
    ...fleetConfig(emulator, { redisUrl: redis.url, queue: true, maxQueued: 100_000 }),
    // The client's defaults: the documented limits, 3 attempts, an account call of 60 s.
    limits: { accountRequestsPerSecond: 1, accountBurst: 5 },
    maxAttempts: 3,
    accountTimeoutMs: 60_000,
  });
  try {
    let accepted = 0;
    for (let i = 0; i < backlog; i += 20) {
      const answers = await Promise.all(
        Array.from({ length: Math.min(20, backlog - i) }, (_, j) =>
          fetch(
            checkoutRequest(fleet.instances[(i + j) % 4].url, `fleet-key-${i + j}-${RUN}`, { 'x-order': `f-${i + j}` }),
          ).then((r) => r.status),
        ),
      );
      accepted += answers.filter((s) => s === 202).length;
    }
    return {
      name: '4 processes, BullMQ on one Redis',
      accepted,
      ...(await measureSpend(emulator, { settleMs, spanMs })),
    };
  } finally {
    await fleet.stop();
    await emulator.close();
    await redis.stop();
  }
}

export async function benchQuota({ backlog = 150, settleMs = 15_000, spanMs = 60_000 } = {}) {
  const rows = [await oneInstance({ backlog, settleMs, spanMs }), await fourProcesses({ backlog, settleMs, spanMs })];
  return {
    limit: { accountRequestsPerSecond: 1, serviceBurst: 10, clientBurst: 5 },
    backlog,
    settleMs,
    spanMs,
    rows: rows.filter(Boolean),
  };
}

/**
 * Honest shoppers (one checkout every `honestEveryMs`, each from an IPv4 address of its own)
 * beside a flood of `floodPerSecond` checkouts for `offerMs`: from addresses of one IPv6 /64,
 * from a new IPv4 address each, or none. Honest shoppers' time from post to decision.
 * `session`: the handler admits by the shop's session (`visitor`); honest shoppers carry the
 * session their checkout page set, the flood none (it posts without loading the shop's pages).
 */
async function flood({
  name,
  floodAddress,
  session = false,
  floodPerSecond = 20,
  honestEveryMs = 2000,
  offerMs = 20_000,
  drainMs = 60_000,
}) {
  const emulator = await startEmulator();
  const decided = new Map();
  const errors = {};
  const handler = createDeviceRiskHandler({
    allowedOrigins: [SHOP],
    workflowKey: 10011,
    client: benchClient(emulator),
    queue: createMemoryQueue(),
    ...(session ? { visitor: sessionOf } : {}),
    resolveCustomer: (request) => ({ customerInternalReference: request.headers.get('x-order') }),
    onError: (error) => void (errors[error?.code] = (errors[error?.code] ?? 0) + 1),
    onResult: (_details, { customerInternalReference }) => {
      if (!decided.has(customerInternalReference)) decided.set(customerInternalReference, performance.now());
    },
  });
  const honest = new Map();
  const floodAnswers = {};
  const honestAnswers = {};
  const { started, floodOffered, shoppersOffered } = await offerBesideFlood({
    floodPerSecond,
    everyMs: honestEveryMs,
    offerMs,
    flood:
      floodAddress &&
      ((i) =>
        post(handler, `flood-key-${i}-${RUN}`, `flood-${i}`, floodAddress(i)).then((a) => {
          floodAnswers[a.status] = (floodAnswers[a.status] ?? 0) + 1;
        })),
    shopper: (i) => {
      const order = `honest-${i}`;
      const t0 = performance.now();
      const cookie = session ? `honest-session-${i}-${RUN}` : undefined;
      return post(handler, `honest-key-${i}-${RUN}`, order, `198.51.100.${i + 1}`, cookie).then((a) => {
        honestAnswers[a.status] = (honestAnswers[a.status] ?? 0) + 1;
        if (a.status === 202) honest.set(order, t0);
      });
    },
  });
  const until = started + offerMs + drainMs;
  while (performance.now() < until && [...honest.keys()].some((o) => !decided.has(o))) await sleep(200);
  const backlog = await handler.backlog();
  await handler.close();
  await emulator.close();
  const times = [...honest].filter(([o]) => decided.has(o)).map(([o, t0]) => (decided.get(o) - t0) / 1000);
  return {
    name,
    floodOffered,
    floodAnswers,
    honestOffered: shoppersOffered,
    honestAnswers,
    honestDecided: times.length,
    honestP50: quantile(times, 0.5),
    honestP90: quantile(times, 0.9),
    honestMax: times.length ? Math.max(...times) : NaN,
    queuedLeft: backlog.queued,
    errors,
  };
}

export async function benchFloods(options = {}) {
  const hex = (n) => n.toString(16);
  const slash64 = (i) => `2001:db8:1:2:${hex(1 + (i >> 16))}:${hex(i & 0xffff)}:${hex((i * 7919) & 0xffff)}:1`;
  const manyAddresses = (i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
  const rows = [];
  for (const session of [false, true]) {
    const by = session ? ', admitted by session' : '';
    rows.push(
      await flood({ name: `honest shoppers alone${by}`, floodAddress: undefined, session, ...options }),
      await flood({
        name: `beside a /64 flood (20 a second, a new address of one /64 each)${by}`,
        floodAddress: slash64,
        session,
        ...options,
      }),
      await flood({
        name: `beside a many-address flood (20 a second, a new IPv4 address each)${by}`,
        floodAddress: manyAddresses,
        session,
        ...options,
      }),
    );
  }
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const only = process.argv[2];
  const result = {};
  if (only !== 'floods') result.quota = await benchQuota({ spanMs: Number(process.env.SPAN_MS ?? 60_000) });
  if (only !== 'quota') result.floods = await benchFloods({ drainMs: Number(process.env.DRAIN_MS ?? 60_000) });
  console.log(JSON.stringify(result, null, 1));
}
