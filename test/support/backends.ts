/**
 * The shop back ends in other languages (examples/gateway/, each shown in docs/gateway.md as
 * it is here), run as a shop runs them: each file copied alone into a folder of its own and
 * started by its language's own tool (Debian's php-cli `php -S`, python3, `go run`, Java 17's
 * single-file `java`, ruby). Each renders the checkout page with an order token, and verifies and
 * records the gateway's signed decisions (docs/gateway.md#back-ends-in-other-languages).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { freePort } from './processes.mjs';

const ROOT = new URL('../../', import.meta.url);

export interface Backend {
  /** Its snippet in docs/gateway.md is `gateway-<name>`. */
  name: 'php' | 'python' | 'go' | 'java' | 'ruby';
  /** The file, relative to the package root. */
  file: string;
  /** The toolchain it needs, and the Debian package that has it. */
  tool: string;
  apt: string;
  /** The command that serves it on `port`, in the folder that holds the file alone. */
  command(port: number): string[];
}

export const BACKENDS: readonly Backend[] = [
  {
    name: 'php',
    file: 'examples/gateway/php/shop.php',
    tool: 'php',
    apt: 'php-cli',
    command: (port) => ['php', '-S', `127.0.0.1:${port}`, 'shop.php'],
  },
  {
    name: 'python',
    file: 'examples/gateway/python/shop.py',
    tool: 'python3',
    apt: 'python3',
    command: () => ['python3', 'shop.py'],
  },
  {
    name: 'go',
    file: 'examples/gateway/go/shop.go',
    tool: 'go',
    apt: 'golang-go',
    command: () => ['go', 'run', 'shop.go'],
  },
  {
    name: 'java',
    file: 'examples/gateway/java/Shop.java',
    tool: 'java',
    apt: 'openjdk-17-jdk-headless',
    command: () => ['java', 'Shop.java'],
  },
  {
    name: 'ruby',
    file: 'examples/gateway/ruby/shop.rb',
    tool: 'ruby',
    apt: 'ruby',
    command: () => ['ruby', 'shop.rb'],
  },
];

/** The source of a back end, as the docs show it. */
export const sourceOf = (backend: Backend) => readFileSync(new URL(backend.file, ROOT), 'utf8');

/**
 * Lines of its own code: not blank, not a comment, not an import (Go's import block, Java's
 * and Python's import lines, Ruby's require), which name the standard library and do nothing.
 */
export function codeLines(source: string): number {
  let inImports = false;
  return source.split('\n').filter((line) => {
    if (/^import \($/.test(line)) return !(inImports = true);
    if (inImports) return line === ')' ? (inImports = false) : false;
    return !/^\s*$|^\s*(\/\/|#)|^import |^from \S+ import |^require /.test(line);
  }).length;
}

/** Whether a toolchain answers its version question (`--version`; Java's `-version`, Go's `version`). */
const VERSION_ARG: Record<string, string> = { java: '-version', go: 'version' };
const hasTool = (tool: string) => spawnSync(tool, [VERSION_ARG[tool] ?? '--version']).status === 0;

/**
 * The back ends whose toolchain this machine has, and the names of those it lacks. With CI
 * set a missing one is an error, never a skip (.ci/run installs them).
 */
export function availableBackends(env = process.env): { present: Backend[]; missing: string[] } {
  const present = BACKENDS.filter((backend) => hasTool(backend.tool));
  const missing = BACKENDS.filter((backend) => !present.includes(backend)).map((b) => `${b.name} (${b.apt})`);
  if (env.CI && missing.length)
    throw new Error(`CI is set and a back end's toolchain is missing: ${missing.join(', ')} (.ci/run installs them)`);
  return { present, missing };
}

export interface RunningBackend {
  url: string;
  /** Every decision it recorded: the webhooks' bodies, parsed, in order. */
  decisions(): unknown[];
  /** What it wrote to stdout and stderr. */
  output(): string;
  close(): Promise<void>;
}

export interface BackendSettings {
  ORDER_SECRET: string;
  WEBHOOK_SECRET: string;
  LOADER_URL: string;
}

/** Starts `backend` from a folder of its own; resolves once its page answers (a build included: `go run`). */
export async function startBackend(backend: Backend, settings: BackendSettings): Promise<RunningBackend> {
  const dir = mkdtempSync(join(tmpdir(), `shop-${backend.name}-`));
  copyFileSync(new URL(backend.file, ROOT), join(dir, basename(backend.file)));
  const port = await freePort();
  const [command, ...args] = backend.command(port);
  const child: ChildProcess = spawn(command!, args, {
    cwd: dir,
    env: { ...process.env, ...settings, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill();
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  // Started when its page answers; a toolchain that exits (a build that failed) fails at once.
  for (const until = Date.now() + 240_000; ;) {
    if (child.exitCode !== null) throw new Error(`${backend.name} exited (${child.exitCode}): ${output}`);
    const answered = await fetch(url + '/').then(
      (response) => response.ok,
      () => false,
    );
    if (answered) break;
    if (Date.now() > until) {
      await close();
      throw new Error(`${backend.name} did not answer within 240 s: ${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const log = join(dir, 'decisions.jsonl');
  return {
    url,
    decisions: () =>
      existsSync(log)
        ? readFileSync(log, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line) as unknown)
        : [],
    output: () => output,
    close,
  };
}
