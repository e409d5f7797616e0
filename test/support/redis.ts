// A real redis-server for a test file, and node-redis clients on it that fail fast while
// the server is away (as the README sets them up).
import { createClient } from 'redis';
import { afterAll, beforeAll } from 'vitest';
import { REDIS_CLI, REDIS_SERVER, redisAvailable, startRedis } from './redis-server.mjs';

export const haveRedis = redisAvailable();
if (!haveRedis && process.env.CI)
  throw new Error(`redis-server or redis-cli not found (${REDIS_SERVER}, ${REDIS_CLI}); .ci/run installs redis-server`);

export type RedisServer = Awaited<ReturnType<typeof startRedis>>;
export const startRedisServer = startRedis;

export type Client = Awaited<ReturnType<typeof connect>>;

/**
 * A redis-server for the whole test file (when this machine has one), and `connect()`ed clients
 * on it, all closed after the file. `url()` is the server's.
 */
export function useRedisServer() {
  let redis: RedisServer | undefined;
  const clients: Client[] = [];
  beforeAll(async () => {
    if (haveRedis) redis = await startRedisServer();
  });
  afterAll(async () => {
    for (const client of clients.splice(0)) await client.close().catch(() => {});
    await redis?.stop();
  });
  return {
    url: () => redis!.url,
    async connect(): Promise<Client> {
      const client = await connect(redis!.url);
      clients.push(client);
      return client;
    },
  };
}

/** A connected client; `errors` collects what it reported while the server was away. */
export async function connect(url: string) {
  const errors: unknown[] = [];
  const client = createClient({ url, disableOfflineQueue: true, socket: { reconnectStrategy: () => 50 } });
  client.on('error', (error: unknown) => errors.push(error));
  await client.connect();
  return Object.assign(client, { errors });
}
