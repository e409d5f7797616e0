/**
 * The doctor's requests, bounded: a page is untrusted input, so the doctor reads each body up
 * to a cap, makes at most `MAX_REQUESTS` requests a run, follows a redirect only within the
 * origin it was asked for, and, for a page on a public address, fetches no URL whose host is
 * or resolves to a loopback, private, link-local or metadata address (addresses.ts).
 */
import { literalAddress, nonPublicRange } from './addresses.js';

/** Every address of a host name (the command passes node:dns's lookup). */
export type Lookup = (hostname: string) => Promise<string[]>;

/**
 * Requests one doctor run makes at most, redirects included: the page, one loader, the two
 * first-party scripts, the collector's own answer, and the front's probes (leaks.ts,
 * checks/refusals.ts), each with its question to the emulator's collector.
 */
export const MAX_REQUESTS = 20;
/** Redirects followed per request, each within the origin asked for. */
const MAX_REDIRECTS = 3;

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
export interface Post {
  headers?: Record<string, string>;
  body?: string;
}

/**
 * The addresses `hostname` names: an IP address itself, `localhost` and its subdomains loopback
 * (RFC 6761), a name what `lookup` answers within `timeoutMs`; undefined for a name without a lookup.
 */
async function addressesOf(
  hostname: string,
  lookup: Lookup | undefined,
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
  lookup: Lookup | undefined,
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

/** The doctor's fetch for one run (boundedFetch's). */
export type Get = ReturnType<typeof boundedFetch>;
