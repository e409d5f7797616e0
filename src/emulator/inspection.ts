/**
 * What reached the emulated collector, for the doctor's leak check: a request whose query
 * carries `bbc-doctor=<marker>` has its headers kept (the newest `KEPT_MARKERS` markers), and
 * `GET /__bbc/last-request?marker=<marker>` answers them. The emulator's alone: the vendor's
 * collector has no such path, and the kit never forwards to one of its own.
 *
 * The headers a front forwards may carry a shop's cookies, so the answer is given only to a
 * direct request from this machine: a loopback peer, and no forwarding header (a request that
 * came through a front, even one on this machine, is refused).
 */
import type { FetchHandler } from '../server/index.js';

/** The inspection path on the collector's origin. */
const INSPECTION_PATH = '/__bbc/last-request';
/** The query parameter that marks a request to keep. */
const MARKER_PARAMETER = 'bbc-doctor';
/** Markers kept at most; the oldest is forgotten first. */
export const KEPT_MARKERS = 64;
const MARKER = /^[A-Za-z0-9_-]{8,80}$/;
const FORWARDING_HEADERS = ['forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-real-ip', 'via'];

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
  });

const loopback = (address: string | undefined) =>
  address !== undefined && (/^127\./.test(address) || address === '::1' || address === '::ffff:127.0.0.1');

/** The collector's handler with the inspection path and the recording of marked requests around it. */
export function withInspection(collector: FetchHandler): FetchHandler {
  const seen = new Map<string, Record<string, string>>();
  return async (request, context) => {
    const url = new URL(request.url);
    if (url.pathname === INSPECTION_PATH) {
      if (request.method !== 'GET') return json(405, { error: { code: 'method_not_allowed' } });
      if (!loopback(context?.clientAddress) || FORWARDING_HEADERS.some((name) => request.headers.has(name)))
        return json(403, { error: { code: 'inspection_local_only' } });
      // Stryker disable next-line StringLiteral: any default without the marker's form is refused as '' is
      const marker = url.searchParams.get('marker') ?? '';
      if (!MARKER.test(marker)) return json(400, { error: { code: 'bad_marker' } });
      const headers = seen.get(marker);
      if (!headers) return json(404, { error: { code: 'not_seen' } });
      return json(200, { marker, headers });
    }
    const marker = url.searchParams.get(MARKER_PARAMETER);
    if (marker !== null && MARKER.test(marker)) {
      seen.delete(marker);
      seen.set(marker, Object.fromEntries(request.headers));
      for (const oldest of seen.keys()) {
        if (seen.size <= KEPT_MARKERS) break;
        seen.delete(oldest);
      }
    }
    return collector(request, context);
  };
}
