// Who may read the admin listener's /status and /metrics (src/gateway/admin-guard.ts,
// docs/gateway.md#the-admin-listener): only under ADMIN_HOSTS' names, and off loopback only
// with ADMIN_TOKEN as a bearer; /healthz and /readyz stay open. Each refusal is logged.
import { describe, expect, it } from 'vitest';
import { guardAdmin } from '../../src/gateway/admin-guard.js';
import type { LogFields } from '../../src/gateway/log.js';

const TOKEN = 'the-bearer-of-the-admin-routes-32chars';
const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]'];

function guarded(admin: { hosts: readonly string[]; token?: string } = { hosts: LOOPBACK_HOSTS, token: TOKEN }) {
  const lines: Array<[string, LogFields | undefined]> = [];
  const handler = guardAdmin(
    () => new Response('inside'),
    admin,
    (line, fields) => lines.push([line, fields]),
  );
  /** GET `path` under `host`, from `address`, with `headers`. */
  const ask = async (path: string, host: string | null, address?: string, headers: Record<string, string> = {}) => {
    const request = new Request(`http://admin.test${path}`, {
      headers: host === null ? headers : { ...headers, host },
    });
    const answer = await handler(request, address === undefined ? undefined : { clientAddress: address });
    return { status: answer.status, headers: answer.headers, body: await answer.text() };
  };
  return { ask, lines };
}

describe('the admin guard', () => {
  it.each([
    ['localhost:9464', '127.0.0.1'],
    ['LOCALHOST', '127.0.0.1'],
    ['127.0.0.1:9464', '127.8.9.10'],
    ['127.0.0.1', '127.10.20.1'],
    ['[::1]:9464', '::1'],
    ['[::1]', '::ffff:127.0.0.1'],
  ])('lets a loopback caller read /status and /metrics under %s (from %s) without a token', async (host, address) => {
    const { ask, lines } = guarded();
    for (const path of ['/status', '/metrics']) expect((await ask(path, host, address)).body).toBe('inside');
    expect(lines).toEqual([]);
  });

  it('refuses a Host not in ADMIN_HOSTS 421 misdirected_request, logged; a missing Host too', async () => {
    const { ask, lines } = guarded();
    for (const host of ['rebound.example', 'localhost.rebound.example', null]) {
      const answer = await ask('/metrics', host, '127.0.0.1');
      expect(answer.status).toBe(421);
      expect(JSON.parse(answer.body)).toEqual({ error: { code: 'misdirected_request' } });
      expect(answer.headers.get('cache-control')).toBe('no-store');
    }
    expect(lines).toHaveLength(3);
    expect(lines[0]).toEqual([
      'refused an admin request: misdirected_request (its Host is not one of ADMIN_HOSTS)',
      { level: 'warn', event: 'refused', code: 'misdirected_request' },
    ]);
  });

  it('leaves /healthz, /readyz and any other path to the handler, whatever the Host and the caller', async () => {
    const { ask, lines } = guarded({ hosts: ['localhost'] });
    for (const path of ['/healthz', '/readyz', '/status/x', '/metricsx'])
      expect((await ask(path, 'rebound.example', '198.51.100.7')).body).toBe('inside');
    expect(lines).toEqual([]);
  });

  it('off loopback: only the exact bearer of ADMIN_TOKEN; anything else 401 admin_unauthorized, logged', async () => {
    const { ask, lines } = guarded();
    const from = '198.51.100.7';
    expect((await ask('/status', 'localhost', from, { authorization: `Bearer ${TOKEN}` })).body).toBe('inside');
    for (const authorization of [undefined, `Bearer ${TOKEN}x`, TOKEN, `bearer ${TOKEN}`, 'Bearer ']) {
      const answer = await ask('/status', 'localhost', from, authorization === undefined ? {} : { authorization });
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toBe('Bearer');
      expect(answer.headers.get('cache-control')).toBe('no-store');
      expect(JSON.parse(answer.body)).toEqual({ error: { code: 'admin_unauthorized' } });
    }
    expect(lines.map(([line]) => line)).toEqual(Array(5).fill('refused an admin request: admin_unauthorized'));
    expect(lines[0]![1]).toEqual({ level: 'warn', event: 'refused', code: 'admin_unauthorized' });
    // No secret in what is logged.
    expect(JSON.stringify(lines)).not.toContain(TOKEN);
  });

  it.each([
    ['an address that only looks like loopback', '10.127.0.0.1'],
    ['a loopback address with a suffix', '127.0.0.1.example'],
    ['a mapped address off loopback', '::ffff:10.0.0.1'],
    ['no address at all', undefined],
  ])('treats %s as off loopback', async (_, address) => {
    const { ask } = guarded();
    expect((await ask('/status', 'localhost', address)).status).toBe(401);
    expect((await ask('/status', 'localhost', address, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
  });

  it('a request forwarded by a front (X-Forwarded-For) needs the token, whatever address the front names', async () => {
    const { ask, lines } = guarded();
    // A trusted front's X-Forwarded-For made the context's address loopback.
    const forwarded = { 'x-forwarded-for': '127.0.0.1' };
    expect((await ask('/metrics', 'localhost', '127.0.0.1', forwarded)).status).toBe(401);
    expect(lines.map(([line]) => line)).toEqual(['refused an admin request: admin_unauthorized']);
    expect(
      (await ask('/metrics', 'localhost', '127.0.0.1', { ...forwarded, authorization: `Bearer ${TOKEN}` })).body,
    ).toBe('inside');
    expect((await ask('/metrics', 'localhost', '127.0.0.1')).body).toBe('inside');
  });

  it('without ADMIN_TOKEN, refuses every caller off loopback, even one sending "Bearer undefined"', async () => {
    const { ask } = guarded({ hosts: ['localhost'] });
    for (const authorization of ['Bearer undefined', 'Bearer ', ''])
      expect((await ask('/status', 'localhost', '198.51.100.7', { authorization })).status).toBe(401);
    expect((await ask('/status', 'localhost', '127.0.0.1')).status).toBe(200);
  });
});
