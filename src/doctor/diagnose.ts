/**
 * `blackbox-capture/diagnose`: the doctor's checks from inside the page, plus what only
 * the page knows (the CSP violations it saw, Trusted Types enforcement and whether the
 * package's policy name is allowed, the loader tags in the live DOM, a loader that already
 * ran, the vendor's host reachable or blocked). A separate entry: never in the main bundle.
 * Import it while you investigate (the playground of the demo shows its report).
 */
import { DEFAULT_URI_HOOK } from '../shared/constants.js';
import {
  policies,
  runDoctor,
  type CheckStatus,
  type DoctorOptions,
  type DoctorReport,
  type Finding,
} from './doctor.js';
import { readMarkup } from './html.js';

export type { CheckStatus, DoctorReport, Finding } from './doctor.js';

export interface DiagnoseOptions extends Omit<DoctorOptions, 'fetch'> {
  /** The config object's name, when not `IGLOO` or the page's `io_global_object_name`. */
  globalName?: string;
}

/** The Trusted Types policy name the package writes the loader tag through. */
const POLICY = 'blackbox-capture';

interface Violation {
  blockedURL: string;
  effectiveDirective: string;
}

/** Violations this page reported, buffered since it loaded (Chromium), and any seen while diagnosing. */
async function violations(): Promise<Violation[] | undefined> {
  type Report = { body: Violation & { blockedURI?: string } };
  const Observer = (
    globalThis as unknown as {
      ReportingObserver?: new (
        callback: (reports: Report[]) => void,
        options: object,
      ) => { observe(): void; takeRecords(): Report[]; disconnect(): void };
    }
  ).ReportingObserver;
  if (!Observer) return undefined;
  const reports: Report[] = [];
  const observer = new Observer((batch) => reports.push(...batch), { types: ['csp-violation'], buffered: true });
  observer.observe();
  // The buffered reports come to the callback in a task of their own.
  await new Promise((resolve) => setTimeout(resolve, 200));
  reports.push(...observer.takeRecords());
  observer.disconnect();
  return reports.map((r) => ({
    blockedURL: r.body.blockedURL ?? r.body.blockedURI ?? '',
    effectiveDirective: r.body.effectiveDirective ?? '',
  }));
}

export async function diagnose(options: DiagnoseOptions = {}): Promise<DoctorReport> {
  // No collectorUrl: a page can neither set the marked Cookie header of the leak check nor read Set-Cookie.
  const { collectorUrl: _ignored, ...pageOptions } = options;
  const report = await runDoctor(location.href, {
    ...pageOptions,
    fetch: (input, init) => fetch(input, { ...init, cache: 'no-store' }),
  });
  const name = options.globalName ?? (window as { io_global_object_name?: string }).io_global_object_name ?? 'IGLOO';
  const config = (
    window as unknown as Record<string, { loader?: Record<string, unknown> & { loaderVer?: string } } | undefined>
  )[name];
  const loader = config?.loader;
  // A page cannot read Set-Cookie (a forbidden header): that check is the command's (npx blackbox-capture
  // doctor). The loader tags are counted in the live DOM below, where tags added by scripts show too.
  const findings: Finding[] = report.findings.filter((f) => f.id !== 'set_cookie' && f.id !== 'loader_tag_once');
  // A loader on another origin without CORS cannot be read by the page; the page ran it, which says more.
  for (const finding of findings) {
    if (
      finding.id === 'loader_script' &&
      finding.status === 'fail' &&
      / could not be fetched /.test(finding.message) &&
      loader?.loaderMain
    ) {
      Object.assign(finding, {
        status: 'pass',
        message: `${finding.message.split(' could not')[0]} is not readable from the page (no CORS), and it ran: version ${String(loader.loaderVer ?? 'unknown')}`,
        fix: '',
      });
    }
  }
  const add = (id: Finding['id'], status: CheckStatus, message: string, fix = '') =>
    findings.push({ id, status, message, fix });
  const prefix = (options.prefix ?? DEFAULT_URI_HOOK).replace(/\/+$/, '');
  const thirdParty = new URL(options.thirdPartyHost ?? 'https://mpsnare.iesnare.com').origin;

  // The live DOM: tags added by scripts too, which the page's HTML does not show.
  const loaderHref = options.loaderUrl && new URL(options.loaderUrl, document.baseURI).href;
  const loaderTags = Array.from(document.scripts).filter(
    (s) =>
      s.src &&
      (s.src === loaderHref || /(^|\/)(loader(_only)?|iovation|snare)[\w.-]*\.js(\?|$)/i.test(new URL(s.src).pathname)),
  );
  if (loaderTags.length > 1)
    add(
      'loader_tags_live',
      'fail',
      `${loaderTags.length} loader tags in the page (${loaderTags.map((s) => s.src).join(', ')})`,
      'keep one: with the package, drop your own loader tag or pass inject: false to adopt it',
    );
  else add('loader_tags_live', 'pass', `${loaderTags.length} loader tag in the page`);

  // CSP violations the page already met, for the vendor's scripts and hosts.
  const seen = await violations();
  if (!seen)
    add(
      'csp_violations',
      'warn',
      'this browser cannot list past CSP violations (no ReportingObserver)',
      'run diagnose() in Chromium',
    );
  else {
    const ours = seen.filter(({ blockedURL, effectiveDirective }) => {
      if (/trusted-types/.test(effectiveDirective)) return true;
      try {
        const url = new URL(blockedURL, document.baseURI);
        return (
          url.origin === thirdParty ||
          (url.origin === location.origin && url.pathname.startsWith(prefix + '/')) ||
          (!!loaderHref && url.href.split('?')[0] === loaderHref.split('?')[0])
        );
      } catch {
        return false;
      }
    });
    if (ours.length)
      add(
        'csp_violations',
        'fail',
        `the page's CSP blocked: ${ours.map((v) => `${v.blockedURL || '(inline)'} (${v.effectiveDirective})`).join(', ')}`,
        `allow them: script-src 'self' <loader origin> ${thirdParty} (or a nonce with 'strict-dynamic'), connect-src 'self' ${thirdParty}`,
      );
    else
      add(
        'csp_violations',
        'pass',
        `no CSP violation for the loader, ${prefix}/ or ${thirdParty}${seen.length ? ` (${seen.length} for other resources)` : ''}`,
      );
  }

  // Trusted Types: enforced by a policy of the page's header or meta tags, and our name allowed.
  const response = await fetch(location.href, { method: 'HEAD', cache: 'no-store' }).catch(() => undefined);
  const html = Array.from(document.querySelectorAll('meta[http-equiv]'), (meta) => meta.outerHTML).join('');
  const csp = policies(response?.headers ?? new Headers(), readMarkup(html).metaPolicies);
  const enforced = csp.some((policy) => (policy.get('require-trusted-types-for') ?? []).includes("'script'"));
  const named = csp.filter((policy) => policy.has('trusted-types'));
  const allowed = named.every((policy) => policy.get('trusted-types')!.some((n) => n === POLICY || n === '*'));
  if (!enforced) add('trusted_types', 'pass', 'Trusted Types are not enforced');
  else if (allowed) add('trusted_types', 'pass', `Trusted Types are enforced and the "${POLICY}" policy is allowed`);
  else
    add(
      'trusted_types',
      'fail',
      `Trusted Types are enforced and the trusted-types directive does not allow "${POLICY}"`,
      `add ${POLICY} to the trusted-types directive: the package writes the loader tag's URL through that policy`,
    );

  // The loader's own state.
  if (loader?.loaderMain)
    add('loader_run', 'pass', `the loader ran (${String(loader.loaderVer ?? 'version unknown')}) on window.${name}`);
  else add('loader_run', 'pass', `the loader has not run on window.${name} yet`);

  // The vendor's host from this page: an opaque answer is reachable; a network error is blocked.
  const reached = await fetch(`${thirdParty}/`, {
    mode: 'no-cors',
    cache: 'no-store',
    credentials: 'omit',
    signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
  }).then(
    () => true,
    () => false,
  );
  if (reached) add('third_party_reachable', 'pass', `${thirdParty} is reachable from this page`);
  else
    add(
      'third_party_reachable',
      'warn',
      `${thirdParty} is blocked from this page (an ad blocker, a CSP connect-src, or the network)`,
      "a blocker is the customer's choice (the capture goes on first party); a CSP is yours to fix",
    );

  return { ...report, ok: findings.every((f) => f.status !== 'fail'), findings };
}
