/**
 * One shop origin in front of a back end in another language and the gateway, as
 * docs/gateway.md#back-ends-in-other-languages lays it out: the gateway (`npx blackbox-capture
 * serve`, dist/cli.js, as a process) on the emulated service, and a front that routes
 * `/device-risk` and `/iojs/` to it, serves the package's UMD file, and sends everything else
 * to the back end. The front is what nginx or Caddy is in production: a few lines of routing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request as forward, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Emulator } from '../../src/emulator/index.js';
import { emulatorEnvironment } from './emulator-env.js';
import { freePort } from './processes.mjs';

const DIST = new URL('../../dist/', import.meta.url);

export interface GatewayProcess {
  url: string;
  output(): string;
  close(): Promise<void>;
}

/**
 * `node dist/cli.js serve` on the emulator, its settings from the environment as the docs give
 * them; `settings` may add any other variable of docs/gateway.md (CALLBACK_URL, TRUSTED_FRONTS, …).
 */
export async function startGatewayProcess(
  emulator: Emulator,
  settings: { ALLOWED_ORIGINS: string; ORDER_SECRET: string; DECISION_URL: string; WEBHOOK_SECRET: string } & Record<
    string,
    string
  >,
): Promise<GatewayProcess> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'gateway-'));
  const child: ChildProcess = spawn(process.execPath, [new URL('cli.js', DIST).pathname, 'serve'], {
    env: {
      PATH: process.env.PATH,
      ...emulatorEnvironment(emulator),
      DATA_DIR: dataDir,
      PORT: String(port),
      ...settings,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  };
  const url = `http://127.0.0.1:${port}`;
  for (const until = Date.now() + 30_000; ; await new Promise((resolve) => setTimeout(resolve, 100))) {
    if (child.exitCode !== null) throw new Error(`the gateway exited (${child.exitCode}): ${output}`);
    if (
      await fetch(url + '/healthz').then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (Date.now() > until) {
      await close();
      throw new Error(`the gateway did not answer within 30 s: ${output}`);
    }
  }
  return { url, output: () => output, close };
}

/** Listens on `port` and routes as a shop's front: the gateway's paths to it, the UMD file from dist/, the rest to the back end. */
export async function startFront(port: number, gateway: string, backend: string): Promise<Server> {
  const umd = readFileSync(new URL('blackbox-capture.umd.js', DIST));
  const server = createServer((incoming, outgoing) => {
    const path = incoming.url ?? '/';
    if (path === '/blackbox-capture.umd.js') {
      outgoing.writeHead(200, { 'content-type': 'text/javascript' }).end(umd);
      return;
    }
    const toGateway = path === '/device-risk' || path.startsWith('/iojs/');
    const upstream = new URL(path, toGateway ? gateway : backend);
    const proxied = forward(upstream, { method: incoming.method, headers: incoming.headers }, (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    });
    proxied.on('error', () => outgoing.writeHead(502).end());
    incoming.pipe(proxied);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}
