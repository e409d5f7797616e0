// One instance of the status peak (test/package/status-peak.test.ts): the built server kit
// on a shared Redis store and one BullMQ queue, at the service's documented limits, with the
// first-party proxy at /iojs, and the status monitor's /metrics and /status, as
// docs/operating.md#metrics-and-the-status-page sets them up. Configuration: one JSON
// argument. Prints "listening <port>" once it accepts requests.
import { createServer } from 'node:http';
import { createClient } from 'redis';
import { Redis as IoRedis } from 'ioredis';
import {
  createDeviceRiskClient,
  createDeviceRiskHandler,
  createFirstPartyProxy,
  createTokenSource,
  toNodeHandler,
} from '../../dist/server.js';
import { createRedisStore } from '../../dist/server-redis.js';
import { createBullmqQueue } from '../../dist/server-bullmq.js';
import { createMetricsHandler, createStatusHandler, createStatusMonitor } from '../../dist/server-status.js';

const config = JSON.parse(process.argv[2]);
const redis = createClient({ url: config.redisUrl });
redis.on('error', () => {});
await redis.connect();
const store = createRedisStore(redis, { prefix: 'bbc:' });
const userAgent = 'AcmeShop Checkout/1.0';
const client = createDeviceRiskClient({
  tokenSource: createTokenSource({ ...config.token, userAgent, store }),
  ...config.serviceUrls,
  userAgent,
  // The emulator's contract, 1 account request a second: the fleet admits by it (the test makes
  // the service refuse a few calls on its own, for the alert and panel on the service's refusals).
  limits: { accountRequestsPerSecond: 1, accountBurst: 10 },
});
const instanceId = `instance-${config.instance}`;
const handler = createDeviceRiskHandler({
  queue: createBullmqQueue({
    connection: new IoRedis(config.redisUrl, { maxRetriesPerRequest: null }),
    prefix: 'bbc',
    concurrency: 4,
    maxQueued: 100_000,
    onError: () => {},
  }),
  client,
  store,
  instanceId,
  maxQueuedMs: config.maxQueuedMs,
  allowedOrigins: ['https://shop.example'],
  workflowKey: 10020,
  checkoutsPerAddress: false,
  checkoutsPerCustomer: false,
  resolveCustomer: (request) => ({ customerInternalReference: request.headers.get('x-order') ?? 'order' }),
  onResult: () => {},
  resultWaitMs: 3000,
  // Each stale drop and backlog warning a line with its time, for the test to order them.
  onError: (error) => void process.stdout.write(`error ${Date.now()} ${error?.code ?? 'uncoded'}\n`),
});
const proxy = createFirstPartyProxy({ prefix: '/iojs', collectorUrl: config.collectorUrl });
const monitor = createStatusMonitor({ store, instanceId, sampleIntervalMs: 1000 });
const routes = {
  '/device-risk': toNodeHandler(handler),
  '/metrics': toNodeHandler(createMetricsHandler({ monitor })),
  '/status': toNodeHandler(createStatusHandler({ monitor, instanceId })),
};
const proxied = toNodeHandler(proxy);
const server = createServer((request, response) => {
  const path = new URL(request.url, 'http://x').pathname;
  (routes[path] ?? proxied)(request, response);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
