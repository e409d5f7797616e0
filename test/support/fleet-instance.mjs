// One endpoint instance of a fleet, as a process of its own: the built server kit (dist/)
// on node-redis, set up as the README's "Running on several instances" says. Used by
// test/package/fleet.test.ts and the fleet row of `npm run bench`.
// Configuration: one JSON argument. Prints "listening <port>" once it accepts requests.
import { createServer } from 'node:http';
import { createClient } from 'redis';
import {
  createCallbackHandler,
  createDeviceRiskClient,
  createDeviceRiskHandler,
  createMemoryStore,
  createTokenSource,
  toNodeHandler,
} from '../../dist/server.js';
import { createRedisStore } from '../../dist/server-redis.js';
import { createBullmqQueue } from '../../dist/server-bullmq.js';
import { Redis as IoRedis } from 'ioredis';

const config = JSON.parse(process.argv[2]);
let store = createMemoryStore();
if (config.redisUrl) {
  // Fail fast while Redis is away (no offline queue): the kit answers 503 with Retry-After.
  const redis = createClient({
    url: config.redisUrl,
    disableOfflineQueue: true,
    socket: { reconnectStrategy: (retries) => Math.min(50 * retries, 500) },
  });
  redis.on('error', () => {}); // reconnects by itself; the kit reports failed operations
  await redis.connect();
  store = createRedisStore(redis, { prefix: config.prefix ?? 'bbc:' });
}
const userAgent = 'AcmeShop Checkout/1.0';
const tokenSource = createTokenSource({
  clientId: config.clientId,
  clientSecret: config.clientSecret,
  tokenUrl: config.tokenUrl,
  userAgent,
  store,
});
// One attempt per upstream call: the fleet test's client retries on the next instance.
// An account create is given up after 3 s: a key whose owner dies with one on the wire waits that long (and a lease) before another is made.
const client = createDeviceRiskClient({
  tokenSource,
  ...config.serviceUrls,
  userAgent,
  maxAttempts: config.maxAttempts ?? 1,
  accountTimeoutMs: config.accountTimeoutMs ?? 3000,
  // The emulator's account limit is off for the fleet's tests: so is the client's (the quota
  // bench passes the documented ones).
  limits: config.limits ?? { accountRequestsPerSecond: 100, accountBurst: 50 },
});
// With `queue`: the accepted answer (202) and the fleet's BullMQ queue, as docs/fleet.md#the-queue
// sets it up; a killed instance's jobs are taken over after a lock of 1 s (`stalledIntervalMs`
// may be raised to switch that recovery off, to see the chaos test fail without it).
const queue = config.queue
  ? createBullmqQueue({
      connection: new IoRedis(config.redisUrl, { maxRetriesPerRequest: null }),
      prefix: config.prefix ?? 'bbc',
      concurrency: 4,
      maxQueued: config.maxQueued,
      lockDurationMs: config.lockDurationMs ?? 1000,
      stalledIntervalMs: config.stalledIntervalMs ?? 500,
      // Each worker failure a line, for the fleet test to show when a decision never came.
      onError: (error) => void process.stdout.write(`error queue ${JSON.stringify(String(error?.message ?? error))}\n`),
    })
  : undefined;
const handler = createDeviceRiskHandler({
  ...(queue ? { queue } : { answer: 'checked' }),
  client,
  store,
  allowedOrigins: ['https://shop.example'],
  workflowKey: 10020,
  idempotencyLeaseMs: config.leaseMs ?? 10_000,
  // Every shopper of the fleet tests comes from 127.0.0.1, each order retried on any instance:
  // the fleet's guarantees are tested here, admission in the endpoint's own tests.
  checkoutsPerAddress: false,
  checkoutsPerCustomer: false,
  // userReference names the instance: the emulator's records then say which instance made each transaction.
  resolveCustomer: (request) => ({
    customerInternalReference: request.headers.get('x-order') ?? 'order',
    userReference: `instance-${config.instance ?? 0}`,
  }),
  reportStatus: false,
  // Each decision told to onResult, a line per call, for the fleet test to count per key.
  ...(queue && {
    onResult: (_details, { customerInternalReference }) =>
      void process.stdout.write(`decided ${customerInternalReference}\n`),
  }),
  // Orphans the kit knows of are reported: one line each, for the fleet test to count.
  // Anything else the endpoint reports, a line each: what the fleet test shows when a decision never came.
  onError: (error) =>
    void process.stdout.write(
      error?.code === 'orphaned_transaction'
        ? `orphan ${JSON.stringify(error.message)}\n`
        : `error ${error?.code ?? 'uncoded'} ${JSON.stringify(String(error?.message ?? error))}\n`,
    ),
});
// The service's callbacks, at /callback. onResult fails every `callbackFailEvery`-th try, and
// prints each try and each success for the fleet test to count.
let tries = 0;
const callbacks = createCallbackHandler({
  client,
  store,
  allowedSources: 'any',
  leaseMs: config.leaseMs ?? 60_000,
  retryDelayMs: 200,
  maxRetryDelayMs: 1000,
  sweepIntervalMs: config.sweepIntervalMs ?? 30_000,
  onError: () => {},
  onResult: async ({ workflowExecutionId }) => {
    process.stdout.write(`try ${workflowExecutionId}\n`);
    if (config.callbackFailEvery && ++tries % config.callbackFailEvery === 0) throw new Error('busy');
    // A decision takes a while: an instance killed meanwhile leaves the callback half done.
    await new Promise((resolve) => setTimeout(resolve, 20));
    process.stdout.write(`result ${workflowExecutionId}\n`);
  },
});
const endpoint = toNodeHandler(handler);
const callbackEndpoint = toNodeHandler(callbacks);
const server = createServer((request, response) =>
  (request.url === '/callback' ? callbackEndpoint : endpoint)(request, response),
);
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
