// The built emulator (dist/emulator.js) and its command-line entry.
import { spawn } from 'node:child_process';
import { createServer as createNetServer } from 'node:net';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

describe('dist/emulator.js', () => {
  it('starts, serves the loader and issues tokens', async () => {
    const { startEmulator } = await import('../../dist/emulator.js' as string);
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
    const child = spawn(process.execPath, [new URL('../../dist/emulator-cli.js', import.meta.url).pathname], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    await expect.poll(() => out.includes('"baseUrl"'), { timeout: 60_000 }).toBe(true);
    const addresses = JSON.parse(out) as Record<string, string>;
    expect(addresses.loaderUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/loader\.js$/);
    // A newcomer needs both credentials to point the server kit at it.
    expect(addresses).toMatchObject({ clientId: 'emulator-client', clientSecret: 'emulator-secret' });
    expect((await fetch(addresses.loaderUrl!)).status).toBe(200);
    // The retrieval address too: without it an app refuses every callback.
    expect(addresses.retrievalUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // Each role on its own origin: the account host (baseUrl, accountUrl) and the API host.
    expect(addresses.accountUrl).toBe(addresses.baseUrl);
    expect(addresses.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(new Set([addresses.baseUrl, addresses.apiUrl, addresses.retrievalUrl]).size).toBe(3);
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('--env prints environment variables, on fixed ports with EMULATOR_PORT_BASE', async () => {
    const { freePort } = await import('../support/processes.mjs');
    // Seven ports in a row, free now: found by trying bases the OS gave free.
    let base = 0;
    for (let tries = 0; tries < 20 && !base; tries++) {
      const candidate = await freePort();
      if (candidate + 6 > 65535) continue;
      const taken = await Promise.all(
        [1, 2, 3, 4, 5, 6].map(
          (n) =>
            new Promise<boolean>((resolve) => {
              const probe = createNetServer();
              probe.once('error', () => resolve(true));
              probe.listen(candidate + n, '127.0.0.1', () => probe.close(() => resolve(false)));
            }),
        ),
      );
      if (!taken.includes(true)) base = candidate;
    }
    const child = spawn(process.execPath, [new URL('../../dist/emulator-cli.js', import.meta.url).pathname, '--env'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, EMULATOR_PORT_BASE: String(base) },
    });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    await expect.poll(() => out.includes('CLIENT_SECRET='), { timeout: 60_000 }).toBe(true);
    const variables = Object.fromEntries(
      out
        .trim()
        .split('\n')
        .map((line) => line.split(/=(.*)/s).slice(0, 2)),
    );
    expect(variables).toEqual({
      LOADER_URL: `http://127.0.0.1:${base}/loader.js`,
      COLLECTOR_URL: `http://127.0.0.1:${base + 1}`,
      TOKEN_URL: `http://127.0.0.1:${base + 3}/oauth2/token`,
      BASE_URL: `http://127.0.0.1:${base + 4}`,
      ACCOUNT_URL: `http://127.0.0.1:${base + 4}`,
      API_URL: `http://127.0.0.1:${base + 6}`,
      RETRIEVAL_URL: `http://127.0.0.1:${base + 5}`,
      CLIENT_ID: 'emulator-client',
      CLIENT_SECRET: 'emulator-secret',
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});

describe('the blackbox-capture-emulator command line', () => {
  const CLI = new URL('../../dist/emulator-cli.js', import.meta.url).pathname;
  const run = (args: string[], timeoutMs = 10_000) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (chunk) => (out += chunk));
      child.stderr.on('data', (chunk) => (err += chunk));
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, out, err });
      });
    });

  const runWith = (env: Record<string, string>, args: string[] = []) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, [CLI, ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, ...env },
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (chunk) => (out += chunk));
      child.stderr.on('data', (chunk) => (err += chunk));
      // A refusal exits at once; an emulator that started is stopped after 10 s and fails the test.
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, out, err });
      });
    });

  it('refuses an EMULATOR_PORT_BASE that leaves no room for its seven ports, naming it', async () => {
    const child = spawn(process.execPath, [CLI], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, EMULATOR_PORT_BASE: '65530' },
    });
    let err = '';
    child.stderr.on('data', (chunk) => (err += chunk));
    expect(await new Promise((resolve) => child.on('exit', resolve))).toBe(2);
    expect(err).toContain('EMULATOR_PORT_BASE must be a port number, at most 65529 (got 65530)');
  });

  it.each(['1e3', '0x10C0', ' 4300 ', '+4300', '4300.0', '-4300', '4300abc', '４３００'])(
    'refuses EMULATOR_PORT_BASE %j: decimal digits only, exit code 2, nothing started',
    async (value) => {
      const { code, err, out } = await runWith({ EMULATOR_PORT_BASE: value });
      expect(code).toBe(2);
      expect(err).toContain(`EMULATOR_PORT_BASE must be written in decimal digits only (got ${JSON.stringify(value)})`);
      expect(out).toBe('');
    },
  );

  it.each([
    ['EMULATOR_CLIENT_SECRET', 'secret\nTOKEN_URL=https://attacker.example/'],
    ['EMULATOR_CLIENT_SECRET', 'secret\rX'],
    ['EMULATOR_CLIENT_SECRET', 'secret\u2028X'],
    ['EMULATOR_CLIENT_SECRET', 'secret\tX'],
    ['EMULATOR_CLIENT_ID', 'client\nX=1'],
  ])('refuses %s with a control character, without printing it', async (name, value) => {
    const { code, err, out } = await runWith({ [name]: value }, ['--env']);
    expect(code).toBe(2);
    expect(err).toContain(`${name} must not contain control characters or line breaks`);
    expect(err).not.toContain(value.slice(0, 6));
    expect(out).toBe('');
  });

  it('--help prints the usage and starts nothing', async () => {
    const { code, out } = await run(['--help']);
    expect(code).toBe(0);
    expect(out).toMatch(/^usage: blackbox-capture-emulator/);
    expect(out).not.toContain('"loaderUrl"');
  });

  it('--version prints the package version', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect((await run(['--version'])).out.trim()).toBe(version);
  });

  it.each([['--port'], ['serve'], ['conformance', '--nope', 'x.js'], ['conformance']])(
    'refuses %j with a one-line usage and exit code 2',
    async (...args) => {
      const { code, err, out } = await run(args);
      expect(code).toBe(2);
      expect(err).toMatch(/^blackbox-capture-emulator: .+\nusage: /);
      expect(out).toBe('');
    },
  );
  // The conformance command itself runs in e2e/conformance.spec.ts (it drives Chromium).
});

describe('dist/server.js', () => {
  it('runs the whole server flow from the built file against the built emulator', async () => {
    const { startEmulator } = await import('../../dist/emulator.js' as string);
    const server = await import('../../dist/server.js' as string);
    const emulator = await startEmulator();
    try {
      const tokenSource = server.createTokenSource({
        clientId: emulator.clientId,
        clientSecret: emulator.clientSecret,
        tokenUrl: emulator.tokenUrl,
        userAgent: 'AcmeShop Tests/1.0',
      });
      const client = server.createDeviceRiskClient({
        tokenSource,
        ...emulator.serviceUrls,
        userAgent: 'AcmeShop Tests/1.0',
      });
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
