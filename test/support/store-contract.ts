// The Store contract, for every store and client the kit supports: run by
// test/server/store/redis.redis.test.ts (memory, node-redis, ioredis) and
// test/server/store/redis-cluster.redis.test.ts (both clients on a Redis Cluster). Its cases
// are runtimes/store-contract.mjs, which the runtimes step runs in Node, Deno and Bun too.
import { it } from 'vitest';
import type { Store } from '../../src/server/index.js';
import { STORE_CONTRACT } from '../../runtimes/store-contract.mjs';

export function storeContract(make: () => Promise<Store>): void {
  for (const [name, check] of STORE_CONTRACT) it(name, async () => check(await make()));
}
