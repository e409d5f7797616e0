// One blackbox, one transaction across a fleet (src/server/endpoint/reuse.ts, #54): two
// endpoint instances sharing a real redis-server; a blackbox checked on one is refused under
// another Idempotency-Key on the other (422 blackbox_reused), also when both arrive at once,
// and Redis holds its digest, never the blackbox itself.
import { describe, expect, it } from 'vitest';
import { createMemoryQueue, type DeviceRiskHandlerOptions } from '../../../src/server/index.js';
import { createRedisStore } from '../../../src/server/store/redis.js';
import { haveRedis, useRedisServer } from '../../support/redis.js';
import { blackboxOf, handlerWith, SHOP } from '../../support/kit.js';
import { stubClient } from '../../support/stub-client.js';

const redis = useRedisServer();

/** Two instances on one Redis (each its own connection), one service: what each refused is told. */
async function fleet(prefix: string, extra: Partial<DeviceRiskHandlerOptions> = {}) {
  const service = stubClient();
  const errors: Array<{ code?: string }> = [];
  const instance = async () => {
    const client = await redis.connect();
    return handlerWith(service.client, {
      store: createRedisStore(client, { prefix }),
      onError: (e) => void errors.push(e as { code?: string }),
      ...extra,
    });
  };
  return { a: await instance(), b: await instance(), service, errors };
}

const post = (key: string, blackbox: string) =>
  new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ blackbox }),
  });
const codeOf = async (answer: Response) =>
  answer.status < 300 ? answer.status : ((await answer.json()) as { error: { code: string } }).error.code;

describe.skipIf(!haveRedis)('a used blackbox on a fleet sharing Redis', () => {
  it('checked on one instance, refused under another key on the other; the retry stays the same checkout', async () => {
    const { a, b, service, errors } = await fleet('reuse1:');
    const blackbox = blackboxOf('order-a');
    expect(await codeOf(await a(post('checkout-key-a', blackbox)))).toBe(200);
    expect(await codeOf(await b(post('checkout-key-a', blackbox)))).toBe(200);
    expect(await codeOf(await b(post('checkout-key-b', blackbox)))).toBe('blackbox_reused');
    expect(service.creates()).toBe(1);
    expect(errors.map((e) => e.code)).toEqual(['blackbox_reused']);
    // Redis holds the digest and the key that used it, never the blackbox.
    const admin = await redis.connect();
    const keys = await admin.keys('reuse1:*blackbox*');
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(/^reuse1:client-1:blackbox:[0-9a-f]{64}$/);
    expect(await admin.get(keys[0]!)).toBe('checkout-key-a');
    expect(await admin.pTTL(keys[0]!)).toBeGreaterThan(14 * 60_000);
    expect(await admin.pTTL(keys[0]!)).toBeLessThanOrEqual(15 * 60_000);
    for (const key of await admin.keys('reuse1:*')) {
      const type = await admin.type(key);
      if (type === 'string') expect(await admin.get(key)).not.toContain(blackbox.slice(0, 40));
    }
  });

  it('the same blackbox under two keys at once on two instances: one transaction, one refusal', async () => {
    const { a, b, service } = await fleet('reuse2:', { answer: 'accepted', queue: createMemoryQueue() });
    const blackbox = blackboxOf('order-b');
    const answers = await Promise.all([a(post('race-key-a', blackbox)), b(post('race-key-b', blackbox))]);
    const codes = await Promise.all(answers.map(codeOf));
    expect(codes.sort()).toEqual([202, 'blackbox_reused'].sort());
    await expect.poll(service.creates).toBe(1);
    await Promise.all([a.close(), b.close()]);
    expect(service.creates()).toBe(1);
  });
});
