// The gateway's edges, with `blackbox-capture serve` as a process of its own
// (docs/gateway.md#connections, #the-admin-listener, #settings): a malformed reference is a
// 400 in JSON; a connection that sends nothing is closed; /status and /metrics answer only
// loopback Host names and need ADMIN_TOKEN off loopback; the env file's problems exit 2 naming
// it, and a UTF-8 BOM is no part of its first variable.
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { DECISIONS_TOKEN, startGatewayProcess, useGateway, writeEnvFile } from '../support/gateway.js';
import { rawRequest } from '../support/http.js';

const { environment, served } = useGateway();

const ADMIN_TOKEN = 'the-bearer-of-the-admin-routes-32chars';

describe('the edges of serve (a process)', () => {
  it('answers a malformed percent-encoding 400 invalid_reference in JSON, logged', async () => {
    const { gateway } = await served();
    const answer = await fetch(`${gateway.url}/decisions/a%zz`, {
      headers: { authorization: `Bearer ${DECISIONS_TOKEN}` },
    });
    expect(answer.status).toBe(400);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await answer.json()).toEqual({ error: { code: 'invalid_reference' } });
    // Logged as the answer goes: its line may come through the pipe after the answer.
    await expect.poll(gateway.output, { timeout: 10_000 }).toContain('refused a decisions poll: invalid_reference');
  });

  it('closes a connection that sends nothing after IDLE_TIMEOUT_MS, on both listeners', async () => {
    const { gateway } = await served({ IDLE_TIMEOUT_MS: '500', ADMIN_PORT: '0' });
    for (const url of [gateway.url, gateway.adminUrl!]) {
      const { hostname, port } = new URL(url);
      const socket = connect({ host: hostname, port: Number(port) });
      const closed = new Promise<boolean>((resolve) => socket.once('close', () => resolve(true)));
      await new Promise((resolve) => socket.once('connect', resolve));
      // Nothing sent: the gateway ends it (the test's own timeout fails a connection kept open).
      expect(await closed).toBe(true);
    }
  });

  it('holds at most MAX_CONNECTIONS connections: past them a new one is closed at once, logged; room again, served', async () => {
    const { gateway } = await served({ MAX_CONNECTIONS: '2' });
    const { hostname, port } = new URL(gateway.url);
    const open = async () => {
      const socket = connect({ host: hostname, port: Number(port) });
      await new Promise((resolve) => socket.once('connect', resolve));
      return socket;
    };
    const held = [await open(), await open()];
    const third = await open();
    // Closed by the gateway at once, nothing answered.
    await new Promise((resolve) => third.once('close', resolve));
    await expect
      .poll(gateway.output, { timeout: 10_000 })
      .toContain('refused a connection: too_many_connections (MAX_CONNECTIONS 2 held)');
    held[0]!.destroy();
    await expect.poll(async () => (await fetch(`${gateway.url}/healthz`).catch(() => undefined))?.status).toBe(200);
    held[1]!.destroy();
  });

  it('answers /status and /metrics only under loopback Host names, and off loopback only with ADMIN_TOKEN', async () => {
    const { gateway } = await served({
      ADMIN_PORT: '0',
      ADMIN_TOKEN,
      // Requests from loopback naming a shopper's address: as from off loopback, through a front.
      TRUSTED_FRONTS: '127.0.0.1',
    });
    const admin = new URL(gateway.adminUrl!);
    // Node's request: the Host header goes out as given.
    const get = (path: string, headers: Record<string, string>) => rawRequest(gateway.adminUrl!, path, { headers });
    for (const path of ['/status', '/metrics']) {
      // A DNS-rebound name: refused whatever else.
      const rebound = await get(path, { host: `attacker.example:${admin.port}` });
      expect([rebound.status, rebound.body]).toEqual([421, '{"error":{"code":"misdirected_request"}}']);
      for (const host of [`127.0.0.1:${admin.port}`, `localhost:${admin.port}`])
        expect((await get(path, { host })).status).toBe(200);
      // Off loopback: the bearer, or 401.
      const away = { host: `127.0.0.1:${admin.port}`, 'x-forwarded-for': '203.0.113.7' };
      const refused = await get(path, away);
      expect([refused.status, refused.body]).toEqual([401, '{"error":{"code":"admin_unauthorized"}}']);
      expect((await get(path, { ...away, authorization: 'Bearer wrong' })).status).toBe(401);
      expect((await get(path, { ...away, authorization: `Bearer ${ADMIN_TOKEN}` })).status).toBe(200);
    }
    // The probes stay open: they carry no credentials.
    expect((await get('/healthz', { host: `attacker.example:${admin.port}` })).status).toBe(200);
    await expect.poll(gateway.output, { timeout: 10_000 }).toContain('refused an admin request: misdirected_request');
    await expect.poll(gateway.output, { timeout: 10_000 }).toContain('refused an admin request: admin_unauthorized');
    expect(gateway.output()).not.toContain(ADMIN_TOKEN);
  });

  it('exits 2 naming an env file it cannot read, run as npx runs it', async () => {
    const missing = '/nonexistent/gateway.env';
    const gateway = await startGatewayProcess({}, { args: ['--env-file', missing], wait: false, shebang: true });
    expect(await gateway.exited).toBe(2);
    expect(gateway.output()).toContain(`blackbox-capture serve: cannot read the env file ${missing} (ENOENT)`);
  });

  it("refuses an env file whose unquoted value a '#' would cut, naming the line, never the value", async () => {
    const { env } = await environment();
    const secret = `${env.WEBHOOK_SECRET}#tail`;
    const path = writeEnvFile({ ...env, WEBHOOK_SECRET: secret });
    const gateway = await startGatewayProcess({}, { args: ['--env-file', path], wait: false, shebang: true });
    expect(await gateway.exited).toBe(2);
    const line = Object.keys(env).indexOf('WEBHOOK_SECRET') + 1;
    expect(gateway.output()).toContain(
      `blackbox-capture serve: the env file ${path}, line ${line}: WEBHOOK_SECRET's value has a '#'`,
    );
    expect(gateway.output()).not.toContain(env.WEBHOOK_SECRET);
  });

  it('reads an env file that starts with a UTF-8 BOM: its first variable is read', async () => {
    const { env } = await environment();
    // CLIENT_ID first: with the BOM in its name it would be missing, and the start refused.
    expect(Object.keys(env)[0]).toBe('CLIENT_ID');
    // And a '#' in a quoted value: read as written.
    const gateway = await startGatewayProcess(env, {
      args: ['--env-file', writeEnvFile({ ...env, NOTE: "'a#b'" }, '\uFEFF')],
      shebang: true,
    });
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
  });
});
