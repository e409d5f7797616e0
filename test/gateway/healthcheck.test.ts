// `blackbox-capture serve healthcheck` (src/gateway/healthcheck.ts): the address it asks, from
// the gateway's own variables or --url, and what it makes of each answer, against stub servers
// on loopback: 200, another status, no listener, no answer within the time limit.
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import {
  checkHealth,
  DEFAULT_HOST,
  DEFAULT_PORT,
  DEFAULT_TIMEOUT_SECONDS,
  healthcheckOptions,
  HealthcheckUsageError,
  readyzUrl,
} from '../../src/gateway/healthcheck.js';
import { parseSettings } from '../../src/gateway/settings.js';
import { closeServers, serve } from '../support/http.js';
import { freePort } from '../support/processes.mjs';

afterEach(closeServers);

const usageError = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(HealthcheckUsageError);
    expect((error as HealthcheckUsageError).code).toBe('invalid_usage');
    return (error as Error).message;
  }
  throw new Error('no usage error');
};

describe('the address healthcheck asks', () => {
  it("is the gateway's own default address: the settings' defaults", () => {
    const settings = parseSettings({
      CLIENT_ID: 'c',
      CLIENT_SECRET: 's',
      REGION: 'US',
      WORKFLOW_KEY: '1',
      ALLOWED_ORIGINS: 'https://shop.example',
      ORDER_SECRET: 'o'.repeat(32),
      DECISION_URL: 'https://shop.example/hook',
      WEBHOOK_SECRET: `whsec_${Buffer.alloc(24, 7).toString('base64')}`,
    });
    expect([String(settings.port), settings.host]).toEqual([DEFAULT_PORT, DEFAULT_HOST]);
    expect(readyzUrl({})).toBe(`http://${settings.host}:${settings.port}/readyz`);
  });

  it('reads PORT and HOST; every address (0.0.0.0, ::) is asked on loopback; IPv6 in brackets', () => {
    expect(readyzUrl({ PORT: '9000', HOST: '10.1.2.3' })).toBe('http://10.1.2.3:9000/readyz');
    expect(readyzUrl({ PORT: ' 9000 ', HOST: '0.0.0.0' })).toBe('http://127.0.0.1:9000/readyz');
    expect(readyzUrl({ HOST: '::' })).toBe('http://[::1]:8787/readyz');
    expect(readyzUrl({ HOST: 'fd00::5' })).toBe('http://[fd00::5]:8787/readyz');
    expect(readyzUrl({ HOST: 'gateway.internal' })).toBe('http://gateway.internal:8787/readyz');
    // Written with brackets already: kept, and every address in brackets too.
    expect(readyzUrl({ HOST: '[::]' })).toBe('http://[::1]:8787/readyz');
    expect(readyzUrl({ HOST: '[fd00::5]' })).toBe('http://[fd00::5]:8787/readyz');
    // Blank is unset.
    expect(readyzUrl({ PORT: ' ', HOST: ' ' })).toBe('http://127.0.0.1:8787/readyz');
    expect(readyzUrl({ PORT: '1' })).toBe('http://127.0.0.1:1/readyz');
    expect(readyzUrl({ PORT: '65535' })).toBe('http://127.0.0.1:65535/readyz');
  });

  it('refuses a PORT it cannot ask: 0 (a free port, unknown here), not a number, out of range', () => {
    for (const PORT of ['0', 'http', '65536', '-1', '9000x', 'x9000'])
      expect(usageError(() => readyzUrl({ PORT }))).toMatch(/^PORT must be a port from 1 to 65535/);
  });

  it('takes --url and --timeout, either form, and leaves the rest (--env-file) to serve', () => {
    expect(healthcheckOptions([])).toStrictEqual({ timeoutMs: DEFAULT_TIMEOUT_SECONDS * 1000, rest: [] });
    expect(healthcheckOptions(['--url', 'http://127.0.0.1:1/readyz', '--timeout=0.5', '--env-file', 'g.env'])).toEqual({
      url: 'http://127.0.0.1:1/readyz',
      timeoutMs: 500,
      rest: ['--env-file', 'g.env'],
    });
    expect(healthcheckOptions(['--url=https://gw.example/readyz', '--timeout', '10']).url).toBe(
      'https://gw.example/readyz',
    );
    // Only a flag's own `=`: a value of serve's that holds one stays serve's.
    expect(healthcheckOptions(['--env-file', 'a=--url', 'TIMEOUT=--timeout=1'])).toEqual({
      timeoutMs: DEFAULT_TIMEOUT_SECONDS * 1000,
      rest: ['--env-file', 'a=--url', 'TIMEOUT=--timeout=1'],
    });
    // The bounds: 300 s at most, any time above 0.
    expect(healthcheckOptions(['--timeout', '300']).timeoutMs).toBe(300_000);
    expect(healthcheckOptions(['--timeout', '0.01']).timeoutMs).toBe(10);
    expect(healthcheckOptions(['--url', 'http://gw.example']).url).toBe('http://gw.example/');
  });

  it('refuses a bad --url or --timeout, and a flag without its value', () => {
    expect(usageError(() => healthcheckOptions(['--url', 'localhost:8787']))).toMatch(/^--url must be/);
    expect(usageError(() => healthcheckOptions(['--url', 'ftp://gw/readyz']))).toMatch(/^--url must be/);
    expect(usageError(() => healthcheckOptions(['--url', 'http://']))).toBe(
      '--url must be an absolute http(s) URL (got http://)',
    );
    for (const value of ['0', 'soon', '301', 'Infinity'])
      expect(usageError(() => healthcheckOptions(['--timeout', value]))).toMatch(/^--timeout must be/);
    expect(usageError(() => healthcheckOptions(['--url']))).toBe('--url needs a value');
    expect(usageError(() => healthcheckOptions(['--timeout=']))).toBe('--timeout needs a value');
  });
});

describe('what healthcheck makes of the answer', () => {
  const stub = (answer: (res: ServerResponse) => void) => serve((_req, res) => answer(res));

  it('200 from /readyz: ok', async () => {
    let asked = '';
    const url = await serve((req, res) => {
      asked = `${req.method} ${req.url}`;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ready"}');
    });
    expect(await checkHealth({ url: `${url}/readyz`, timeoutMs: 5000 })).toEqual({
      ok: true,
      line: `${url}/readyz answered 200`,
    });
    expect(asked).toBe('GET /readyz');
  });

  it('any other status is not ok: 503 (not ready, shutting down), 404 (no such route), a redirect', async () => {
    for (const status of [503, 404, 204, 302]) {
      const url = await stub((res) => res.writeHead(status, status === 302 ? { location: '/elsewhere' } : {}).end());
      expect(await checkHealth({ url, timeoutMs: 5000 })).toEqual({ ok: false, line: `${url} answered ${status}` });
    }
  });

  it('a request that cannot be made: not ok, naming why', async () => {
    const url = 'http://user:pw@127.0.0.1:1/readyz';
    const { ok, line } = await checkHealth({ url, timeoutMs: 5000 });
    expect(ok).toBe(false);
    expect(line).toMatch(/^http:\/\/user:pw@127\.0\.0\.1:1\/readyz could not be reached \(.*credentials.*\)$/);
  });

  it('no listener: not ok, naming the connection error', async () => {
    const url = `http://127.0.0.1:${await freePort()}/readyz`;
    expect(await checkHealth({ url, timeoutMs: 5000 })).toEqual({
      ok: false,
      line: `${url} could not be reached (ECONNREFUSED)`,
    });
  });

  it('no answer within the time limit: not ok, and it returns at the limit, not at the server', async () => {
    // The stub never answers; closeServers() ends its socket after the test.
    const url = await stub(() => undefined);
    expect(await checkHealth({ url, timeoutMs: 200 })).toEqual({
      ok: false,
      line: `${url} did not answer within 0.2 s`,
    });
  });
});
