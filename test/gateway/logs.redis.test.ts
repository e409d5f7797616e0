// `blackbox-capture serve` with LOG_FORMAT=json as a process, on a real redis-server that is
// stopped under it: every line it writes on stderr is one JSON object (time, level, event, …),
// the Redis failures through the same log and at most one per code each 10 s, never a stack
// (docs/gateway.md#logs); and SIGTERM's lines are JSON too.
import { afterEach, describe, expect, it } from 'vitest';
import { useGateway } from '../support/gateway.js';
import { haveRedis, startRedisServer, type RedisServer } from '../support/redis.js';

let redis: RedisServer | undefined;
afterEach(async () => {
  await redis?.stop();
  redis = undefined;
});
const { served } = useGateway();

/** The process's lines but the one stdout line that says where it listens. */
const logLines = (output: string) =>
  output.split('\n').filter((line) => line !== '' && !line.startsWith('blackbox-capture gateway on '));

describe.skipIf(!haveRedis)('the gateway log as JSON lines, with its Redis gone (a process)', () => {
  it('writes only JSON objects, Redis failures rate-limited, SIGTERM told as JSON too', async () => {
    redis = await startRedisServer();
    const { gateway } = await served({ REDIS_URL: redis.url, LOG_FORMAT: 'json', SHUTDOWN_TIMEOUT_MS: '3000' });
    await expect.poll(async () => (await fetch(`${gateway.url}/readyz`)).status, { timeout: 10_000 }).toBe(200);
    await redis.stop();
    redis = undefined;
    const down = Date.now();
    // The readiness probe and the queue's worker meet the refused connections at once.
    await expect.poll(() => gateway.output(), { timeout: 15_000 }).toContain('ECONNREFUSED');
    const started = Date.now();
    // Several seconds of a Redis refusing every connection of every client.
    await expect.poll(() => Date.now() - started, { timeout: 10_000, interval: 500 }).toBeGreaterThan(4000);
    gateway.child.kill('SIGTERM');
    await gateway.exited;
    const windows = Math.ceil((Date.now() - down) / 10_000);
    const lines = logLines(gateway.output());
    const entries = lines.map((line) => {
      const entry = JSON.parse(line) as Record<string, unknown>;
      expect(Object.keys(entry).slice(0, 3)).toEqual(['time', 'level', 'event']);
      expect(typeof entry.message).toBe('string');
      return entry as { time: string; level: string; event: string; code?: string; message: string };
    });
    // At most one line per code in each 10 s window the process lived through without its Redis,
    // and the lines the last window held back said as it closes, with their count.
    const refused = entries.filter((entry) => entry.code === 'ECONNREFUSED');
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.length, JSON.stringify(refused)).toBeLessThanOrEqual(windows + 1);
    expect(refused.at(-1)!.message).toMatch(/ \(and \d+ more like it, held back\)$/);
    expect(entries.every((entry) => !entry.message.includes('\n    at '))).toBe(true);
    expect(entries.filter((entry) => entry.event === 'stop').map((entry) => entry.message)[0]).toMatch(/^SIGTERM: /);
  }, 90_000);
});
