// `blackbox-capture serve` in-process (src/gateway/cli.ts): the line that says it listens comes
// once SIGTERM and SIGINT are its own, so that a process manager (or a test) that signals as
// soon as it reads the line gets a close(), never the default death with nothing said.
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { serve } from '../../src/gateway/cli.js';
import { startGatewayProcess, useGateway, writeEnvFile } from '../support/gateway.js';

const { environment } = useGateway();

afterEach(() => vi.restoreAllMocks());
/** TCP servers that take a connection and never answer: a Redis that holds the start. */
const silents: Server[] = [];
afterEach(() => {
  for (const silent of silents.splice(0)) silent.close();
});

describe('serve', () => {
  it('says it listens only after it has taken SIGTERM and SIGINT', async () => {
    const { env } = await environment();
    const order: string[] = [];
    const handlers = new Map<string, () => void>();
    // Recorded, not installed: the test process keeps its own signals.
    vi.spyOn(process, 'on').mockImplementation(((event: string, handler: () => void) => {
      order.push(`on ${event}`);
      handlers.set(event, handler);
      return process;
    }) as typeof process.on);
    vi.spyOn(console, 'log').mockImplementation((line: string) => void order.push(line.split(' http')[0]!));
    const exited = new Promise<number | undefined>((resolve) =>
      vi.spyOn(process, 'exit').mockImplementation(((code?: number) => resolve(code)) as typeof process.exit),
    );
    // Only PATH and HOME, as a process gets them: vitest's own variables would override the file's.
    const own = process.env;
    process.env = { PATH: own.PATH, HOME: own.HOME };
    try {
      await serve(['--env-file', writeEnvFile(env)], { log: () => {} });
    } finally {
      process.env = own;
    }
    expect(order).toEqual(['on SIGTERM', 'on SIGINT', 'blackbox-capture gateway on']);
    // The recorded SIGTERM closes the gateway as a real one would.
    handlers.get('SIGTERM')!();
    expect(await exited).toBe(0);
  });

  it('on SIGTERM while starting (its Redis silent), exits 0 at once: nothing was accepted yet', async () => {
    let connect!: () => void;
    const connected = new Promise<void>((resolve) => (connect = resolve));
    const silent = createServer(() => connect());
    silents.push(silent);
    await once(silent.listen(0, '127.0.0.1'), 'listening');
    const { port } = silent.address() as AddressInfo;
    const { env } = await environment({ REDIS_URL: `redis://127.0.0.1:${port}` });
    const gateway = await startGatewayProcess(env, { wait: false });
    await connected;
    const signalledAt = Date.now();
    gateway.child.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
    expect(Date.now() - signalledAt).toBeLessThan(5000);
    expect(gateway.output()).toContain('SIGTERM while starting: exiting; nothing was accepted yet');
  }, 30_000);

  it('on SIGTERM answers /healthz and /readyz 503 for SHUTDOWN_DRAIN_MS, then closes its listener and exits 0', async () => {
    const { env } = await environment({ SHUTDOWN_DRAIN_MS: '5000' });
    const gateway = await startGatewayProcess(env);
    const signalledAt = Date.now();
    gateway.child.kill('SIGTERM');
    await expect.poll(() => gateway.output()).toContain('answering 503 for 5000 ms (SHUTDOWN_DRAIN_MS)');
    // A load balancer that has not yet seen the signal still gets answers: 503, so it turns away.
    const health = await fetch(`${gateway.url}/healthz`);
    expect([health.status, await health.json()]).toEqual([503, { status: 'shutting_down' }]);
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(503);
    expect(await gateway.exited).toBe(0);
    expect(Date.now() - signalledAt).toBeGreaterThanOrEqual(5000);
    await expect(fetch(`${gateway.url}/healthz`)).rejects.toThrow();
  }, 30_000);
});
