// GET /readyz apart from GET /healthz, with `blackbox-capture serve` as a process of its own
// on the emulated service (docs/gateway.md#readiness): ready once the store, the queue, the
// client credentials and the outbox are fine; a wrong CLIENT_SECRET reads token_rejected
// within seconds, logged once, while /healthz stays 200.
import { describe, expect, it } from 'vitest';
import { useGateway } from '../support/gateway.js';
import { offDocument } from '../support/openapi.js';

const { served } = useGateway();

const ready = async (url: string) => {
  const answer = await fetch(`${url}/readyz`);
  return { status: answer.status, body: (await answer.json()) as { status: string; code?: string; checks: object } };
};

describe('GET /readyz (serve as a process)', () => {
  it('is 200 with each check named once the credentials are taken, on both listeners; as documented', async () => {
    const { emulator, gateway } = await served({ ADMIN_PORT: '0' });
    await expect.poll(async () => (await ready(gateway.url)).status, { timeout: 10_000 }).toBe(200);
    expect((await ready(gateway.url)).body).toEqual({
      status: 'ready',
      checks: { store: 'ok', queue: 'ok', token: 'ok', outbox: 'ok' },
    });
    expect((await ready(gateway.adminUrl!)).status).toBe(200);
    expect(await offDocument('/readyz', 'get', await fetch(`${gateway.url}/readyz`))).toEqual([]);
    // Tried at start, before any checkout.
    expect(emulator.inspect.requests('token')).toBe(1);
    expect(gateway.output()).not.toContain('client credentials');
  });

  it('reads token_rejected within seconds for a wrong CLIENT_SECRET, logged once; /healthz stays 200', async () => {
    const { emulator, gateway } = await served({ CLIENT_SECRET: 'not-the-secret' });
    await expect.poll(async () => (await ready(gateway.url)).body.code, { timeout: 10_000 }).toBe('token_rejected');
    const answer = await fetch(`${gateway.url}/readyz`);
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(await answer.json()).toEqual({
      status: 'not_ready',
      code: 'token_rejected',
      checks: { store: 'ok', queue: 'ok', token: 'token_rejected', outbox: 'ok' },
    });
    expect(await offDocument('/readyz', 'get', await fetch(`${gateway.url}/readyz`))).toEqual([]);
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    // Tried again (every 5 s while refused), said once.
    await expect.poll(() => emulator.inspect.requests('token'), { timeout: 15_000 }).toBeGreaterThanOrEqual(2);
    expect(gateway.output().match(/client credentials: token_rejected/g)).toHaveLength(1);
    expect(gateway.output()).not.toContain('not-the-secret');
  }, 30_000);
});
