// The gateway's tests' harness (test/gateway/): the shop's webhook receiver, verifying each
// delivery with the Standard Webhooks library; the environment `serve` reads on an emulator;
// a checkout as the browser package posts it, with its Order-Token.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { Webhook } from 'standardwebhooks';
import { afterEach, expect } from 'vitest';
import type { Emulator, EmulatorOptions } from '../../src/emulator/index.js';
import { startGateway, type Gateway } from '../../src/gateway/gateway.js';
import { mintOrderToken } from '../../src/gateway/order-token.js';
import { parseSettings } from '../../src/gateway/settings.js';
import type { WebhookEvent } from '../../src/gateway/webhook.js';
import { emulatorEnvironment } from './emulator-env.js';
import { closeServers, serve } from './http.js';
import { blackboxOf, SHOP, useEmulators } from './kit.js';

export const WEBHOOK_SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
export const ORDER_SECRET = 'the-order-secret-of-the-shop-32ch';
export const DECISIONS_TOKEN = 'the-bearer-of-get-decisions-32chars';

/**
 * The shop's webhook receiver: answers `status()`, keeps every delivery it answered 2xx,
 * verified. With `authorization`, a delivery without that header is answered 401.
 */
export async function webhookReceiver(status: () => number = () => 204, authorization?: string) {
  const received: Array<{ id: string; event: WebhookEvent }> = [];
  let attempts = 0;
  const url = await serve((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      attempts++;
      const event = new Webhook(WEBHOOK_SECRET).verify(body, req.headers as Record<string, string>) as WebhookEvent;
      const answer = authorization !== undefined && req.headers.authorization !== authorization ? 401 : status();
      if (answer < 300) received.push({ id: req.headers['webhook-id'] as string, event });
      res.writeHead(answer).end();
    });
  });
  return {
    url: `${url}/webhooks/device-risk`,
    received,
    /** POSTs received, answered 2xx or not. */
    attempts: () => attempts,
    /** The orders told, sorted. */
    orders: () => received.map((r) => r.event.data.customerInternalReference).sort(),
  };
}

/** The environment `serve` reads, with the emulator's names as `--env` prints them. */
export function gatewayEnvironment(emulator: Emulator, decisionUrl: string, extra: Record<string, string> = {}) {
  return {
    ...emulatorEnvironment(emulator),
    ALLOWED_ORIGINS: SHOP,
    ORDER_SECRET,
    DECISION_URL: decisionUrl,
    WEBHOOK_SECRET,
    DECISIONS_TOKEN,
    PORT: '0',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'bbc-gateway-')),
    // No drain after SIGTERM: a test's gateway has no load balancer to wait for (cli.emulator.test.ts tests the drain).
    SHUTDOWN_DRAIN_MS: '0',
    ...extra,
  };
}

/** A checkout as the browser package posts it; with `order`, its Order-Token (else `token` as given, or none). */
export async function postCheckout(url: string, order: { order?: string; token?: string; from?: string } = {}) {
  const token =
    order.token ??
    (order.order === undefined
      ? undefined
      : await mintOrderToken(ORDER_SECRET, { customerInternalReference: order.order }));
  // A blackbox of its own: the endpoint refuses one already used for another key.
  const key = crypto.randomUUID();
  return fetch(`${url}/device-risk`, {
    method: 'POST',
    headers: {
      origin: SHOP,
      'content-type': 'application/json',
      'idempotency-key': key,
      ...(token === undefined ? {} : { 'order-token': token }),
      ...(order.from === undefined ? {} : { 'x-forwarded-for': order.from }),
    },
    body: JSON.stringify({ blackbox: blackboxOf(key) }),
  });
}

/**
 * `blackbox-capture serve` from the source, as a process of its own (SIGTERM, a Redis that
 * stops, sockets): src/cli.ts (the package's command) bundled once per test file with esbuild,
 * the packages left external (resolved from this repository's node_modules), beside the OpenAPI
 * document it serves.
 */
let bundledCli: Promise<string> | undefined;
function sourceCli(): Promise<string> {
  return (bundledCli ??= (async () => {
    const { outputFiles } = await build({
      entryPoints: ['src/cli.ts'],
      bundle: true,
      platform: 'node',
      format: 'esm',
      packages: 'external',
      outfile: 'cli.mjs',
      write: false,
      logLevel: 'warning',
    });
    const code = outputFiles[0]!.text;
    const openApi = readFileSync('src/gateway/openapi.json', 'utf8');
    // Named by its content: test files running at once share one, and a changed source makes another.
    const hash = createHash('sha256').update(code).update(openApi).digest('hex').slice(0, 16);
    const dir = join(process.cwd(), 'node_modules', '.cache', `gateway-cli-${hash}`);
    const cli = join(dir, 'cli.mjs');
    if (!existsSync(cli)) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'openapi.json'), openApi);
      const partial = `${cli}.${process.pid}`;
      writeFileSync(partial, code, { mode: 0o755 });
      renameSync(partial, cli);
    }
    return cli;
  })());
}

export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  adminUrl?: string;
  /** stdout and stderr so far. */
  output(): string;
  /** The exit code (null: ended by a signal). */
  exited: Promise<number | null>;
}

/**
 * A gateway test file's fixture (call it at the top of the file): the emulators it starts, and
 * after each test every gateway it started ended (processes killed, in-process ones closed),
 * then every loopback server (the shop's receivers) closed.
 */
export function useGateway() {
  const startEmulator = useEmulators();
  const inProcess: Gateway[] = [];
  afterEach(async () => {
    killGatewayProcesses();
    for (const gateway of inProcess.splice(0)) await gateway.close();
    await closeServers();
  });
  /** A new emulator and shop receiver, and the environment of a gateway on them with `extra`. */
  async function environment(
    extra: Record<string, string> = {},
    options: { emulator?: EmulatorOptions; shopStatus?: () => number } = {},
  ) {
    const emulator = await startEmulator(options.emulator);
    const shop = await webhookReceiver(options.shopStatus);
    return { emulator, shop, env: gatewayEnvironment(emulator, shop.url, extra) };
  }
  return {
    startEmulator,
    environment,
    /** `serve` as a process on a new emulator and shop receiver (`environment`'s arguments). */
    async served(...args: Parameters<typeof environment>) {
      const setup = await environment(...args);
      return { ...setup, gateway: await startGatewayProcess(setup.env) };
    },
    /** The gateway in this process (what `serve` starts), on `env`, its log lines into `log`. */
    async inProcess(env: Record<string, string>, log: (line: string) => void = () => {}): Promise<Gateway> {
      const gateway = await startGateway(parseSettings(env), { log });
      inProcess.push(gateway);
      return gateway;
    },
  };
}

const running: ChildProcess[] = [];
/** Ends every gateway process a test left running (afterEach). */
export function killGatewayProcesses(): void {
  for (const child of running.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** Writes `env` as an env file in a directory of its own; its path. */
export function writeEnvFile(env: Record<string, string>, prefix = ''): string {
  const path = join(mkdtempSync(join(tmpdir(), 'bbc-gateway-env-')), 'gateway.env');
  writeFileSync(
    path,
    prefix +
      Object.entries(env)
        .map(([name, value]) => `${name}=${value}\n`)
        .join(''),
  );
  return path;
}

/**
 * `blackbox-capture serve --env-file <file of env>` as a process; resolves once it listens
 * (`wait: false`: at once, for one that is to refuse its configuration).
 */
export async function startGatewayProcess(
  env: Record<string, string>,
  options: { args?: string[]; wait?: boolean; shebang?: boolean } = {},
): Promise<GatewayProcess> {
  const cli = await sourceCli();
  const args = options.args ?? ['--env-file', writeEnvFile(env)];
  // `shebang`: the file run as npx runs it, through its #! line, not as node's argument.
  const [command, ...rest] = options.shebang ? [cli, 'serve', ...args] : [process.execPath, cli, 'serve', ...args];
  // Only PATH and HOME: vitest's own variables (BASE_URL among them) would override the file's.
  const child = spawn(command!, rest, {
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.push(child);
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  // 'close', not 'exit': its output is all read by then (a pipe may still hold lines at 'exit').
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const listening = /^blackbox-capture gateway on (http:\/\/\S+?)(?: \(admin (http:\/\/\S+)\))?$/m;
  if (options.wait !== false)
    await Promise.race([
      expect.poll(() => out, { timeout: 20_000 }).toMatch(listening),
      exited.then((code) => {
        throw new Error(`the gateway exited (${code}) before listening:\n${out}`);
      }),
    ]);
  const match = listening.exec(out);
  return {
    child,
    url: match?.[1] ?? '',
    ...(match?.[2] ? { adminUrl: match[2] } : {}),
    output: () => out,
    exited,
  };
}

/**
 * Each value of the series `name` in a Prometheus scrape, whatever its labels; with `label`
 * (such as `scope="fleet"`), of the series that carry it.
 */
export const series = (text: string, name: string, label?: string): number[] =>
  [...text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))]
    .filter((match) => label === undefined || (match[1] ?? '').split(',').includes(label))
    .map((match) => Number(match[2]));

/**
 * Resolves once the gateway whose admin listener (ADMIN_PORT) is at `adminUrl` has nothing left
 * to send: its queue empty (a check hands its decision to the outbox before it leaves the queue),
 * then its outbox (a decision leaves it once the shop answered 2xx, after the receiver kept it).
 * One scrape reads both, in that order; each decision's record is made only if absent, so none
 * can be sent again.
 *
 * `fleet`: a gateway on a shared Redis. Its outbox figure is the fleet's (one pending list); so
 * is its queue figure, but only the instance that holds the status monitor's reporter lease
 * writes it, as `scope="fleet"`: every other instance says `scope="instance"` 0, whatever the
 * fleet holds (src/server/metrics.ts's readBacklogs). So that series is waited for. In one
 * process the reporter flag is the last monitor's: give one gateway of an in-process fleet the
 * admin listener.
 */
export async function drained(adminUrl: string, { fleet = false }: { fleet?: boolean } = {}): Promise<void> {
  await expect
    .poll(async () => {
      const text = await (await fetch(`${adminUrl}/metrics`)).text();
      return [
        series(text, 'blackbox_capture_queue_depth', fleet ? 'scope="fleet"' : undefined),
        series(text, 'blackbox_capture_gateway_outbox_depth'),
      ];
    })
    .toEqual([[0], [0]]);
}
