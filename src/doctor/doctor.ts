/**
 * The integration doctor: fetches a checkout page and the first-party scripts behind it,
 * and checks what integrators lose days on: the two classic proxy bugs (prefix not
 * stripped: 404; proxy missing: the SPA fallback answers HTML), a cached dynamic script,
 * cookies dropped by the proxy, a CSP that blocks the loader or the vendor's host, a loader
 * URL that is no script, and a second loader tag. Node, no browser: it reads what the
 * server sends. Each finding names its fix.
 *
 * A page is untrusted input: the doctor fetches only what an integration needs (the page,
 * one loader, and the first-party scripts under the prefix on the page's own origin; the
 * collector only when named), at most `MAX_REQUESTS` requests, each body read up to a cap,
 * and a redirect only within the origin it was asked for. For a page on a public address, no
 * URL is fetched whose host is or resolves to a loopback, private, link-local or metadata
 * address (addresses.ts): a page cannot point the doctor into the network it runs in. The
 * HTML is read by a tokenizer (html.ts), in time linear in its size. Each check is a module of
 * checks/ (page, loader, csp, scripts, cookies, refusals, endpoint); leaks.ts asks the emulator's
 * collector what a marked request carried; fetching.ts bounds every request.
 */
import { DEFAULT_URI_HOOK } from '../shared/constants.js';
import { checkCookies } from './checks/cookies.js';
import { checkCsp } from './checks/csp.js';
import { checkPostEndpoint } from './checks/endpoint.js';
import { checkLoaderScript, checkLoaderTags, findLoaders } from './checks/loader.js';
import { checkPage } from './checks/page.js';
import { checkRefusals, type RefusalId } from './checks/refusals.js';
import { checkDynamicNotCached, checkFirstPartyScripts } from './checks/scripts.js';
import { addressRule, boundedFetch, type Lookup } from './fetching.js';
import { checkForwarded, type LeakId } from './leaks.js';

export { allows, policies } from './checks/csp.js';
export { boundedFetch, MAX_REQUESTS, readText } from './fetching.js';

export type CheckStatus = 'pass' | 'warn' | 'fail';

export interface Finding {
  /** The doctor's checks, and (diagnose() in the page only) `loader_tags_live`, `csp_violations`, `trusted_types`, `loader_run`, `third_party_reachable`. */
  id:
    | 'page'
    | 'loader_tag_once'
    | 'loader_script'
    | 'csp'
    | 'static_script'
    | 'dyn_script'
    | 'dyn_not_cached'
    | 'set_cookie'
    | 'post_endpoint'
    | 'loader_tags_live'
    | 'csp_violations'
    | 'trusted_types'
    | 'loader_run'
    | 'third_party_reachable'
    | LeakId
    | RefusalId;
  status: CheckStatus;
  /** What was seen. */
  message: string;
  /** What to change; empty on a pass. */
  fix: string;
}

export interface DoctorReport {
  url: string;
  ok: boolean;
  findings: Finding[];
}

export interface DoctorOptions {
  /** The first-party prefix on the page's origin (`uriHook`). Default `/iojs`. */
  prefix?: string;
  /** `loader.version`, the path part before the script names. Default `general5`. */
  version?: string;
  /** The loader URL, when the page's HTML does not name it (a bundle calls captureBlackbox). */
  loaderUrl?: string;
  /** The vendor's third-party host the CSP must allow. Default `https://mpsnare.iesnare.com`. */
  thirdPartyHost?: string;
  /**
   * The collector the proxy forwards to: with it, cookies it sets are looked for in the proxy's
   * answer, and, the emulator's collector, asked what a marked request through the front carried (leaks.ts).
   */
  collectorUrl?: string;
  /** The proxy's namespace for the vendor's cookies (`cookiePrefix`). Default `bbc_`. */
  cookiePrefix?: string;
  /** Per request, in ms. Default 10000. */
  timeoutMs?: number;
  /** Largest page read, in bytes; the rest is not read. Default 2 MiB. */
  maxPageBytes?: number;
  fetch?: typeof fetch;
  /**
   * Every address of a host name (the command passes node:dns's lookup). With it, the doctor
   * fetches no URL whose name resolves to a loopback, private, link-local or other non-public
   * address, unless the page is on one. Without it only IP addresses and `localhost` are judged.
   */
  lookup?: Lookup;
}

/** Adds a finding to the report. */
export type Add = (id: Finding['id'], status: CheckStatus, message: string, fix?: string) => void;

export async function runDoctor(pageUrl: string, options: DoctorOptions = {}): Promise<DoctorReport> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const prefix = (options.prefix ?? DEFAULT_URI_HOOK).replace(/\/+$/, '');
  const version = options.version ?? 'general5';
  const cookiePrefix = options.cookiePrefix ?? 'bbc_';
  const { collectorUrl, loaderUrl } = options;
  const thirdParty = new URL(options.thirdPartyHost ?? 'https://mpsnare.iesnare.com').origin;
  const page = new URL(pageUrl);
  const findings: Finding[] = [];
  const add: Add = (id, status, message, fix = '') => findings.push({ id, status, message, fix });
  const get = boundedFetch(options.fetch ?? fetch, timeoutMs, await addressRule(page, options.lookup, timeoutMs));

  const { html, pageHeaders } = await checkPage(get, add, page, options.maxPageBytes ?? 2 * 1024 * 1024);
  const loaders = findLoaders(html, page, loaderUrl);
  checkLoaderTags(add, loaders, loaderUrl);
  await checkLoaderScript(get, add, loaders, loaderUrl);
  checkCsp(add, { page, prefix, thirdParty, pageHeaders, loaders });

  // The front: what it answers, then (when it answers the dynamic script) what it passes on.
  const dyn = await checkFirstPartyScripts(get, add, { page, prefix, version });
  if (dyn) {
    checkDynamicNotCached(add, dyn);
    await checkCookies(get, add, dyn, { page, prefix, version, cookiePrefix, collectorUrl });
    if (collectorUrl) {
      await checkForwarded(get, add, { page, prefix, version, collectorUrl, cookiePrefix });
      await checkRefusals(get, add, { page, prefix, version, collectorUrl });
    }
  }

  await checkPostEndpoint(loaders.named(loaders.declarative.map((t) => t.postUrl)), page, get, add);

  return { url: page.href, ok: findings.every((f) => f.status !== 'fail'), findings };
}

/** The report as a table for a terminal: one line per finding, the fix under each that is not a pass. */
export function formatReport(report: DoctorReport): string {
  const lines = [`blackbox-capture doctor: ${report.url}`, ''];
  for (const finding of report.findings) {
    lines.push(`${finding.status.toUpperCase().padEnd(4)}  ${finding.id.padEnd(15)}  ${finding.message}`);
    if (finding.fix && finding.status !== 'pass') lines.push(`${' '.repeat(23)}fix: ${finding.fix}`);
  }
  const count = (status: CheckStatus) => report.findings.filter((f) => f.status === status).length;
  lines.push('', `${count('pass')} pass, ${count('warn')} warn, ${count('fail')} fail`);
  return lines.join('\n');
}
