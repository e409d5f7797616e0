// One token source as a process of its own: the built server kit on node-redis, as the
// README sets up a fleet. Configuration: one JSON argument ({ redisUrl, clientId,
// clientSecret, tokenUrl }). Prints one JSON line: { token } or { code, status }.
import { createClient } from 'redis';
import { createTokenSource } from '../../dist/server.js';
import { createRedisStore } from '../../dist/server-redis.js';

const config = JSON.parse(process.argv[2]);
const redis = createClient({ url: config.redisUrl, disableOfflineQueue: true });
redis.on('error', () => {});
await redis.connect();
const tokens = createTokenSource({ ...config, userAgent: 'AcmeShop Checkout/1.0', store: createRedisStore(redis) });
try {
  process.stdout.write(JSON.stringify({ token: await tokens.getToken() }) + '\n');
} catch (error) {
  process.stdout.write(JSON.stringify({ code: error.code, status: error.status }) + '\n');
} finally {
  await redis.quit();
}
