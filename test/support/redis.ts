// A real redis-server for a test file, and node-redis clients on it that fail fast while
// the server is away (as the README sets them up).
import { createClient } from 'redis';
import { REDIS_SERVER, redisAvailable, startRedis } from '../../scripts/redis.mjs';

export const haveRedis = (redisAvailable as () => boolean)();
if (!haveRedis && process.env.CI) throw new Error(`redis-server not found at ${REDIS_SERVER as string}; .ci/run installs redis-server`);

export type RedisServer = { port: number; url: string; stop(): Promise<void>; restart(downMs?: number): Promise<void> };
export const startRedisServer = startRedis as () => Promise<RedisServer>;

export type Client = ReturnType<typeof createClient>;

/** A connected client; `errors` collects what it reported while the server was away. */
export async function connect(url: string): Promise<Client & { errors: unknown[] }> {
  const errors: unknown[] = [];
  const client = createClient({ url, disableOfflineQueue: true, socket: { reconnectStrategy: () => 50 } });
  client.on('error', (error: unknown) => errors.push(error));
  await client.connect();
  return Object.assign(client, { errors });
}
