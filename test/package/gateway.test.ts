// `npx blackbox-capture serve` as users run it: dist/cli.js as a process of its own, configured
// by an env file, on the emulated service; its decisions at a local DECISION_URL, verified with
// the Standard Webhooks library; SIGTERM with checkouts queued and with webhooks undelivered;
// two processes on one DATA_DIR.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import {
  drained,
  gatewayEnvironment,
  ORDER_SECRET,
  postCheckout,
  WEBHOOK_SECRET,
  webhookReceiver,
} from '../support/gateway.js';
import { closeServers } from '../support/http.js';
import { SHOP } from '../support/kit.js';
import { freePort } from '../support/processes.mjs';
import { snippet } from '../support/readme.js';
import { REGIONS_IN_WORDS } from '../../src/server/api/regions.js';

const CLI = join(process.cwd(), 'dist', 'cli.js');
const children: ChildProcess[] = [];
const emulators: Emulator[] = [];
afterEach(async () => {
  // The whole process group: npx's own child (the gateway's node) can outlive npx, and did,
  // holding its port and data directory after the run.
  for (const child of children.splice(0)) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // The group ended already.
    }
  }
  for (const emulator of emulators.splice(0)) await emulator.close();
  await closeServers();
});

const shop = webhookReceiver;

/** The env file of a gateway on `emulator`: the names `npx blackbox-capture-emulator --env` prints, and the gateway's own. */
function envFile(dir: string, emulator: Emulator, decisionUrl: string, port: number, admin = false): string {
  const { DECISIONS_TOKEN: _bearer, ...lines } = gatewayEnvironment(emulator, decisionUrl, {
    PORT: String(port),
    CALLBACK_URL: `http://127.0.0.1:${port}/callback`,
    // The tests post from loopback as the shop's front would, naming each shopper.
    TRUSTED_FRONTS: '127.0.0.1',
    DATA_DIR: join(dir, 'data'),
    // A listener on a free port whose /metrics says what the gateway has left to send (`drained`).
    ...(admin ? { ADMIN_PORT: '0' } : {}),
  });
  const path = join(dir, 'gateway.env');
  writeFileSync(
    path,
    Object.entries(lines)
      .map(([name, value]) => `${name}=${value}\n`)
      .join(''),
  );
  return path;
}

/** A gateway process; resolves once it listens, with its output so far. */
async function gateway(cwd: string, command: string[]) {
  // Only PATH and HOME: vitest's own variables (BASE_URL among them) would override the file's.
  const env = { PATH: process.env.PATH, HOME: process.env.HOME };
  // A process group of its own (detached), so that afterEach ends npx and what it started.
  const child = spawn(command[0]!, command.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const listening = /^blackbox-capture gateway on (http:\/\/127\.0\.0\.1:\d+)(?: \(admin (http:\/\/\S+)\))?$/m;
  // A cold start of node and the built bundle beside other work: 15 s was once not enough.
  await expect.poll(() => out, { timeout: 30_000 }).toMatch(listening);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const [, url, adminUrl] = listening.exec(out)!;
  return { child, output: () => out, exited, url: url!, adminUrl };
}

/** A checkout of `order` through the shop's front, from a shopper of its own (X-Forwarded-For). */
let shoppers = 1;
/** A checkout of `order` through the shop's front, from a shopper of its own (X-Forwarded-For). */
const checkout = (url: string, order: string) => postCheckout(url, { order, from: `203.0.113.${shoppers++ % 250}` });

/** Whether any process of the group `pid` leads is still running. */
function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A project that installed the package: `npx blackbox-capture` runs dist/cli.js. */
function project(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bbc-gateway-'));
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
  symlinkSync(process.cwd(), join(dir, 'node_modules', 'blackbox-capture'));
  symlinkSync(CLI, join(dir, 'node_modules', '.bin', 'blackbox-capture'));
  return dir;
}

describe('npx blackbox-capture serve (dist/cli.js)', () => {
  it("runs as docs/gateway.md writes it ('gateway-serve'), and reaches a signed decision", async () => {
    const emulator = await startEmulator({ accountRequestsPerSecond: 0 });
    emulators.push(emulator);
    emulator.decide('next', { type: 'WARNING', label: 'SUSPICIOUS', alerts: [], score: 55 });
    const { url, received } = await shop();
    const dir = project();
    envFile(dir, emulator, url, await freePort());
    const command = snippet('gateway-serve').code.trim();
    expect(command).toBe('npx blackbox-capture serve --env-file gateway.env');
    const running = await gateway(dir, ['sh', '-c', `exec ${command}`]);
    expect((await checkout(running.url, 'order-77')).status).toBe(202);
    await expect.poll(() => received.length, { timeout: 20_000 }).toBe(1);
    expect(received[0]!.event.data).toMatchObject({
      customerInternalReference: 'order-77',
      status: 'PROCESSED',
      decision: { type: 'WARNING', label: 'SUSPICIOUS', score: 55 },
    });
    // No secret in what it printed.
    for (const secret of [emulator.clientSecret, ORDER_SECRET, WEBHOOK_SECRET])
      expect(running.output()).not.toContain(secret);
    // SIGTERM to the process group, as a terminal's Ctrl-C or systemd sends it: npx alone does
    // not pass it on (npx exits, the gateway runs on: docs/gateway.md#shutting-down-and-restarts).
    // The exit codes are the tests' below, of the command itself.
    process.kill(-running.child.pid!, 'SIGTERM');
    await running.exited;
    await expect.poll(() => groupAlive(running.child.pid!), { timeout: 10_000 }).toBe(false);
  }, 60_000);

  it('SIGTERM with checkouts queued: exits 0, and the next start checks each and tells each decision once', async () => {
    // The service's account limit, 1 a second: a backlog that SIGTERM finds waiting.
    const emulator = await startEmulator({ accountRequestsPerSecond: 1 });
    emulators.push(emulator);
    const { url, received } = await shop();
    const dir = mkdtempSync(join(tmpdir(), 'bbc-gateway-term-'));
    const env = envFile(dir, emulator, url, await freePort(), true);
    const first = await gateway(dir, [process.execPath, CLI, 'serve', '--env-file', env]);
    // The service refuses every account create until the first process is gone: all wait in
    // the queue at SIGTERM, however long the posts take on a busy machine.
    emulator.faults.fail('accountCreate', { times: 1_000_000, status: 503 });
    const orders = Array.from({ length: 12 }, (_, i) => `order-${i}`);
    for (const order of orders) expect((await checkout(first.url, order)).status).toBe(202);
    // Through the named front, each shopper is one: more than the 5 a single address may start.
    expect(orders.length).toBeGreaterThan(5);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(first.output()).toContain('SIGTERM: taking no new checkout');
    expect(received).toHaveLength(0);
    emulator.faults.clear();

    const second = await gateway(dir, [process.execPath, CLI, 'serve', '--env-file', env]);
    const told = () => received.map((r) => r.event.data.customerInternalReference).sort();
    // 12 checks at 1 account request a second, retried after the service's refusals; a check
    // SIGTERM caught with its account create's intent recorded waits out that create's window
    // (the client's accountTimeoutMs, 60 s, and a lease) before it goes on: under three minutes.
    // On a failure, what both processes said: which order was lost, or still waiting, and why.
    await expect
      .poll(told, { timeout: 150_000 })
      .toEqual([...orders].sort())
      .catch((error: Error) => {
        throw new Error(`${error.message}\nfirst:\n${first.output()}\nsecond:\n${second.output()}`);
      });
    // The count is final only once nothing is left to send: a retried delivery waits in the outbox.
    await drained(second.adminUrl!);
    expect(received).toHaveLength(orders.length);
    expect(new Set(received.map((r) => r.id)).size).toBe(orders.length);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 240_000);

  it('two processes on one DATA_DIR (an overlapping deploy): both serve, and each decision is told once', async () => {
    const emulator = await startEmulator({ accountRequestsPerSecond: 2 });
    emulators.push(emulator);
    const { url, received } = await shop();
    const dir = mkdtempSync(join(tmpdir(), 'bbc-gateway-overlap-'));
    const portA = await freePort();
    const envA = envFile(dir, emulator, url, portA, true);
    // The new process's own port, on the same DATA_DIR.
    const portB = await freePort();
    const envB = join(dir, 'gateway-b.env');
    writeFileSync(envB, readFileSync(envA, 'utf8').replaceAll(String(portA), String(portB)));
    const old = await gateway(dir, [process.execPath, CLI, 'serve', '--env-file', envA]);
    const orders = Array.from({ length: 12 }, (_, i) => `order-${i}`);
    for (const order of orders.slice(0, 6)) expect((await checkout(old.url, order)).status).toBe(202);
    const next = await gateway(dir, [process.execPath, CLI, 'serve', '--env-file', envB]);
    for (const order of orders.slice(6)) expect((await checkout(next.url, order)).status).toBe(202);
    // The old process stops once the new one serves: what it left is the new one's to check.
    old.child.kill('SIGTERM');
    expect(await old.exited).toBe(0);
    await expect
      .poll(() => received.map((r) => r.event.data.customerInternalReference).sort(), { timeout: 150_000 })
      .toEqual([...orders].sort())
      .catch((error: Error) => {
        throw new Error(`${error.message}\nold:\n${old.output()}\nnew:\n${next.output()}`);
      });
    // The old process is gone; the new one's queue is the shared DATA_DIR's, the old one's jobs too.
    await drained(next.adminUrl!);
    expect(received).toHaveLength(orders.length);
    // Each order's transaction made once: no job run by both.
    const made = emulator.inspect.transactions().map((t) => t.customerInternalReference);
    expect(made.filter((order, i) => made.indexOf(order) !== i)).toEqual([]);
    next.child.kill('SIGTERM');
    expect(await next.exited).toBe(0);
  }, 240_000);

  it('restarted with webhooks undelivered: the next start delivers each, once', async () => {
    const emulator = await startEmulator({ accountRequestsPerSecond: 0 });
    emulators.push(emulator);
    let up = false;
    const { url, received, attempts } = await shop(() => (up ? 200 : 503));
    const dir = mkdtempSync(join(tmpdir(), 'bbc-gateway-undelivered-'));
    const env = envFile(dir, emulator, url, await freePort(), true);
    const first = await gateway(dir, [process.execPath, CLI, 'serve', '--env-file', env]);
    for (const order of ['order-a', 'order-b']) expect((await checkout(first.url, order)).status).toBe(202);
    await expect.poll(attempts, { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(first.output()).toMatch(
      /decision msg_\S+ not delivered to http:\/\/127\.0\.0\.1:\d+ \(HTTP 503, attempt 1\)/,
    );
    expect(received).toHaveLength(0);

    up = true;
    const second = await gateway(dir, [process.execPath, CLI, 'serve', '--env-file', env]);
    await expect
      .poll(() => received.map((r) => r.event.data.customerInternalReference).sort(), { timeout: 20_000 })
      .toEqual(['order-a', 'order-b']);
    await drained(second.adminUrl!);
    expect(received).toHaveLength(2);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 60_000);

  it('refuses a bad configuration at start: one line per problem, exit 2, no secret printed', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bbc-gateway-bad-'));
    const result = spawnSync(process.execPath, [CLI, 'serve'], {
      cwd: dir,
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        CLIENT_ID: 'x',
        CLIENT_SECRET: 'the-client-secret-value',
        REGION: 'MARS',
        WORKFLOW_KEY: '10011',
        ALLOWED_ORIGINS: SHOP,
        ORDER_SECRET: 'short-order-secret',
        DECISION_URL: 'http://shop.example/hook',
        WEBHOOK_SECRET: 'not-a-whsec-secret',
      },
    });
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toEqual([
      `blackbox-capture serve: REGION must be ${REGIONS_IN_WORDS} (got "MARS")`,
      'blackbox-capture serve: ORDER_SECRET must be at least 32 characters (it has 18)',
      'blackbox-capture serve: WEBHOOK_SECRET must be whsec_ followed by base64 (Standard Webhooks)',
      'blackbox-capture serve: DECISION_URL must be an https URL (http only on loopback) (got its value)',
    ]);
    for (const secret of ['the-client-secret-value', 'short-order-secret', 'not-a-whsec-secret'])
      expect(result.stderr).not.toContain(secret);
  });
});
