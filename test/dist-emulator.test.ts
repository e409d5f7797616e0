// The built emulator (dist/emulator.js) and its command-line entry.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('dist/emulator.js', () => {
  it('starts, serves the loader and issues tokens', async () => {
    const { startEmulator } = await import('../dist/emulator.js' as string);
    const emulator = await startEmulator();
    try {
      expect((await fetch(emulator.loaderUrl)).status).toBe(200);
      const response = await fetch(emulator.tokenUrl, {
        method: 'POST',
        headers: {
          authorization: 'Basic ' + Buffer.from(`${emulator.clientId}:${emulator.clientSecret}`).toString('base64'),
          accept: 'application/json',
          'content-type': 'application/x-www-form-urlencoded',
          'user-agent': 'AcmeShop Tests/1.0',
        },
        body: 'grant_type=client_credentials',
      });
      expect(response.status).toBe(200);
    } finally {
      await emulator.close();
    }
  });

  it('the blackbox-capture-emulator command prints its addresses and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [new URL('../dist/emulator-cli.js', import.meta.url).pathname], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    await expect.poll(() => out.includes('"baseUrl"'), { timeout: 5000 }).toBe(true);
    const addresses = JSON.parse(out) as Record<string, string>;
    expect(addresses.loaderUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/loader\.js$/);
    expect((await fetch(addresses.loaderUrl!)).status).toBe(200);
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});

describe('dist/server.js', () => {
  it('runs the whole server flow from the built file against the built emulator', async () => {
    const { startEmulator } = await import('../dist/emulator.js' as string);
    const server = await import('../dist/server.js' as string);
    const emulator = await startEmulator();
    try {
      const tokenSource = server.createTokenSource({ clientId: emulator.clientId, clientSecret: emulator.clientSecret, tokenUrl: emulator.tokenUrl, userAgent: 'AcmeShop Tests/1.0' });
      const client = server.createDeviceRiskClient({ tokenSource, baseUrl: emulator.baseUrl, userAgent: 'AcmeShop Tests/1.0' });
      const tx = await client.createAccount({ customerInternalReference: 'dist-1', workflowDefinition: { key: 1 } });
      await client.uploadBlackbox(tx, '0400' + 'AbC+/'.repeat(220));
      await client.finalize(tx);
      expect(await client.status(tx)).toBe('PROCESSED');
      expect(server.isDeviceRiskError(new server.DeviceRiskError('upstream_error', 'x'))).toBe(true);
    } finally {
      await emulator.close();
    }
  });
});
