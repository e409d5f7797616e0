/**
 * Who may read the admin listener's /status and /metrics (docs/gateway.md#the-admin-listener):
 * only under the Host names of ADMIN_HOSTS (default loopback's), so that a page on a
 * DNS-rebound name cannot read them through a browser (421 `misdirected_request`); and, from an
 * address off loopback, only with `Authorization: Bearer <ADMIN_TOKEN>` (401
 * `admin_unauthorized`; without ADMIN_TOKEN, never). /healthz and /readyz stay open: probes
 * carry no credentials and they tell nothing private.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FetchHandler } from '../server/index.js';
import { refusedEvent, toldRefusal, type Log } from './log.js';

const GUARDED = new Set(['/status', '/metrics']);

const refusal = (status: number, code: string, headers: Record<string, string> = {}) =>
  Response.json({ error: { code } }, { status, headers: { 'cache-control': 'no-store', ...headers } });

const digest = (text: string) => createHash('sha256').update(text).digest();

/** 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
const isLoopback = (address: string | undefined) =>
  address !== undefined && (/^(?:::ffff:)?127\.\d+\.\d+\.\d+$/.test(address) || address === '::1');

/** The Host header's name, lower case, without its port (`[::1]` keeps its brackets). */
function hostName(host: string | null): string | undefined {
  if (!host) return undefined;
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d*$/, '');
  return name.toLowerCase();
}

export function guardAdmin(
  handler: FetchHandler,
  admin: { hosts: readonly string[]; token?: string },
  log: Log,
): FetchHandler {
  const expected = admin.token === undefined ? undefined : digest(`Bearer ${admin.token}`);
  return (request, context) => {
    if (!GUARDED.has(new URL(request.url).pathname)) return handler(request, context);
    if (!admin.hosts.includes(hostName(request.headers.get('host')) ?? '')) {
      log(
        'refused an admin request: misdirected_request (its Host is not one of ADMIN_HOSTS)',
        refusedEvent('misdirected_request'),
      );
      return toldRefusal(refusal(421, 'misdirected_request'));
    }
    // Loopback by the socket only: an address a trusted front forwarded (X-Forwarded-For) may be
    // anyone's, a front that publishes the admin port included, so a forwarded request needs the token.
    if (!isLoopback(context?.clientAddress) || request.headers.has('x-forwarded-for')) {
      // Compared as digests, in constant time: a wrong bearer learns nothing of the right one.
      const given = digest(request.headers.get('authorization') ?? '');
      if (!expected || !timingSafeEqual(given, expected)) {
        log('refused an admin request: admin_unauthorized', refusedEvent('admin_unauthorized'));
        return toldRefusal(refusal(401, 'admin_unauthorized', { 'www-authenticate': 'Bearer' }));
      }
    }
    return handler(request, context);
  };
}
