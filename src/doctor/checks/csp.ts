/**
 * The page's Content-Security-Policy: it must let the loader's origin, this origin (where the
 * prefix serves the first-party scripts) and the vendor's host load scripts, and the vendor's
 * host take connections; with 'strict-dynamic', a page script must carry its nonce.
 */
import type { Add } from '../doctor.js';
import type { LoaderTags } from './loader.js';

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
    // The source's scheme, or https where it says http (its upgrade); the source's scheme is one of the two.
    if (scheme && scheme + ':' !== url.protocol && url.protocol !== 'https:') return false;
    if (wildcard ? !url.hostname.endsWith('.' + host) : url.hostname !== host) return false;
    // No port in the source: the scheme's default port only (URL leaves a default port empty).
    if (port === undefined) return url.port === '';
    return port === '*' || port === (url.port || (url.protocol === 'https:' ? '443' : '80'));
  });
}

/** The csp finding, from the page's headers and meta policies. */
export function checkCsp(
  add: Add,
  context: { page: URL; prefix: string; thirdParty: string; pageHeaders: Headers; loaders: LoaderTags },
): void {
  const { page, prefix, thirdParty, pageHeaders } = context;
  const { markup, loaderUrls } = context.loaders;
  const tags = markup.scripts;
  // The loader's origin, the first-party scripts (this origin) and the vendor's host.
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
        // Stryker disable next-line ConditionalExpression: the nonces are strings, which never include undefined
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
}
