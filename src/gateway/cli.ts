/**
 * `blackbox-capture serve [--env-file <path>]…`: the gateway (gateway.ts) configured by the
 * environment (settings.ts); the files' variables come first, the process's own override
 * them. A bad configuration: one line per problem on stderr, exit 2. SIGTERM or SIGINT: the
 * gateway closes (no new checkout, the checks under way finish, the rest kept), exit 0; not
 * closed within SHUTDOWN_TIMEOUT_MS, or a second signal: exit 1 at once, the rest kept.
 * `serve healthcheck`: asks a running gateway's /readyz (healthcheck.ts).
 */
import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { startGateway, type Gateway, type GatewayOptions } from './gateway.js';
import { createLog, type LogFields } from './log.js';
import {
  checkHealth,
  DEFAULT_TIMEOUT_SECONDS,
  healthcheckOptions,
  HealthcheckUsageError,
  readyzUrl,
} from './healthcheck.js';
import { parseSettings, SettingsError, VARIABLES } from './settings.js';

/** The command's name as its user types it: `blackbox-capture serve`, or the single executable's own. */
const SERVE_COMMAND = 'blackbox-capture serve';

const serveUsage = (command = SERVE_COMMAND) => `usage: ${command} [--env-file <path>]...
       ${command} healthcheck [--env-file <path>]... [--url <url>] [--timeout <seconds>]

Runs the gateway: POST /device-risk, /iojs/*, POST /callback, GET /decisions/{reference},
GET /openapi.json, GET /healthz, GET /readyz (and /status, /metrics on ADMIN_PORT). Configured by
environment variables (docs/gateway.md): ${Object.keys(VARIABLES).join(', ')}.

healthcheck: GET /readyz of the gateway at HOST and PORT (or --url) within --timeout seconds
(default ${DEFAULT_TIMEOUT_SECONDS}); exits 0 on 200, 1 otherwise (docs/deploy.md).`;

let command = SERVE_COMMAND;
/** The fields of the lines about stopping. */
const STOP: LogFields = { event: 'stop' };
const say = (line: string) => console.error(`${command}: ${line}`);

/** The environment: each --env-file in order, then the process's own variables over them. */
function environment(args: string[]): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const inline = arg.startsWith('--env-file=') ? arg.slice('--env-file='.length) : undefined;
    if (arg === '--help' || arg === '-h') {
      console.log(serveUsage(command));
      process.exit(0);
    }
    if (arg !== '--env-file' && inline === undefined) usage(`unknown option ${arg}`);
    const path = inline ?? args[++i];
    if (!path) usage('--env-file needs a path');
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      usage(`cannot read the env file ${path} (${(error as { code?: string }).code ?? 'unreadable'})`);
    }
    // A UTF-8 BOM (Windows editors write one) is no part of the first variable's name.
    const parsed = parseEnv(text.replace(/^\uFEFF/, ''));
    const cut = commentCut(text, parsed);
    if (cut)
      usage(
        `the env file ${path}, line ${cut.line}: ${cut.name}'s value has a '#', which this reader takes for the start of a comment and others of the same file (docker --env-file, systemd) for part of the value: quote the value (${cut.name}='…'), or put a comment on a line of its own`,
      );
    Object.assign(env, parsed);
  }
  return { ...env, ...process.env };
}

/**
 * The first line whose unquoted value a `#` cut short (parseEnv reads it as a comment): a
 * secret with a `#` would otherwise be taken cut, silently, and an inline comment is part of
 * the value to other readers of the same file (docs/deploy.md). Its value is never said.
 */
function commentCut(
  text: string,
  parsed: Record<string, string | undefined>,
): { line: number; name: string } | undefined {
  const lines = text.split(/\r?\n/);
  for (const [index, line] of lines.entries()) {
    const assignment = /^\s*(?:export\s+)?([\w.-]+)\s*=\s*(.*)$/.exec(line);
    if (!assignment) continue;
    const [, name, raw] = assignment as unknown as [string, string, string];
    if (/^['"`]/.test(raw) || !raw.includes('#')) continue;
    if (parsed[name] !== raw.trim()) return { line: index + 1, name };
  }
  return undefined;
}

function usage(problem: string): never {
  say(problem);
  console.error(serveUsage(command).split('\n\n')[0]);
  process.exit(2);
}

/** `healthcheck`: one line on stdout (200) or stderr (anything else), and its exit code. */
async function healthcheck(args: string[]): Promise<never> {
  let url, timeoutMs;
  try {
    const options = healthcheckOptions(args);
    timeoutMs = options.timeoutMs;
    url = options.url ?? readyzUrl(environment(options.rest));
  } catch (error) {
    if (!(error instanceof HealthcheckUsageError)) throw error;
    usage(error.message);
  }
  const result = await checkHealth({ url, timeoutMs });
  if (result.ok) console.log(result.line);
  else say(`healthcheck: ${result.line}`);
  process.exit(result.ok ? 0 : 1);
}

/** `serve`'s arguments; `name` is how usage lines call the command (the single executable's own name). */
export async function serve(args: string[], options: GatewayOptions = {}, name = SERVE_COMMAND): Promise<void> {
  command = name;
  if (args[0] === 'healthcheck') return healthcheck(args.slice(1));
  let settings;
  try {
    settings = parseSettings(environment(args));
  } catch (error) {
    if (!(error instanceof SettingsError)) throw error;
    for (const problem of error.problems) say(problem);
    process.exit(2);
  }
  // From here on the process's lines go as LOG_FORMAT says: JSON lines for a collector too.
  const tell =
    settings.logFormat === 'json'
      ? createLog('json', (line) => void process.stderr.write(`${line}\n`))
      : (line: string) => say(line);
  let gateway: Gateway | undefined;
  let stopping = false;
  const stop = (signal: string) => {
    // While starting (a Redis that does not answer yet holds the start) nothing is accepted: the
    // process exits at once, where node as a container's PID 1 would ignore the signal.
    if (!gateway) {
      tell(`${signal} while starting: exiting; nothing was accepted yet`, STOP);
      process.exit(0);
    }
    // A second signal: exit at once. What was accepted stays queued (DATA_DIR's database, or Redis).
    if (stopping) {
      gateway.flushLog();
      tell(`${signal} again: exiting now; what is queued and undelivered is kept`, STOP);
      process.exit(1);
    }
    stopping = true;
    tell(
      `${signal}: taking no new checkout, finishing the checks under way (at most ${settings.shutdownTimeoutMs} ms); answering 503 for ${settings.shutdownDrainMs} ms (SHUTDOWN_DRAIN_MS) before the listeners close`,
      STOP,
    );
    // The deadline holds whatever the store does (a Redis that does not answer holds close() forever).
    setTimeout(() => {
      gateway!.flushLog();
      tell(
        `not stopped within ${settings.shutdownTimeoutMs} ms (SHUTDOWN_TIMEOUT_MS): exiting; what is queued is kept`,
        {
          ...STOP,
          level: 'error',
        },
      );
      process.exit(1);
    }, settings.shutdownTimeoutMs).unref();
    gateway.close(settings.shutdownDrainMs).then(
      () => {
        tell('stopped; what is queued and undelivered is kept', STOP);
        process.exit(0);
      },
      (error: Error) => {
        tell(`stopping failed: ${error.message}`, { ...STOP, level: 'error' });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  gateway = await startGateway(settings, options).catch((error: Error) => {
    const code = (error as { code?: string }).code;
    tell(`cannot start: ${code ?? error.name} ${error.message}`, {
      level: 'error',
      event: 'start',
      ...(code ? { code } : {}),
    });
    process.exit(1);
  });
  // Said once the signals are ours: a process manager that signals as soon as it reads this line
  // (a deploy's quick restart) would otherwise end the process unannounced, with no close().
  console.log(`blackbox-capture gateway on ${gateway.url}${gateway.adminUrl ? ` (admin ${gateway.adminUrl})` : ''}`);
}
