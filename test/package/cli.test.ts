// The package's command as users run it (dist/cli.js, package.json's bin, built from src/cli.ts):
// --version, the usage on stderr for no command or an unknown one, the doctor's
// --loader-version (and its deprecated --version), and `serve healthcheck` as a container's
// HEALTHCHECK runs it, against stub servers on loopback: the exit code is the answer.
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeServers, serve } from '../support/http.js';
import { freePort } from '../support/processes.mjs';
import { ROOT } from '../support/tarball.js';

afterEach(closeServers);

const CLI = join(ROOT, 'dist', 'cli.js');

/** dist/cli.js with `args`, only PATH (and `env`) in its environment. */
const cli = (args: string[], env: Record<string, string> = {}) =>
  new Promise<{ status: number | null; stdout: string; stderr: string; ms: number }>((resolve) => {
    const started = Date.now();
    const child = execFile(
      process.execPath,
      [CLI, ...args],
      { encoding: 'utf8', env: { PATH: process.env.PATH!, ...env } },
      (_, stdout, stderr) => resolve({ status: child.exitCode, stdout, stderr, ms: Date.now() - started }),
    );
  });

describe('blackbox-capture (dist/cli.js)', () => {
  it('--version and -v print the package version', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v'])
      expect(await cli([flag])).toMatchObject({ status: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('no command, or an unknown one: the usage on stderr, nothing on stdout, exit 2', async () => {
    for (const [args, problem] of [
      [[], 'blackbox-capture: no command given'],
      [['check'], 'blackbox-capture: unknown command check'],
      [['--nope'], 'blackbox-capture: unknown command --nope'],
    ] as const) {
      const result = await cli([...args]);
      expect(result.status, args.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr.split('\n')[0]).toBe(problem);
      expect(result.stderr).toContain('blackbox-capture serve healthcheck');
      expect(result.stderr).toContain('blackbox-capture --version');
    }
  });

  it("doctor's --loader-version names the loader's version; --version still does, with a note on stderr", async () => {
    // The page cannot be fetched (exit 1); the flags are read before it is.
    const page = 'http://shop.invalid/checkout';
    const current = await cli(['doctor', page, '--json', '--loader-version', 'general6']);
    expect(current.status).toBe(1);
    expect(current.stderr).toBe('');
    const old = await cli(['doctor', page, '--json', '--version', 'general6']);
    expect(old.status).toBe(1);
    expect(old.stderr).toBe(
      'blackbox-capture doctor: --version is deprecated: use --loader-version (the same value)\n',
    );
  });
});

describe('blackbox-capture serve healthcheck', () => {
  /** A stub gateway answering GET /readyz with `status`; what it was asked. */
  async function stub(status: number) {
    const asked: string[] = [];
    const url = await serve((req, res) => {
      asked.push(`${req.method} ${req.url}`);
      res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
    });
    return { url, port: new URL(url).port, asked };
  }

  it('200 from /readyz at the PORT and HOST of its environment: exit 0, one line on stdout', async () => {
    const gateway = await stub(200);
    const result = await cli(['serve', 'healthcheck'], { PORT: gateway.port, HOST: '0.0.0.0' });
    expect(result).toMatchObject({
      status: 0,
      stdout: `http://127.0.0.1:${gateway.port}/readyz answered 200\n`,
      stderr: '',
    });
    expect(gateway.asked).toEqual(['GET /readyz']);
  });

  it('reads PORT from an --env-file as serve does; the process environment overrides it', async () => {
    const gateway = await stub(200);
    const file = join(mkdtempSync(join(tmpdir(), 'bbc-healthcheck-')), 'gateway.env');
    writeFileSync(file, `PORT=${gateway.port}\nHOST=127.0.0.1\nCLIENT_SECRET=not-needed-here\n`);
    expect((await cli(['serve', 'healthcheck', '--env-file', file])).status).toBe(0);
    const elsewhere = String(await freePort());
    const overridden = await cli(['serve', 'healthcheck', '--env-file', file], { PORT: elsewhere });
    expect(overridden.status).toBe(1);
    expect(overridden.stderr).toContain(`http://127.0.0.1:${elsewhere}/readyz could not be reached (ECONNREFUSED)`);
  });

  it('503 (not ready, or stopping): exit 1, the answer on stderr', async () => {
    const gateway = await stub(503);
    const result = await cli(['serve', 'healthcheck', '--url', `${gateway.url}/readyz`]);
    expect(result).toMatchObject({
      status: 1,
      stdout: '',
      stderr: `blackbox-capture serve: healthcheck: ${gateway.url}/readyz answered 503\n`,
    });
  });

  it('no answer within --timeout: exit 1 at the limit', async () => {
    const silent = await serve(() => undefined);
    const result = await cli(['serve', 'healthcheck', '--url', `${silent}/readyz`, '--timeout', '0.5']);
    expect(result.status).toBe(1);
    expect(result.stderr).toBe(`blackbox-capture serve: healthcheck: ${silent}/readyz did not answer within 0.5 s\n`);
  });

  it('bad usage: exit 2 with the usage, never a request', async () => {
    for (const args of [['--url', 'nowhere'], ['--timeout', '0'], ['--timeout'], ['--nope']]) {
      const result = await cli(['serve', 'healthcheck', ...args]);
      expect(result.status, args.join(' ')).toBe(2);
      expect(result.stderr).toContain('usage: blackbox-capture serve [--env-file <path>]...');
    }
    expect((await cli(['serve', 'healthcheck'], { PORT: '0' })).stderr).toContain('with PORT=0, give --url');
  });

  it("run through its #! line as npx runs it, a missing --env-file is its own refusal, not node's", () => {
    // Node 26 takes a `--env-file` after the script for its own (exit 9) unless `--` ends its options.
    for (const args of [
      ['serve', '--env-file', '/nonexistent/gateway.env'],
      ['serve', 'healthcheck', '--env-file', '/nonexistent/gateway.env'],
    ]) {
      const result = spawnSync(CLI, args, { encoding: 'utf8', env: { PATH: process.env.PATH! } });
      expect(result.status, args.join(' ')).toBe(2);
      expect(result.stderr.split('\n')[0]).toMatch(
        /^blackbox-capture serve: cannot read the env file \/nonexistent\/gateway\.env/,
      );
    }
  });
});
