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
 * HTML is read by a tokenizer (html.ts), in time linear in its size.
 */
import { readMarkup } from './html.js';
import { literalAddress, nonPublicRange } from './addresses.js';

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
    | 'third_party_reachable';
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
  /** The collector the proxy forwards to: with it, cookies it sets are looked for in the proxy's answer. */
  collectorUrl?: string;
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
  lookup?: (hostname: string) => Promise<string[]>;
}

const JAVASCRIPT = /^(text|application)\/(x-)?(javascript|ecmascript)\b/i;

/** Requests one doctor run makes at most, redirects included. */
export const MAX_REQUESTS = 12;
/** Redirects followed per request, each within the origin asked for. */
const MAX_REDIRECTS = 3;
/** Bytes read of a script's answer: enough to tell a script from an HTML page. */
const MAX_SCRIPT_BYTES = 256 * 1024;

/** The policies of the Content-Security-Policy headers and `<meta http-equiv>` tags: each a map of directive to sources. */
export function policies(headers: Headers, metaPolicies: readonly string[]): Array<Map<string, string[]>> {
  const texts = [
    ...(headers.get('content-security-policy') ?? '').split(',').filter((text) => text.trim()),
    ...metaPolicies,
  ];
  return texts.map((text) => {
    const policy = new Map<string, string[]>();
    for (const directive of text.split(';')) {
      const [name, ...sources] = directive.trim().split(/\s+/);
      if (name && !policy.has(name.toLowerCase())) policy.set(name.toLowerCase(), sources);
    }
    return policy;
  });
}

/** Reads at most `limit` bytes of a body as text; `cut` when there was more. Exported for its tests. */
export async function readText(response: Response, limit: number): Promise<{ text: string; cut: boolean }> {
  if (!response.body) return { text: '', cut: false };
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { text: text + decoder.decode(), cut: false };
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return { text: text + decoder.decode(value.subarray(0, value.byteLength - (size - limit))), cut: true };
    }
    text += decoder.decode(value, { stream: true });
  }
}

/** A POST the doctor sends: a body and its headers. */
interface Post {
  headers?: Record<string, string>;
  body?: string;
}

/**
 * The addresses `hostname` names: an IP address itself, `localhost` and its subdomains loopback
 * (RFC 6761), a name what `lookup` answers within `timeoutMs`; undefined for a name without a lookup.
 */
async function addressesOf(
  hostname: string,
  lookup: DoctorOptions['lookup'],
  timeoutMs: number,
): Promise<string[] | undefined> {
  const literal = literalAddress(hostname);
  if (literal) return [literal];
  if (/(^|\.)localhost\.?$/i.test(hostname)) return ['127.0.0.1'];
  if (!lookup) return undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      lookup(hostname),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What the doctor may fetch for `page`: throws, before any request, for a URL whose host is or
 * resolves to a non-public address (every address of the name is checked), or cannot be
 * resolved. A page on such an address itself (a local dev server) lifts the rule: its loader
 * and scripts are local too. Exported for its tests.
 */
export async function addressRule(
  page: URL,
  lookup: DoctorOptions['lookup'],
  timeoutMs: number,
): Promise<(url: URL) => Promise<void>> {
  const pageAddresses = await addressesOf(page.hostname, lookup, timeoutMs).catch(() => undefined);
  if (pageAddresses?.length && pageAddresses.every((address) => nonPublicRange(address) !== undefined))
    return async () => {};
  return async (url) => {
    let addresses: string[] | undefined;
    try {
      addresses = await addressesOf(url.hostname, lookup, timeoutMs);
    } catch (error) {
      throw new Error(`not fetched: ${url.hostname} could not be resolved (${(error as Error).message})`, {
        cause: error,
      });
    }
    if (addresses?.length === 0) throw new Error(`not fetched: ${url.hostname} resolves to no address`);
    for (const address of addresses ?? []) {
      const range = nonPublicRange(address);
      if (range === undefined) continue;
      const what = literalAddress(url.hostname) ? address : `${url.hostname} resolves to ${address}, which`;
      throw new Error(
        `not fetched: ${what} is ${range}; the doctor fetches no such address for a page on a public one`,
      );
    }
  };
}

/**
 * The doctor's requests: at most MAX_REQUESTS a run, redirected only within the origin each was
 * asked for, each URL (a redirect's too) passed by `allowed` first. Exported for its tests.
 */
export function boundedFetch(
  doFetch: typeof fetch,
  timeoutMs: number,
  allowed: (url: URL) => Promise<void> = async () => {},
) {
  let made = 0;
  return async (url: string | URL, init: Post = {}): Promise<Response> => {
    let target = new URL(url);
    for (let redirects = 0; ; redirects++) {
      if (made >= MAX_REQUESTS) throw new Error(`not fetched: the doctor makes at most ${MAX_REQUESTS} requests`);
      await allowed(target);
      made++;
      const response = await doFetch(target, {
        method: init.body === undefined ? 'GET' : 'POST',
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
        headers: { 'user-agent': 'Mozilla/5.0 (blackbox-capture doctor)', ...init.headers },
        ...(init.body === undefined ? {} : { body: init.body }),
      });
      const location = response.headers.get('location');
      // A POST's redirect is its answer: following it would send the body elsewhere.
      if (response.status < 300 || response.status > 399 || location === null || init.body !== undefined)
        return response;
      await response.body?.cancel();
      const next = new URL(location, target);
      if (next.origin !== target.origin) throw new Error(`redirected to another origin (${next.origin}), not followed`);
      if (redirects >= MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`);
      target = next;
    }
  };
}

/** Whether a source list lets `origin` load (the parts of CSP matching a checkout needs). Exported for its tests. */
export function allows(sources: string[], origin: string, pageOrigin: string): boolean {
  const lower = sources.map((s) => s.toLowerCase());
  if (lower.includes("'none'")) return false;
  if (lower.includes('*') && /^https?:/.test(origin)) return true;
  if (origin === pageOrigin && lower.includes("'self'")) return true;
  const url = new URL(origin);
  return lower.some((source) => {
    if (source === `${url.protocol}`) return true;
    const match = /^(?:(https?):\/\/)?(\*\.)?([^/:]+)(?::(\d+|\*))?\/?$/.exec(source);
    if (!match || source.startsWith("'")) return false;
    const [, scheme, wildcard, host, port] = match;
    if (scheme && scheme + ':' !== url.protocol && !(scheme === 'http' && url.protocol === 'https:')) return false;
    if (wildcard ? !url.hostname.endsWith('.' + host) : url.hostname !== host) return false;
    // No port in the source: the scheme's default port only (URL leaves a default port empty).
    if (port === undefined) return url.port === '';
    return port === '*' || port === (url.port || (url.protocol === 'https:' ? '443' : '80'));
  });
}

export async function runDoctor(pageUrl: string, options: DoctorOptions = {}): Promise<DoctorReport> {
  const doFetch = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const prefix = (options.prefix ?? '/iojs').replace(/\/+$/, '');
  const version = options.version ?? 'general5';
  const thirdParty = new URL(options.thirdPartyHost ?? 'https://mpsnare.iesnare.com').origin;
  const page = new URL(pageUrl);
  const findings: Finding[] = [];
  const add = (id: Finding['id'], status: CheckStatus, message: string, fix = '') =>
    findings.push({ id, status, message, fix });
  const get = boundedFetch(doFetch, timeoutMs, await addressRule(page, options.lookup, timeoutMs));
  const maxPageBytes = options.maxPageBytes ?? 2 * 1024 * 1024;

  let html = '';
  let pageHeaders = new Headers();
  try {
    const response = await get(page);
    const read = await readText(response, maxPageBytes);
    html = read.text;
    pageHeaders = response.headers;
    if (response.ok && /html/i.test(response.headers.get('content-type') ?? '')) {
      if (read.cut)
        add(
          'page',
          'warn',
          `the page is larger than ${maxPageBytes} bytes: only its start was read`,
          'check a smaller page of the checkout, or raise maxPageBytes',
        );
      else add('page', 'pass', `the page answered ${response.status} with HTML`);
    } else
      add(
        'page',
        'fail',
        `the page answered ${response.status} ${response.headers.get('content-type') ?? 'without a content type'}`,
        'give the URL of the checkout page itself',
      );
  } catch (error) {
    add(
      'page',
      'fail',
      `the page could not be fetched (${(error as Error).message})`,
      'check the URL and that this machine can reach it',
    );
  }

  // Loader tags: the page's own (a src naming a loader) and this package's script tag, which injects one unless data-inject="false".
  const markup = readMarkup(html);
  const tags = markup.scripts;
  // A script tag with data-loader-url, or the <blackbox-capture> element with loader-url:
  // each injects the loader unless told not to (data-inject="false", inject="false").
  const declarative = [
    ...tags
      .filter((t) => t['data-loader-url'] !== undefined)
      .map((t) => ({ loaderUrl: t['data-loader-url'], inject: t['data-inject'], postUrl: t['data-post-url'] })),
    ...markup.elements.map((e) => ({ loaderUrl: e['loader-url'], inject: e.inject, postUrl: e['post-url'] })),
  ];
  const resolve = (src: string) => {
    try {
      const url = new URL(src, page);
      return /^https?:$/.test(url.protocol) ? url.href : undefined;
    } catch {
      return undefined;
    }
  };
  const named = (values: Array<string | undefined>) =>
    values.map((v) => (v === undefined ? undefined : resolve(v))).filter((v): v is string => v !== undefined);
  const loaderUrls = new Set([...named([options.loaderUrl]), ...named(declarative.map((t) => t.loaderUrl))]);
  const ownTags = tags.filter(
    (t) =>
      t.src &&
      (loaderUrls.has(resolve(t.src) ?? '') || /(^|\/)(loader(_only)?|iovation|snare)[\w.-]*\.js(\?|$)/i.test(t.src)),
  );
  for (const url of named(ownTags.map((t) => t.src))) loaderUrls.add(url);
  const runs = ownTags.length + declarative.filter((t) => t.inject !== 'false').length;
  if (runs > 1) {
    add(
      'loader_tag_once',
      'fail',
      `the page would run the loader ${runs} times (${ownTags.length} loader tag(s), ${declarative.length} blackbox-capture tag(s) or element(s))`,
      'keep one: the loader runs once per page; with the package, drop your own loader tag, or set data-inject="false" to adopt it',
    );
  } else if (runs === 1) add('loader_tag_once', 'pass', 'one loader tag');
  else
    add(
      'loader_tag_once',
      'warn',
      'no loader tag in the HTML',
      options.loaderUrl === undefined
        ? 'fine when your bundle calls captureBlackbox; give --loader-url to check the loader'
        : 'fine when your bundle calls captureBlackbox (the loader checked is the one --loader-url gives)',
    );

  // The loader answers JavaScript. One loader, the one given or the page's first: a page that
  // names more fails loader_tag_once, and the doctor is no way to send a page's URLs anywhere.
  if (loaderUrls.size === 0) add('loader_script', 'warn', 'no loader URL found', 'give --loader-url');
  const checked =
    options.loaderUrl !== undefined && resolve(options.loaderUrl) ? resolve(options.loaderUrl)! : [...loaderUrls][0];
  if (loaderUrls.size > 1)
    add(
      'loader_script',
      'warn',
      `the page names ${loaderUrls.size} loader URLs; only ${checked} was fetched`,
      'keep one loader URL; give --loader-url to choose the one checked',
    );
  for (const loader of checked === undefined ? [] : [checked]) {
    try {
      const response = await get(loader);
      await response.body?.cancel();
      const type = response.headers.get('content-type') ?? '';
      if (response.ok && JAVASCRIPT.test(type)) add('loader_script', 'pass', `${loader} answered JavaScript`);
      else
        add(
          'loader_script',
          'fail',
          `${loader} answered ${response.status} ${type || 'without a content type'}`,
          'point loaderUrl at the vendor loader file your account manager gave you, served as JavaScript',
        );
    } catch (error) {
      add(
        'loader_script',
        'fail',
        `${loader} could not be fetched (${(error as Error).message})`,
        'check the loader URL',
      );
    }
  }

  // CSP: the loader's origin, the first-party scripts (this origin) and the vendor's host.
  const csp = policies(pageHeaders, markup.metaPolicies);
  const loaderOrigins = [...new Set([...loaderUrls].map((loader) => new URL(loader).origin))]
    .filter((origin) => origin !== page.origin)
    .join(' ');
  const problems: string[] = [];
  for (const policy of csp) {
    const scriptSources = policy.get('script-src-elem') ?? policy.get('script-src') ?? policy.get('default-src');
    if (scriptSources) {
      const strictDynamic = scriptSources.some((s) => s.toLowerCase() === "'strict-dynamic'");
      if (strictDynamic) {
        const nonces = scriptSources.filter((s) => /^'nonce-/i.test(s)).map((s) => s.slice(7, -1));
        const nonced = tags.some((t) => t.nonce !== undefined && nonces.includes(t.nonce));
        if (!nonced)
          problems.push(
            "script-src has 'strict-dynamic' but no page script carries its nonce: nothing can load the loader",
          );
      } else {
        for (const loader of loaderUrls)
          if (!allows(scriptSources, new URL(loader).origin, page.origin))
            problems.push(`script-src does not allow the loader's origin ${new URL(loader).origin}`);
        if (!allows(scriptSources, page.origin, page.origin))
          problems.push(`script-src does not allow this origin, where ${prefix}/ serves the first-party scripts`);
        if (!allows(scriptSources, thirdParty, page.origin))
          problems.push(`script-src does not allow the vendor's host ${thirdParty}`);
      }
    }
    const connectSources = policy.get('connect-src') ?? policy.get('default-src');
    if (connectSources && !allows(connectSources, thirdParty, page.origin))
      problems.push(`connect-src does not allow the vendor's host ${thirdParty}`);
  }
  if (csp.length === 0) add('csp', 'pass', 'no Content-Security-Policy: nothing blocks the loader');
  else if (problems.length === 0)
    add('csp', 'pass', 'the Content-Security-Policy allows the loader, the first-party scripts and the vendor host');
  else
    add(
      'csp',
      'fail',
      problems.join('; '),
      `allow them: script-src 'self' ${loaderOrigins || '<loader origin>'} ${thirdParty} (or a nonce with 'strict-dynamic' on the tag that loads the package), connect-src 'self' ${thirdParty}`,
    );

  // The first-party scripts through the proxy.
  const base = `${page.origin}${prefix}/${version}`;
  /** The dynamic script's answer, when it was the script: the cache and cookie checks read it. */
  let dyn: Response | undefined;
  for (const [id, file] of [
    ['static_script', 'static_wdp.js'],
    ['dyn_script', 'dyn_wdp.js'],
  ] as const) {
    const url = `${base}/${file}`;
    try {
      const response = await get(url);
      const type = response.headers.get('content-type') ?? '';
      const { text: body } = await readText(response, MAX_SCRIPT_BYTES);
      if (response.status === 404 && /^\s*\{"error":\{"code":"not_found"\}\}\s*$/.test(body)) {
        // The kit's own proxy answered, for a path without its prefix: something before it took the prefix off.
        add(
          id,
          'fail',
          `${url} answered 404 from the kit's proxy, which got a path without "${prefix}"`,
          `mount the proxy on the full path, as Express's app.all('${prefix}/*splat', toNodeHandler(iojs)): app.use('${prefix}', …) strips "${prefix}" before the proxy sees it; or give createFirstPartyProxy the prefix the page uses`,
        );
      } else if (response.status === 404) {
        add(
          id,
          'fail',
          `${url} answered 404`,
          `the proxy must strip "${prefix}" before forwarding (nginx: proxy_pass with a trailing slash), or no proxy route exists for ${prefix}/`,
        );
      } else if (/html/i.test(type) || /^\s*</.test(body)) {
        add(
          id,
          'fail',
          `${url} answered HTML (${response.status}): the site's fallback page, not the script`,
          `route ${prefix}/ to the vendor's first-party host before the SPA fallback (createFirstPartyProxy, or the shipped nginx location)`,
        );
      } else if (!response.ok || !JAVASCRIPT.test(type)) {
        add(
          id,
          'fail',
          `${url} answered ${response.status} ${type || 'without a content type'}`,
          "pass the collector's Content-Type back unchanged",
        );
      } else {
        add(id, 'pass', `${url} answered JavaScript`);
        if (id === 'dyn_script') dyn = response;
      }
    } catch (error) {
      add(
        id,
        'fail',
        `${url} could not be fetched (${(error as Error).message})`,
        `route ${prefix}/ to the vendor's first-party host`,
      );
    }
  }

  // The dynamic script embeds per-request values: never from a cache.
  if (dyn) {
    const cacheControl = dyn.headers.get('cache-control') ?? '';
    const age = dyn.headers.get('age');
    if (age !== null)
      add(
        'dyn_not_cached',
        'fail',
        `dyn_wdp.js came from a cache (Age: ${age})`,
        'exclude dyn_wdp.js from every cache and CDN: Cache-Control: no-store, private',
      );
    else if (!/\bno-store\b/i.test(cacheControl))
      add(
        'dyn_not_cached',
        'fail',
        `dyn_wdp.js may be cached (Cache-Control: ${cacheControl || 'none'})`,
        'answer dyn_wdp.js with Cache-Control: no-store, private (createFirstPartyProxy does)',
      );
    else add('dyn_not_cached', 'pass', 'dyn_wdp.js is no-store and came from no cache');

    // Cookies: the proxy must pass the collector's back.
    const proxied = dyn.headers.getSetCookie();
    if (options.collectorUrl) {
      try {
        const direct = await get(new URL(`${version}/dyn_wdp.js`, options.collectorUrl.replace(/\/?$/, '/')));
        await direct.body?.cancel();
        const sent = direct.headers.getSetCookie();
        // A warning, not a failure: collection works without the device cookie, with less continuity between visits.
        if (sent.length > 0 && proxied.length === 0)
          add(
            'set_cookie',
            'warn',
            `the collector sets ${sent.length} cookie(s); none came through the proxy`,
            'pass Set-Cookie back: createFirstPartyProxy does, in its own namespace (the shipped nginx configuration drops cookies on purpose: nginx cannot namespace them)',
          );
        else
          add('set_cookie', 'pass', `${proxied.length} cookie(s) through the proxy, ${sent.length} from the collector`);
      } catch (error) {
        add(
          'set_cookie',
          'warn',
          `the collector could not be fetched (${(error as Error).message})`,
          'check --collector-url',
        );
      }
    } else if (proxied.length > 0) add('set_cookie', 'pass', `${proxied.length} cookie(s) through the proxy`);
    else
      add(
        'set_cookie',
        'warn',
        "no Set-Cookie in the proxy's answer",
        "give --collector-url to compare with the collector's own answer",
      );
  }

  await checkPostEndpoint(named(declarative.map((t) => t.postUrl)), page, get, add);

  return { url: page.href, ok: findings.every((f) => f.status !== 'fail'), findings };
}

/**
 * The endpoint the page posts the blackbox to (`data-post-url`, `post-url`): sent an empty
 * JSON object from the page's origin, the kit's endpoint answers 400 before anything else
 * runs (no customer look-up, no call to the service). Only an endpoint on the page's own
 * origin is tried, once: the doctor sends nothing to a host a page names elsewhere.
 */
async function checkPostEndpoint(
  postUrls: string[],
  page: URL,
  get: (url: string | URL, init?: Post) => Promise<Response>,
  add: (id: 'post_endpoint', status: CheckStatus, message: string, fix?: string) => void,
): Promise<void> {
  const endpoint = postUrls[0];
  if (endpoint === undefined) return;
  if (new URL(endpoint).origin !== page.origin) {
    add(
      'post_endpoint',
      'warn',
      `the page posts to ${endpoint}, on another origin: not checked`,
      'post to your own origin',
    );
    return;
  }
  try {
    const response = await get(endpoint, {
      headers: { origin: page.origin, 'content-type': 'application/json' },
      body: '{}',
    });
    const type = response.headers.get('content-type') ?? '';
    const { text } = await readText(response, MAX_SCRIPT_BYTES);
    const code = /json/i.test(type) ? /"code"\s*:\s*"([\w-]+)"/.exec(text)?.[1] : undefined;
    if (response.status === 404 || response.status === 405)
      add(
        'post_endpoint',
        'fail',
        `${endpoint} answered ${response.status} to a POST: no endpoint there`,
        'mount the endpoint at the URL the page posts to (Express: app.post(path, toNodeHandler(deviceRisk))), or fix data-post-url / post-url',
      );
    else if (/html/i.test(type))
      add(
        'post_endpoint',
        'fail',
        `${endpoint} answered HTML (${response.status}) to a POST: the site's fallback page, not the endpoint`,
        'route the POST to createDeviceRiskHandler before the fallback page',
      );
    else if (response.status === 403 && code === 'origin_not_allowed')
      add(
        'post_endpoint',
        'fail',
        `${endpoint} refuses this page's origin ${page.origin} (403 origin_not_allowed)`,
        `add ${page.origin} to allowedOrigins`,
      );
    else if (response.status >= 400 && response.status < 500 && code)
      add('post_endpoint', 'pass', `${endpoint} answers POST (${response.status} ${code} to an empty body)`);
    else
      add(
        'post_endpoint',
        'warn',
        `${endpoint} answered ${response.status} ${type || 'without a content type'} to an empty body`,
        'check that createDeviceRiskHandler answers at this URL',
      );
  } catch (error) {
    add(
      'post_endpoint',
      'fail',
      `${endpoint} could not be reached (${(error as Error).message})`,
      'check the endpoint URL',
    );
  }
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
