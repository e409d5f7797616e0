// The gateway as a single executable (scripts/sea.mjs: Node's single executable applications),
// run with a PATH that holds no node: configured by an env file, it reaches a signed decision on
// the emulated service, serves its OpenAPI document from its asset, and exits 0 on SIGTERM.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { gatewayEnvironment, postCheckout, webhookReceiver } from '../support/gateway.js';
import { closeServers } from '../support/http.js';

const children: ChildProcess[] = [];
let emulator: Emulator | undefined;
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  await emulator?.close();
  await closeServers();
});

describe('the gateway as a single executable', () => {
  it('runs where node is not on PATH and reaches a signed decision', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bbc-sea-'));
    const executable = join(dir, 'blackbox-capture-gateway');
    const built = spawnSync(process.execPath, ['scripts/sea.mjs', executable], { encoding: 'utf8' });
    expect(built.status, built.stderr).toBe(0);
    expect(existsSync(executable)).toBe(true);

    emulator = await startEmulator({ accountRequestsPerSecond: 0 });
    const shop = await webhookReceiver();
    const { DECISIONS_TOKEN: _bearer, ...env } = gatewayEnvironment(emulator, shop.url, {
      DATA_DIR: join(dir, 'data'),
    });
    writeFileSync(
      join(dir, 'gateway.env'),
      Object.entries(env)
        .map(([k, v]) => `${k}=${v}\n`)
        .join(''),
    );
    // A PATH with no node on it, and nothing else of the environment.
    const empty = join(dir, 'bin');
    mkdirSync(empty);
    expect(spawnSync('sh', ['-c', 'command -v node'], { env: { PATH: empty } }).status).not.toBe(0);
    const child = spawn(executable, ['--env-file', 'gateway.env'], {
      cwd: dir,
      env: { PATH: empty },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    await expect.poll(() => out, { timeout: 20_000 }).toMatch(/gateway on http:\/\/127\.0\.0\.1:\d+/);
    const url = /gateway on (\S+)/.exec(out)![1]!;

    expect(((await (await fetch(`${url}/openapi.json`)).json()) as { openapi: string }).openapi).toMatch(/^3\.1\./);
    expect((await postCheckout(url, { order: 'sea-order-1' })).status).toBe(202);
    // Its own name in its usage, and its health check, without node.
    const run = (args: string[]) => spawnSync(executable, args, { cwd: dir, env: { PATH: empty }, encoding: 'utf8' });
    const help = run(['--help']);
    expect([help.status, help.stdout.split('\n')[0]]).toEqual([
      0,
      'usage: blackbox-capture-gateway [--env-file <path>]...',
    ]);
    await expect.poll(() => run(['healthcheck', '--url', `${url}/readyz`]).status, { timeout: 20_000 }).toBe(0);
    const unready = run(['healthcheck', '--url', `${url}/nowhere`]);
    expect([unready.status, unready.stderr]).toEqual([
      1,
      `blackbox-capture-gateway: healthcheck: ${url}/nowhere answered 404\n`,
    ]);
    await expect.poll(shop.orders, { timeout: 20_000 }).toEqual(['sea-order-1']);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 240_000);
});
