/**
 * `blackbox-capture serve healthcheck`: asks a running gateway's `GET /readyz` and exits 0 on
 * 200, 1 on anything else (another status, no connection, no answer within the time limit), 2
 * on bad usage. For container images without curl (deploy/Containerfile's HEALTHCHECK) and
 * for probes that run a command (docs/deploy.md). The address is the gateway's own PORT and
 * HOST (the same variables and --env-file as `serve`), or --url.
 */

/** The gateway's own defaults (settings.ts: PORT 8787, HOST 127.0.0.1); a test holds them equal. */
export const DEFAULT_PORT = '8787';
export const DEFAULT_HOST = '127.0.0.1';
/** The request's time limit unless --timeout says: under the Containerfile's HEALTHCHECK --timeout. */
export const DEFAULT_TIMEOUT_SECONDS = 3;

export interface HealthcheckArgs {
  url: string;
  timeoutMs: number;
}

/** A refused command line: the message, for stderr with exit 2. */
export class HealthcheckUsageError extends Error {
  readonly code = 'invalid_usage';
}

/**
 * --url and --timeout from the arguments; the rest (--env-file) are `serve`'s, which reads the
 * environment from them (cli.ts) when no --url is given.
 */
export function healthcheckOptions(args: string[]): { url?: string; timeoutMs: number; rest: string[] } {
  const rest: string[] = [];
  let url: string | undefined;
  let timeoutSeconds = DEFAULT_TIMEOUT_SECONDS;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const equals = arg.indexOf('=');
    const flag = arg.startsWith('--') && equals !== -1 ? arg.slice(0, equals) : arg;
    if (flag !== '--url' && flag !== '--timeout') {
      rest.push(arg);
      continue;
    }
    const value = flag === arg ? args[++i] : arg.slice(equals + 1);
    if (!value) throw new HealthcheckUsageError(`${flag} needs a value`);
    if (flag === '--url') url = checkedUrl(value);
    else timeoutSeconds = seconds(value);
  }
  return { ...(url === undefined ? {} : { url }), timeoutMs: timeoutSeconds * 1000, rest };
}

function seconds(value: string): number {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed <= 0 || parsed > 300)
    throw new HealthcheckUsageError(`--timeout must be a number of seconds, above 0 and at most 300 (got ${value})`);
  return parsed;
}

function checkedUrl(value: string): string {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new HealthcheckUsageError(`--url must be an absolute http(s) URL (got ${value})`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new HealthcheckUsageError(`--url must be an absolute http(s) URL (got ${value})`);
  return parsed.href;
}

/**
 * http://HOST:PORT/readyz, from the gateway's own variables. A gateway listening on every
 * address (0.0.0.0, ::) is asked on loopback.
 */
export function readyzUrl(env: Record<string, string | undefined>): string {
  const port = env.PORT?.trim() || DEFAULT_PORT;
  if (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535)
    throw new HealthcheckUsageError(
      `PORT must be a port from 1 to 65535 to be asked (got ${JSON.stringify(port)}; with PORT=0, give --url)`,
    );
  let host = env.HOST?.trim() || DEFAULT_HOST;
  if (host === '0.0.0.0') host = '127.0.0.1';
  if (host === '::' || host === '[::]') host = '::1';
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}/readyz`;
}

/** What the check found: ok, and the line it prints. */
export interface HealthcheckResult {
  ok: boolean;
  line: string;
}

/** One GET of `url` within `timeoutMs`: ok only on 200. */
export async function checkHealth({ url, timeoutMs }: HealthcheckArgs): Promise<HealthcheckResult> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
    // The body is not needed: the status says it; cancelling frees the socket at once.
    await response.body?.cancel();
    return { ok: response.status === 200, line: `${url} answered ${response.status}` };
  } catch (error) {
    const name = (error as Error).name;
    if (name === 'TimeoutError' || name === 'AbortError')
      return { ok: false, line: `${url} did not answer within ${timeoutMs / 1000} s` };
    const cause = (error as { cause?: { code?: string } }).cause;
    return { ok: false, line: `${url} could not be reached (${cause?.code ?? (error as Error).message})` };
  }
}
