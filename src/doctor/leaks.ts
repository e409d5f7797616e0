/**
 * Does the front leak? A first-party front runs on the shop's own origin, so a careless one
 * (a bare Next.js `rewrites()`, a proxy that forwards everything) hands the vendor the shop's
 * session cookie, the shopper's `Authorization`, the shop's `Host` and whatever address the
 * client claims, and lets the vendor set cookies on the whole site.
 *
 * Two checks. `cookieScope` reads the `Set-Cookie` lines that came back through the front:
 * each must carry the kit's namespace (`bbc_`) and stay under the prefix. `checkForwarded`,
 * given the emulator's collector, sends one marked request through the front (a shop-like
 * session cookie, a bearer token, a spoofed X-Forwarded-For) and asks the collector what
 * arrived (src/emulator/inspection.ts).
 */
import type { CheckStatus } from './doctor.js';
import { readText } from './fetching.js';

/** The ids of the leak check's findings. */
export type LeakId = 'leak_check' | 'leak_cookies' | 'leak_auth' | 'leak_address' | 'leak_host';

/** The address the doctor claims to be: TEST-NET-2 (RFC 5737), nobody's. */
const SPOOFED_ADDRESS = '198.51.100.66';
/** Where the emulator's collector answers what a marked request carried. */
export const INSPECTION_PATH = '/__bbc/last-request';
/** The query parameter that marks a request the emulator's collector keeps. */
export const MARKER_PARAMETER = 'bbc-doctor';

export const NEXT_FIX =
  "on Next.js, mount the kit's proxy in a route handler (app/iojs/[...path]/route.ts) instead of rewrites()";

/**
 * What is wrong with the vendor cookies that came back through the front: undefined when
 * nothing. A cookie outside the namespace is the vendor's raw cookie on the shop's names; a
 * Path outside the prefix (or a Domain) sends it with every request to the shop.
 */
export function cookieScope(
  lines: readonly string[],
  options: { prefix: string; cookiePrefix: string; requestPath: string },
): { message: string; fix: string } | undefined {
  const problems: string[] = [];
  for (const line of lines) {
    // Stryker disable next-line StringLiteral: split() always gives a first part; the default only types it
    const [pair = '', ...attributes] = line.split(';');
    const name = pair.slice(0, Math.max(pair.indexOf('='), 0)).trim() || pair.trim();
    // Without a Path, a browser scopes the cookie to the request path's directory (RFC 6265 5.1.4).
    let path = options.requestPath.slice(0, Math.max(options.requestPath.lastIndexOf('/'), 1));
    let domain: string | undefined;
    for (const attribute of attributes) {
      const at = attribute.indexOf('=');
      // Stryker disable next-line EqualityOperator: an attribute starting with '=' has a key of '' or '=…', neither Path nor Domain
      const key = (at < 0 ? attribute : attribute.slice(0, at)).trim().toLowerCase();
      // Stryker disable next-line EqualityOperator: at 0 the key is '', so the value is never read
      const value = at < 0 ? '' : attribute.slice(at + 1).trim();
      if (key === 'path') path = value.startsWith('/') ? value : '/';
      else if (key === 'domain') domain = value;
    }
    const wrong: string[] = [];
    if (!name.startsWith(options.cookiePrefix) || name.length === options.cookiePrefix.length)
      wrong.push(`not in the ${options.cookiePrefix} namespace`);
    if (path !== options.prefix && !path.startsWith(options.prefix + '/'))
      wrong.push(`Path=${path}, outside ${options.prefix}`);
    if (domain !== undefined) wrong.push(`Domain=${domain}, every subdomain`);
    if (wrong.length) problems.push(`${name}: ${wrong.join(', ')}`);
  }
  if (problems.length === 0) return undefined;
  return {
    message: `the front sets the vendor's cookie on the shop's site: ${problems.join('; ')}`,
    fix: `rename each vendor cookie to ${options.cookiePrefix}<name> with Path=${options.prefix} and no Domain, as createFirstPartyProxy does (or drop Set-Cookie, as the shipped nginx configuration does); ${NEXT_FIX}`,
  };
}

/**
 * The values of each header in a collector's inspection answer, by lower-case name. The
 * emulator's holds one string per header, its lines joined as `Headers` joins them
 * (src/emulator/inspection.ts; docs/emulator.md, the collector); a collector that keeps each line (Node's `headersDistinct`)
 * holds an array, and a JSON number is the header's text. A value of any other shape is
 * `undefined`: what it holds cannot be read, so a check on it cannot pass.
 */
function inspectedHeaders(headers: Record<string, unknown>): Map<string, string[] | undefined> {
  const line = (value: unknown) =>
    typeof value === 'string' ? value : typeof value === 'number' && Number.isFinite(value) ? String(value) : undefined;
  const read = (value: unknown): string[] | undefined => {
    const lines = Array.isArray(value) ? value.map(line) : [line(value)];
    return lines.every((text): text is string => text !== undefined) ? lines : undefined;
  };
  const byName = new Map<string, string[] | undefined>();
  for (const [name, value] of Object.entries(headers)) {
    // Header names are case-insensitive (RFC 9110 5.1): `Cookie` and `cookie` are one header.
    const key = name.toLowerCase();
    const lines = read(value);
    const before = byName.has(key) ? byName.get(key) : [];
    byName.set(key, before && lines ? [...before, ...lines] : undefined);
  }
  return byName;
}

type Get = (url: string | URL, init?: { headers?: Record<string, string> }) => Promise<Response>;
type Add = (id: LeakId, status: CheckStatus, message: string, fix?: string) => void;

/** A marker no other request carries. */
export const randomMarker = () => {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `bbc-doctor-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
};

/**
 * Sends one marked request through the front to the dynamic script and asks the collector
 * (the emulator's) what it received: each leak a failure naming its fix. A collector without
 * the inspection path, or a marked request that never reached it, is a warning: not checked.
 */
export async function checkForwarded(
  get: Get,
  add: Add,
  options: { page: URL; prefix: string; version: string; collectorUrl: string; cookiePrefix: string },
): Promise<void> {
  const marker = randomMarker();
  const session = `${marker}-session`;
  const token = `${marker}-token`;
  const through = new URL(`${options.page.origin}${options.prefix}/${options.version}/dyn_wdp.js`);
  through.searchParams.set(MARKER_PARAMETER, marker);
  const notChecked = (why: string, fix: string) =>
    add('leak_check', 'warn', `what the front forwards was not checked: ${why}`, fix);
  try {
    const sent = await get(through, {
      headers: {
        cookie: `session=${session}; ${options.cookiePrefix}fpc=${marker}-vendor`,
        authorization: `Bearer ${token}`,
        'x-forwarded-for': SPOOFED_ADDRESS,
      },
    });
    await sent.body?.cancel();
  } catch (error) {
    return notChecked(`the marked request failed (${(error as Error).message})`, 'check that the front answers');
  }
  let received: Map<string, string[] | undefined>;
  try {
    const inspection = new URL(INSPECTION_PATH, options.collectorUrl);
    inspection.searchParams.set('marker', marker);
    const response = await get(inspection);
    const { text } = await readText(response, 64 * 1024);
    if (response.status === 404 && text.includes('"not_seen"'))
      return notChecked(
        'the marked request never reached this collector',
        "give --collector-url the collector the front forwards to (the emulator's)",
      );
    if (!response.ok)
      return notChecked(
        `the collector answered ${response.status} to the inspection request`,
        "point the front at the emulator's collector (blackbox-capture-emulator) and give its address as --collector-url, from the same machine",
      );
    const parsed = JSON.parse(text) as { headers?: unknown } | null;
    if (typeof parsed?.headers !== 'object' || parsed.headers === null || Array.isArray(parsed.headers))
      throw new Error('its answer names no headers');
    received = inspectedHeaders(parsed.headers as Record<string, unknown>);
  } catch (error) {
    return notChecked(`the collector could not be asked (${(error as Error).message})`, 'check --collector-url');
  }

  /**
   * Runs `leaked` on the header's lines (none when it is absent), unless the collector holds
   * them in a shape the doctor cannot read: then the finding says it could not decide, since
   * a pass would vouch for what was never read.
   */
  const judge = (id: LeakId, name: string, leaked: (lines: string[]) => boolean, verdicts: Verdicts) => {
    const lines = received.has(name) ? received.get(name) : [];
    if (lines === undefined)
      return add(
        id,
        'warn',
        `not checked: the collector's answer holds ${name} in a shape the doctor cannot read (not text, a number or a list of them)`,
        "give --collector-url the emulator's collector (blackbox-capture-emulator), whose answer the doctor reads",
      );
    if (leaked(lines)) add(id, 'fail', verdicts.fail(lines), verdicts.fix);
    else add(id, 'pass', verdicts.pass);
  };
  judge('leak_cookies', 'cookie', (lines) => lines.some((line) => line.includes(session)), {
    fail: () => "the shop's session cookie reached the vendor's collector",
    fix: `forward only the vendor's cookies (${options.cookiePrefix}<name>, renamed to <name>) and drop the rest, as createFirstPartyProxy does (nginx: proxy_set_header Cookie ""); ${NEXT_FIX}`,
    pass: "the shop's cookies did not reach the collector",
  });
  judge('leak_auth', 'authorization', (lines) => lines.some((line) => line.includes(token)), {
    fail: () => 'the Authorization header reached the collector',
    fix: `drop Authorization (nginx: proxy_set_header Authorization ""); ${NEXT_FIX}`,
    pass: 'Authorization did not reach the collector',
  });
  // Each line of X-Forwarded-For is a list of its own: the claimed address anywhere in any of them.
  const addresses = (lines: string[]) => lines.flatMap((line) => line.split(',')).map((address) => address.trim());
  judge('leak_address', 'x-forwarded-for', (lines) => addresses(lines).includes(SPOOFED_ADDRESS), {
    fail: (lines) =>
      `the collector got the address the client claimed (X-Forwarded-For: ${lines.join(', ').slice(0, 200)})`,
    fix: `set X-Forwarded-For from the peer address, never from the client's header (createFirstPartyProxy without trustProxy; nginx: proxy_set_header X-Forwarded-For $remote_addr; a load balancer in front must replace the header, not append to it); ${NEXT_FIX}`,
    pass: `the client's X-Forwarded-For did not reach the collector`,
  });
  const collectorHost = new URL(options.collectorUrl).host;
  if (options.page.host === collectorHost)
    add(
      'leak_host',
      'warn',
      `not checked: the page and the collector share the host ${collectorHost}`,
      'run the collector on a host or port of its own',
    );
  else
    judge('leak_host', 'host', (lines) => lines.includes(options.page.host), {
      fail: () => `the collector got the shop's Host (${options.page.host})`,
      fix: `send the collector's own host (nginx: proxy_pass sets it; pass the shop's host as X-Forwarded-Host); ${NEXT_FIX}`,
      pass: "the shop's Host did not reach the collector",
    });
}

/** What a leak check says when it fails, how to fix it, and what it says when it passes. */
interface Verdicts {
  fail: (lines: string[]) => string;
  fix: string;
  pass: string;
}
